// JSON access whose errors name the file and the JSON path.
#include "kf_catch.hpp"

#include "util/error.hpp"
#include "util/json_reader.hpp"

using namespace kforge;

namespace {
std::string error_of(const std::function<void()>& f)
{
    try {
        f();
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::bad_input);
        return e.what();
    }
    return "";
}
} // namespace

TEST_CASE("a syntax error names the file, line and column", "[util][json]")
{
    std::string message = error_of([] { parse_json_text("{\n  \"a\": [1, 2,\n", "spec.json"); });
    CHECK_THAT(message, Catch::StartsWith("spec.json: invalid JSON") && Catch::Contains("line 3"));
}

TEST_CASE("accessors report the JSON path and what they found", "[util][json]")
{
    Json doc = Json::parse(R"({"args": [{"name": "x", "shape": ["M", 3]}], "count": "7"})");
    JsonReader root(doc, "t.json");
    CHECK(root.at("args").at(0).at("shape").at(1).as_int() == 3);
    CHECK_THAT(error_of([&] { root.at("count").as_int(); }),
               Catch::Equals("t.json: count: expected an integer, found a string (\"7\")"));
    CHECK_THAT(error_of([&] { root.at("args").at(0).at("dtype"); }),
               Catch::Equals("t.json: args[0]: missing required field 'dtype'"));
    CHECK_THAT(error_of([&] { root.at("args").at(3); }), Catch::Contains("args: index 3 is past the end (1 elements)"));
    CHECK_THAT(error_of([&] { root.at("args").at(0).at("shape").at(0).as_int(); }),
               Catch::Contains("args[0].shape[0]: expected an integer"));
}

TEST_CASE("allow_only refuses unknown keys and suggests the closest allowed one", "[util][json]")
{
    Json doc = Json::parse(R"({"nmae": "x"})");
    JsonReader root(doc, "t.json");
    CHECK_THAT(error_of([&] { root.allow_only({"name", "dtype"}); }),
               Catch::Contains("unknown field 'nmae' (did you mean 'name'?)") && Catch::Contains("allowed: name, dtype"));
}
