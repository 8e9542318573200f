// What a model call costs: the price table of prompts/pricing.json, which a user can override.
//
// Prices are US dollars per million tokens, separately for fresh input, cached input and output,
// one entry per "provider:model" with the date the price was read. A user file (--pricing FILE or
// $KFORGE_PRICING) is merged over the bundled one entry by entry, so it can correct a price, add a
// local model at 0, or add a model kforge does not know. A model missing from the table is not an
// error: its tokens are still counted and its cost is marked unknown (LlmCallRecord::cost_known).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace kforge {

struct ModelPrice {
    double input = 0;        // $ per million uncached input tokens
    double cached_input = 0; // $ per million input tokens served from the provider's cache
    double output = 0;       // $ per million output tokens (reasoning tokens included)
    std::string date;        // when the price was read, YYYY-MM-DD
};

struct TokenUsage {
    int64_t input = 0;       // all input tokens, cached ones included
    int64_t cached_input = 0;
    int64_t output = 0;
};

class PriceTable
{
public:
    // Reads one price file. Throws Error(bad_input) "FILE: PATH: problem" when it is malformed.
    static PriceTable load(const std::filesystem::path& file);
    // The bundled table, then $KFORGE_PRICING, then `override_file` (when not empty) merged over it.
    static PriceTable load_default(const std::filesystem::path& override_file = {});

    // Entries of `other` replace or extend this table's.
    void merge(const PriceTable& other);
    // The price of "provider:model"; a dated model name ("...-20250514", "...-2025-05-14") falls
    // back to its undated entry. nullptr when unknown.
    const ModelPrice* find(std::string_view provider, std::string_view model) const;
    // Dollars for `usage`, or nullopt when the model has no price.
    std::optional<double> cost(std::string_view provider, std::string_view model, const TokenUsage& usage) const;
    size_t size() const { return m_prices.size(); }

private:
    std::map<std::string, ModelPrice, std::less<>> m_prices;
};

} // namespace kforge
