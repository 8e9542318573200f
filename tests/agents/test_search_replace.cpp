// SEARCH/REPLACE edits: exact first, then whitespace-tolerant, all or nothing, with messages that
// name the failing block.
#include <catch2/catch.hpp>

#include "agents/reply_parser.hpp"
#include "agents/search_replace.hpp"

using namespace kforge;

namespace {

const std::string k_parent = "/* kforge:plan {\"params\": {\"B\": [128]}} */\n"
                             "extern \"C\" __global__ void k(const float* x, float* y, int n)\n"
                             "{\n"
                             "    int i = blockIdx.x * B + threadIdx.x;\n"
                             "    if (i < n)\n"
                             "        y[i] = 2.0f * x[i];\n"
                             "}\n";

std::string edit(const std::string& search, const std::string& replace)
{
    return "<<<<<<< SEARCH\n" + search + "\n=======\n" + replace + "\n>>>>>>> REPLACE\n";
}

} // namespace

TEST_CASE("an exact edit replaces exactly the matched lines", "[agents]")
{
    std::string reply = "CHANGE: fma\n```cuda\n" + edit("        y[i] = 2.0f * x[i];", "        y[i] = x[i] + x[i];") + "```\n";
    ParsedReply parsed = parse_reply(reply, EditForm::search_replace, &k_parent);
    REQUIRE(parsed.source);
    CHECK(parsed.edits_applied == 1);
    CHECK_THAT(*parsed.source, Catch::Contains("        y[i] = x[i] + x[i];\n}\n"));
    CHECK_THAT(*parsed.source, !Catch::Contains("2.0f"));
    CHECK(parsed.note == "fma");
}

TEST_CASE("an edit with different indentation and blank lines applies by the tolerant match", "[agents]")
{
    std::string search = "if (i < n)\n\n  y[i]   =  2.0f * x[i];";
    EditOutcome outcome = apply_edits(k_parent, find_edit_blocks(edit(search, "    if (i < n) y[i] = 3.0f * x[i];")).edits);
    REQUIRE(outcome.source);
    CHECK_THAT(*outcome.source, Catch::Contains("+ threadIdx.x;\n    if (i < n) y[i] = 3.0f * x[i];\n}\n"));
}

TEST_CASE("edits apply in order, each to the result of the previous one", "[agents]")
{
    std::string reply = edit("    int i = blockIdx.x * B + threadIdx.x;", "    int j = blockIdx.x * B + threadIdx.x;") +
                        edit("    if (i < n)", "    if (j < n)") + edit("        y[i] = 2.0f * x[i];", "        y[j] = 2.0f * x[j];");
    EditOutcome outcome = apply_edits(k_parent, find_edit_blocks(reply).edits);
    REQUIRE(outcome.source);
    CHECK_THAT(*outcome.source, Catch::Contains("int j") && Catch::Contains("if (j < n)") && Catch::Contains("y[j] = 2.0f * x[j]"));
}

TEST_CASE("an edit that matches nothing leaves the parent unchanged and says which block and why", "[agents]")
{
    std::string reply = edit("    if (i < n)", "    if (i < n && i >= 0)") + edit("        y[i] = 2.0f * x[k];", "        y[i] = 0;");
    ParsedReply parsed = parse_reply(reply, EditForm::search_replace, &k_parent);
    CHECK_FALSE(parsed.source);
    CHECK_THAT(parsed.problem, Catch::Contains("nothing was changed") && Catch::Contains("Edit 2 of 2") &&
                                   Catch::Contains("reply line 6") && Catch::Contains("y[i] = 2.0f * x[k];") &&
                                   Catch::Contains("most similar line of the current source is line 6"));
}

TEST_CASE("an edit that matches two places is refused rather than guessed", "[agents]")
{
    std::string parent = "a();\nb();\na();\n";
    EditOutcome outcome = apply_edits(parent, find_edit_blocks(edit("a();", "c();")).edits);
    CHECK_FALSE(outcome.source);
    CHECK_THAT(outcome.problem, Catch::Contains("more than one place") && Catch::Contains("lines 1 and 3"));
    // More context makes it unique.
    outcome = apply_edits(parent, find_edit_blocks(edit("b();\na();", "b();\nc();")).edits);
    REQUIRE(outcome.source);
    CHECK(*outcome.source == "a();\nb();\nc();\n");
}

TEST_CASE("an exact match is whole lines, never part of a line", "[agents]")
{
    EditOutcome outcome = apply_edits("uint i = 0;\nint i = 0;\n", find_edit_blocks(edit("int i = 0;", "int i = 1;")).edits);
    REQUIRE(outcome.source);
    CHECK(*outcome.source == "uint i = 0;\nint i = 1;\n");
}

TEST_CASE("malformed edit blocks are reported with their position", "[agents]")
{
    CHECK_THAT(find_edit_blocks("<<<<<<< SEARCH\nx\n>>>>>>> REPLACE\n").problem, Catch::Contains("no '=======' line"));
    CHECK_THAT(find_edit_blocks("text\n<<<<<<< SEARCH\nx\n=======\ny\n").problem,
               Catch::Contains("reply line 2") && Catch::Contains("cut off"));
    CHECK_THAT(apply_edits("a\n", find_edit_blocks(edit("", "b")).edits).problem, Catch::Contains("SEARCH part is empty"));
    ParsedReply parsed = parse_reply(edit("x", "y"), EditForm::search_replace, nullptr);
    CHECK_THAT(parsed.problem, Catch::Contains("no current source"));
}

TEST_CASE("a whole file is accepted when edits were asked for", "[agents]")
{
    ParsedReply parsed = parse_reply("CHANGE: rewrite\n```cuda\n" + k_parent + "```\n", EditForm::search_replace, &k_parent);
    REQUIRE(parsed.source);
    CHECK(parsed.edits_applied == 0);
}
