// Verdict names and ranks.
#include "core/verdict.hpp"

#include <array>

namespace kforge {
namespace {
constexpr std::array<std::string_view, 8> k_names{
    "no_code", "plan_error", "compile_error", "runtime_error",
    "timeout", "incorrect",  "held_out_failed", "correct"};
}

std::string_view verdict_name(VerdictKind kind) { return k_names[static_cast<size_t>(kind)]; }

std::optional<VerdictKind> parse_verdict(std::string_view name)
{
    for (size_t i = 0; i < k_names.size(); ++i)
        if (k_names[i] == name)
            return static_cast<VerdictKind>(i);
    return std::nullopt;
}

int verdict_rank(VerdictKind kind)
{
    int index = static_cast<int>(kind);
    return index >= static_cast<int>(VerdictKind::timeout) ? index - 1 : index;
}

} // namespace kforge
