// Origin names.
#include "core/candidate.hpp"

#include <array>

namespace kforge {
namespace {
constexpr std::array<std::string_view, 7> k_origins{"seed", "reference", "llm", "repair", "tune", "builtin", "user"};
}

std::string_view origin_name(Origin origin) { return k_origins[static_cast<size_t>(origin)]; }

std::optional<Origin> parse_origin(std::string_view name)
{
    for (size_t i = 0; i < k_origins.size(); ++i)
        if (k_origins[i] == name)
            return static_cast<Origin>(i);
    return std::nullopt;
}

} // namespace kforge
