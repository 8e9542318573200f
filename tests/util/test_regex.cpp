// The linear-time regular expressions (RE2) that forbid patterns and the screen use.
#include "kf_catch.hpp"

#include "util/regex.hpp"

using namespace kforge;

TEST_CASE("a pattern that backtracks for ever elsewhere matches in one pass here", "[util][regex][hostile]")
{
    std::string error;
    auto re = Regex::compile("((((.*)*)*)*)*z", error);
    REQUIRE(re);
    // A backtracking engine explores every way to split 200 KB among five nested stars.
    std::string text(200000, 'a');
    CHECK_FALSE(re->search(text));
    text.back() = 'z';
    auto match = re->search(text);
    REQUIRE(match);
    CHECK(match->offset == 0);
    CHECK(match->length == text.size());
    auto nested = Regex::compile("(a|aa)+$", error);
    REQUIRE(nested);
    CHECK_FALSE(nested->search(std::string(100000, 'a') + "b"));
}

TEST_CASE("a pattern outside RE2's syntax is refused with the reason", "[util][regex][hostile]")
{
    std::string error;
    CHECK_FALSE(Regex::compile("(a)\\1", error));
    CHECK_THAT(error, Catch::Contains("invalid escape sequence"));
    CHECK_FALSE(Regex::compile("(?=x)", error));
    CHECK_FALSE(Regex::compile("(a", error));
    CHECK_THAT(error, Catch::Contains("missing )"));
    // RE2 refuses a pattern whose automaton would not fit its memory bound.
    CHECK_FALSE(Regex::compile("((a{100}){100}){100}", error));
}

TEST_CASE("search reports offsets and groups, honouring \\b and the text before `from`", "[util][regex]")
{
    Regex re(R"(\b(clock|clock64)\s*\()");
    std::string code = "int t = myclock(); long long c = clock64 ();";
    auto match = re.search(code);
    REQUIRE(match);
    CHECK(code.substr(match->offset, match->length) == "clock64 (");
    REQUIRE(match->groups.size() == 1);
    CHECK(match->groups[0] == "clock64");
    CHECK_FALSE(re.search(code, match->offset + 1));
    Regex optional(R"(a(b)?c)");
    auto m = optional.search("xac");
    REQUIRE(m);
    CHECK_FALSE(m->groups[0]);
    CHECK(Regex("sm_[0-9]+").full_match("sm_90"));
    CHECK_FALSE(Regex("sm_[0-9]+").full_match("sm_90a"));
}
