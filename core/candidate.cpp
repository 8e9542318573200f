// Origin names and the GpuIdentity codec.
#include "core/candidate.hpp"

#include <array>
#include <tuple>

#include <fmt/format.h>

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

std::string GpuIdentity::label() const
{
    return rank == 0 ? fmt::format("gpu{}", device_index) : fmt::format("r{}/gpu{}", rank, device_index);
}

Json GpuIdentity::to_json() const
{
    return Json{{"host", host}, {"rank", rank}, {"device_index", device_index}, {"uuid", uuid}, {"name", name}};
}

GpuIdentity GpuIdentity::from_json(const Json& json)
{
    GpuIdentity gpu;
    gpu.host = json.value("host", "");
    gpu.rank = json.value("rank", 0);
    gpu.device_index = json.value("device_index", 0);
    gpu.uuid = json.value("uuid", "");
    gpu.name = json.value("name", "");
    return gpu;
}

bool GpuIdentity::operator==(const GpuIdentity& other) const
{
    return std::tie(host, rank, device_index, uuid) == std::tie(other.host, other.rank, other.device_index, other.uuid);
}

const Measurement* find_timing(const std::vector<Measurement>& list, const std::string& subject,
                               const Measurement& like)
{
    const Measurement* found = nullptr;
    for (const auto& m : list)
        if (m.subject == subject && m.shape_set == like.shape_set && m.shape_label == like.shape_label &&
            (!found || m.confirmed || !found->confirmed))
            found = &m;
    return found;
}

} // namespace kforge
