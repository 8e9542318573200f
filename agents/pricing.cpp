// Loading and querying the price table (format: prompts/pricing.json, documented in prompts/README.md).
#include "agents/pricing.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/json_reader.hpp"
#include "util/paths.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr std::string_view k_pricing_schema = "kforge.pricing/1";

double read_price(const JsonReader& entry, std::string_view key)
{
    double value = entry.at(key).as_number();
    if (!(value >= 0))
        entry.at(key).fail("a price is a number of dollars per million tokens, at least 0");
    return value;
}

// "claude-sonnet-4-20250514" -> "claude-sonnet-4"; "gpt-4o-2024-08-06" -> "gpt-4o"; else "".
std::string strip_date_suffix(std::string_view model)
{
    static const std::regex k_dated(R"((.+)-(\d{8}|\d{4}-\d{2}-\d{2})$)");
    std::cmatch match;
    std::string text(model);
    if (std::regex_match(text.c_str(), match, k_dated))
        return match[1].str();
    return "";
}

} // namespace

PriceTable PriceTable::load(const std::filesystem::path& file)
{
    Json json = parse_json_file(file.string());
    JsonReader root(json, file.string());
    root.allow_only({"schema", "currency", "unit", "note", "models"});
    std::string schema = root.at("schema").as_string();
    if (schema != k_pricing_schema)
        root.at("schema").fail(fmt::format("expected \"{}\", found \"{}\"", k_pricing_schema, schema));
    if (root.get_string("currency", "USD") != "USD")
        root.at("currency").fail("prices must be in USD");
    PriceTable table;
    JsonReader models = root.at("models");
    if (!models.is_object())
        models.fail("expected an object of \"provider:model\": {input, cached_input, output, date}");
    static const std::regex k_date(R"(\d{4}-\d{2}-\d{2})");
    for (const auto& key : models.keys()) {
        JsonReader entry = models.at(key);
        if (key.find(':') == std::string::npos)
            entry.fail(fmt::format("'{}' must be written provider:model (e.g. openai:{})", key, key));
        entry.allow_only({"input", "cached_input", "output", "date", "source", "note"});
        ModelPrice price;
        price.input = read_price(entry, "input");
        price.output = read_price(entry, "output");
        price.cached_input = entry.has("cached_input") ? read_price(entry, "cached_input") : price.input;
        price.date = entry.at("date").as_string();
        if (!std::regex_match(price.date, k_date))
            entry.at("date").fail("expected the date the price was read, as YYYY-MM-DD");
        table.m_prices[key] = price;
    }
    return table;
}

PriceTable PriceTable::load_default(const std::filesystem::path& override_file)
{
    PriceTable table = load(resource_dir() / "prompts" / "pricing.json");
    if (const char* env = std::getenv("KFORGE_PRICING"); env && *env)
        table.merge(load(env));
    if (!override_file.empty())
        table.merge(load(override_file));
    return table;
}

void PriceTable::merge(const PriceTable& other)
{
    for (const auto& [key, price] : other.m_prices)
        m_prices[key] = price;
}

const ModelPrice* PriceTable::find(std::string_view provider, std::string_view model) const
{
    auto lookup = [&](std::string_view name) -> const ModelPrice* {
        auto it = m_prices.find(fmt::format("{}:{}", provider, name));
        return it == m_prices.end() ? nullptr : &it->second;
    };
    if (const ModelPrice* price = lookup(model))
        return price;
    std::string undated = strip_date_suffix(model);
    return undated.empty() ? nullptr : lookup(undated);
}

std::optional<double> PriceTable::cost(std::string_view provider, std::string_view model,
                                       const TokenUsage& usage) const
{
    const ModelPrice* price = find(provider, model);
    if (!price)
        return std::nullopt;
    int64_t cached = std::clamp<int64_t>(usage.cached_input, 0, usage.input);
    double dollars = static_cast<double>(usage.input - cached) * price->input +
                     static_cast<double>(cached) * price->cached_input +
                     static_cast<double>(usage.output) * price->output;
    return dollars / 1e6;
}

} // namespace kforge
