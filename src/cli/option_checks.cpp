// The validators of option_checks.hpp. Each parses the text itself (std::from_chars: no locale,
// no wrapping, no "inf"), so what CLI11 converts afterwards is known to fit.
#include "cli/option_checks.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "evaluator/compile/compile.hpp"

namespace kforge {

CLI::Validator whole_number(int64_t low, int64_t high)
{
    return CLI::Validator(
        [low, high](std::string& text) -> std::string {
            int64_t value = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (ec != std::errc() || end != text.data() + text.size() || value < low || value > high)
                return fmt::format("expected a whole number from {} to {}, got '{}'", low, high, text);
            return "";
        },
        fmt::format("INT in [{} - {}]", low, high));
}

CLI::Validator unsigned_number()
{
    return CLI::Validator(
        [](std::string& text) -> std::string {
            uint64_t value = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (text.empty() || text[0] == '-' || ec != std::errc() || end != text.data() + text.size())
                return fmt::format("expected a whole number from 0 to {}, got '{}'", UINT64_MAX, text);
            return "";
        },
        "UINT");
}

CLI::Validator real_number(double low, double high, bool exclusive_low)
{
    return CLI::Validator(
        [low, high, exclusive_low](std::string& text) -> std::string {
            double value = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            bool ok = ec == std::errc() && end == text.data() + text.size() && std::isfinite(value) &&
                      (exclusive_low ? value > low : value >= low) && value <= high;
            if (!ok)
                return fmt::format("expected a number {} {} and at most {}, got '{}'",
                                   exclusive_low ? "above" : "from", low, high, text);
            return "";
        },
        fmt::format("NUMBER in {}{} - {}]", exclusive_low ? "(" : "[", low, high));
}

CLI::Validator non_empty()
{
    return CLI::Validator(
        [](std::string& text) -> std::string {
            bool blank = std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c); });
            return blank ? fmt::format("expected a value, got '{}'", text) : "";
        },
        "");
}

CLI::Validator gpu_arch()
{
    return CLI::Validator([](std::string& text) { return check_arch_name(text); }, "ARCH");
}

} // namespace kforge
