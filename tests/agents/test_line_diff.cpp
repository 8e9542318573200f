// Unified diffs shown to the analyst.
#include <catch2/catch.hpp>

#include "agents/line_diff.hpp"

using namespace kforge;

TEST_CASE("a diff shows changed lines with context and correct hunk headers", "[agents]")
{
    std::string before = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
    std::string after = "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\nk\n";
    CHECK(unified_diff(before, after, 1) == "@@ -4,3 +4,3 @@\n d\n-e\n+E\n f\n@@ -10,1 +10,2 @@\n j\n+k");
    CHECK(unified_diff(before, before).empty());
    CHECK(unified_diff("", "x\n") == "@@ -0,0 +1,1 @@\n+x");
}

TEST_CASE("a diff of huge or wholly different texts is summarised instead of listed", "[agents]")
{
    std::string a, b;
    for (int i = 0; i < 5000; ++i) {
        a += "a" + std::to_string(i) + "\n";
        b += "b" + std::to_string(i) + "\n";
    }
    CHECK_THAT(unified_diff(a, b), Catch::Contains("too many to show"));
}
