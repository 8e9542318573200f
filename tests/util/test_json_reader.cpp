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

TEST_CASE("a number that does not fit a double is bad input naming its field", "[util][json][hostile]")
{
    std::string message = error_of([] {
        parse_json_text("{\"args\": [{\"name\": \"x\"}, {\"gen\": {\"std\": 1e400}}]}", "spec.json");
    });
    CHECK_THAT(message, Catch::StartsWith("spec.json: invalid JSON at args[1].gen.std:") &&
                            Catch::Contains("1e400") && Catch::Contains("line 1"));
    std::string digits(5000, '9');
    message = error_of([&] { parse_json_text("{\"shapes\": {\"tests\": [{\"seed\": " + digits + "}]}}", "s.json"); });
    CHECK_THAT(message, Catch::Contains("shapes.tests[0].seed") && Catch::Contains("(5000 characters)"));
    CHECK(message.size() < 300);
}

TEST_CASE("JSON nested past the depth limit is refused before it is built", "[util][json][hostile]")
{
    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    JsonParseFailure failure;
    CHECK_FALSE(try_parse_json(deep, failure));
    CHECK_THAT(failure.message, Catch::Contains("nested more than 128 levels deep"));
    std::string ok = std::string(100, '[') + std::string(100, ']');
    CHECK(try_parse_json(ok, failure));
    // Objects count too, and the path says where the limit was reached.
    std::string objects;
    for (int i = 0; i < 200; ++i)
        objects += "{\"a\":";
    objects += "1" + std::string(200, '}');
    CHECK_FALSE(try_parse_json(objects, failure));
    CHECK_THAT(failure.path, Catch::StartsWith("a.a.a"));
}

TEST_CASE("try_parse_json never throws on garbage", "[util][json][hostile]")
{
    JsonParseFailure failure;
    for (std::string text : {std::string(""), std::string("\xff\xfe"), std::string("{\"a\":"), std::string("[1,]"),
                             std::string("nul"), std::string(1 << 16, '{'), std::string("\"\\ud800\"")}) {
        CHECK_NOTHROW(try_parse_json(text, failure));
        CHECK_FALSE(try_parse_json(text, failure));
    }
}

TEST_CASE("CBOR frames are walked before decoding: depth, truncation and trailing bytes are refused",
          "[util][json][hostile]")
{
    std::string problem;
    Json value = {{"op", "run_variant"}, {"cubin", Json::binary({1, 2, 3})}, {"n", {1, 2.5, -3, nullptr, true}}};
    std::vector<uint8_t> bytes = Json::to_cbor(value);
    std::string frame(bytes.begin(), bytes.end());
    auto decoded = try_parse_cbor(frame, problem);
    REQUIRE(decoded);
    CHECK(*decoded == value);

    // A million nested one-element arrays: 1 MB that would overflow nlohmann's recursive reader.
    std::string deep(1000000, '\x81');
    deep += '\x01';
    CHECK_FALSE(try_parse_cbor(deep, problem));
    CHECK_THAT(problem, Catch::Contains("nested more than 128 levels"));
    // Indefinite arrays and tags nest too.
    CHECK_FALSE(try_parse_cbor(std::string(100000, '\x9f'), problem));
    CHECK_FALSE(try_parse_cbor(std::string(100000, '\xc6') + '\x01', problem));

    CHECK_FALSE(try_parse_cbor(frame.substr(0, frame.size() - 1), problem));
    CHECK_THAT(problem, Catch::Contains("past the end of the frame") || Catch::Contains("ends inside"));
    CHECK_FALSE(try_parse_cbor(frame.substr(0, 3), problem));
    CHECK_FALSE(try_parse_cbor(frame + "x", problem));
    CHECK_THAT(problem, Catch::Contains("follow the frame's item"));
    // An array claiming 2^64 - 1 items in 9 bytes ends at once, it does not allocate.
    CHECK_FALSE(try_parse_cbor(std::string("\x9b\xff\xff\xff\xff\xff\xff\xff\xff", 9), problem));
    CHECK_FALSE(try_parse_cbor("", problem));
    CHECK_FALSE(try_parse_cbor("\xff", problem));
}
