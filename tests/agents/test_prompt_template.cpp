// Prompt templates: placeholders, optional sections, and the errors a user's template gets at load.
#include <catch2/catch.hpp>

#include "agents/prompt_library.hpp"
#include "agents/prompt_template.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using namespace kforge;
using kforge::test::TempDir;
using kforge::test::write_text;

TEST_CASE("placeholders are filled verbatim and never re-scanned", "[agents]")
{
    PromptTemplate tmpl = parse_template("a {{x}} b {{ y }}\n", "t.txt");
    CHECK(render_template(tmpl, {{"x", "{{y}}"}, {"y", "2\n"}}) == "a {{y}} b 2\n");
}

TEST_CASE("an empty placeholder alone on its line leaves no gap", "[agents]")
{
    PromptTemplate tmpl = parse_template("one\n\n{{a}}\n\n{{b}}\n\ntwo\n", "t.txt");
    CHECK(render_template(tmpl, {{"a", ""}, {"b", "B"}}) == "one\n\nB\n\ntwo\n");
    CHECK(render_template(tmpl, {{"a", ""}, {"b", ""}}) == "one\n\ntwo\n");
    CHECK(render_template(tmpl, {{"a", "A"}, {"b", "B"}}) == "one\n\nA\n\nB\n\ntwo\n");
}

TEST_CASE("an optional section appears only when its value is not blank", "[agents]")
{
    PromptTemplate tmpl = parse_template("Status: {{s}}\n{{#t}}\nTimes:\n{{t}}\n{{/t}}\nend {{#s}}[{{s}}]{{/s}}\n", "t.txt");
    CHECK(render_template(tmpl, {{"s", "ok"}, {"t", "- 1 ms"}}) == "Status: ok\nTimes:\n- 1 ms\nend [ok]\n");
    CHECK(render_template(tmpl, {{"s", "ok"}, {"t", "  "}}) == "Status: ok\nend [ok]\n");
}

TEST_CASE("a malformed tag or unbalanced section is an error with file and line", "[agents]")
{
    CHECK_THROWS_WITH(parse_template("fine\n{{Bad}}\n", "t.txt"), Catch::Contains("t.txt:2") && Catch::Contains("malformed"));
    CHECK_THROWS_WITH(parse_template("{{x", "t.txt"), Catch::Contains("t.txt:1"));
    CHECK_THROWS_WITH(parse_template("{{#a}}\ntext\n", "t.txt"), Catch::Contains("t.txt:1") && Catch::Contains("never closed"));
    CHECK_THROWS_WITH(parse_template("{{#a}}{{/b}}", "t.txt"), Catch::Contains("closes no open section"));
}

TEST_CASE("an unknown or missing required placeholder is an error at load time", "[agents]")
{
    PromptTemplate typo = parse_template("line\n{{sorce}}\n", "p.txt");
    CHECK_THROWS_WITH(check_placeholders(typo, {"source"}, {"status"}),
                      Catch::Contains("p.txt:2") && Catch::Contains("{{sorce}}") && Catch::Contains("did you mean {{source}}"));
    PromptTemplate missing = parse_template("Status: {{status}}\n", "p.txt");
    CHECK_THROWS_WITH(check_placeholders(missing, {"source"}, {"status"}),
                      Catch::Contains("never uses the required placeholder {{source}}"));
    CHECK_NOTHROW(check_placeholders(parse_template("{{source}}", "p.txt"), {"source"}, {"status"}));
}

TEST_CASE("rendering a name without a value is a programming error, not a silent blank", "[agents]")
{
    CHECK_THROWS_AS(render_template(parse_template("{{x}}", "t.txt"), {}), std::logic_error);
}

TEST_CASE("every shipped template loads and passes the catalog check", "[agents]")
{
    PromptLibrary library = PromptLibrary::load({kforge::test::source_dir() / "prompts"});
    CHECK_THAT(library.file_of(PromptId::propose_user), Catch::EndsWith("propose_user.txt"));
}

TEST_CASE("a user's prompt folder overrides single templates and is checked like the shipped ones", "[agents]")
{
    TempDir dir;
    write_text(dir / "request_new.txt", "Write the kernel, please.\n");
    PromptLibrary library = PromptLibrary::load({dir.path(), kforge::test::source_dir() / "prompts"});
    CHECK(library.render(PromptId::request_new, {}) == "Write the kernel, please.\n");
    CHECK_THAT(library.file_of(PromptId::request_improve), Catch::Contains("prompts"));

    write_text(dir / "section_parent.txt", "{{source}}\n{{verdict_message}}\n");
    CHECK_THROWS_WITH(PromptLibrary::load({dir.path(), kforge::test::source_dir() / "prompts"}),
                      Catch::Contains("section_parent.txt:2") && Catch::Contains("unknown placeholder {{verdict_message}}"));
}
