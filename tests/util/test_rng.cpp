// The seeded generator: reproducible, restorable, unbiased enough for selection.
#include "kf_catch.hpp"

#include "util/rng.hpp"

using kforge::Rng;

TEST_CASE("a restored generator continues the same sequence", "[util][rng]")
{
    Rng a(123);
    for (int i = 0; i < 10; ++i)
        a.next();
    Rng b = Rng::restore(a.save());
    for (int i = 0; i < 100; ++i)
        CHECK(a.next() == b.next());
    CHECK_THROWS_AS(Rng::restore("nonsense"), std::invalid_argument);
}

TEST_CASE("weighted choice follows its weights and never picks a zero weight", "[util][rng]")
{
    Rng rng(7);
    std::vector<int> counts(3, 0);
    for (int i = 0; i < 30000; ++i)
        ++counts[rng.weighted({1.0, 0.0, 3.0})];
    CHECK(counts[1] == 0);
    CHECK(counts[2] / static_cast<double>(counts[0]) == Approx(3.0).epsilon(0.08));
    CHECK_THROWS_AS(rng.weighted({0.0, 0.0}), std::invalid_argument);
}
