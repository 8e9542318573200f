// The price table: the bundled file, user overrides, costs from usage, unknown models.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "agents/pricing.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using namespace kforge;
using kforge::test::TempDir;
using kforge::test::write_text;

TEST_CASE("the bundled price table loads and every entry has a date", "[agents]")
{
    PriceTable table = PriceTable::load(kforge::test::source_dir() / "prompts" / "pricing.json");
    CHECK(table.size() >= 10);
    const ModelPrice* price = table.find("openai", "gpt-4o");
    REQUIRE(price);
    CHECK(price->date.size() == 10);
    CHECK(price->output > price->input);
}

TEST_CASE("a call's cost comes from fresh input, cached input and output tokens", "[agents]")
{
    TempDir dir;
    write_text(dir / "prices.json", R"({"schema": "kforge.pricing/1", "models": {
        "openai:test-model": {"input": 2.0, "cached_input": 0.5, "output": 8.0, "date": "2025-01-02"}}})");
    PriceTable table = PriceTable::load(dir / "prices.json");
    // 1000 input of which 400 cached, 500 output: 600*2 + 400*0.5 + 500*8 = 5400 per million.
    auto cost = table.cost("openai", "test-model", {1000, 400, 500});
    REQUIRE(cost);
    CHECK(*cost == Approx(0.0054));
    // A dated model name falls back to its undated entry.
    CHECK(table.cost("openai", "test-model-20250514", {1000, 0, 0}));
    CHECK(table.cost("openai", "test-model-2025-05-14", {1000, 0, 0}));
    CHECK_FALSE(table.cost("openai", "other-model", {1000, 0, 0}));
    CHECK_FALSE(table.cost("anthropic", "test-model", {1000, 0, 0}));
}

TEST_CASE("a user price file overrides and extends the bundled one", "[agents]")
{
    TempDir dir;
    write_text(dir / "mine.json", R"({"schema": "kforge.pricing/1", "models": {
        "openai:gpt-4o": {"input": 100, "output": 200, "date": "2030-01-01"},
        "openai:my-local-llama": {"input": 0, "output": 0, "date": "2030-01-01"}}})");
    PriceTable table = PriceTable::load_default(dir / "mine.json");
    CHECK(table.find("openai", "gpt-4o")->input == 100);
    CHECK(table.find("openai", "gpt-4o")->cached_input == 100); // defaults to the input price
    CHECK(table.cost("openai", "my-local-llama", {5000, 0, 5000}) == 0.0);
    CHECK(table.find("anthropic", "claude-sonnet-4-5")); // bundled entries stay
}

TEST_CASE("a malformed price file names the file, the entry and the problem", "[agents]")
{
    TempDir dir;
    write_text(dir / "bad.json", R"({"schema": "kforge.pricing/1", "models": {
        "openai:x": {"input": -1, "output": 2, "date": "2025-01-01"}}})");
    CHECK_THROWS_WITH(PriceTable::load(dir / "bad.json"),
                      Catch::Contains("bad.json") && Catch::Contains("openai:x") && Catch::Contains("at least 0"));
    write_text(dir / "nodate.json", R"({"schema": "kforge.pricing/1", "models": {
        "openai:x": {"input": 1, "output": 2}}})");
    CHECK_THROWS_WITH(PriceTable::load(dir / "nodate.json"), Catch::Contains("date"));
    write_text(dir / "noprovider.json", R"({"schema": "kforge.pricing/1", "models": {
        "gpt-x": {"input": 1, "output": 2, "date": "2025-01-01"}}})");
    CHECK_THROWS_WITH(PriceTable::load(dir / "noprovider.json"), Catch::Contains("provider:model"));
}
