// Names of record enums, and GpuUsage as JSON.
#include "core/records.hpp"

namespace kforge {

std::string_view call_purpose_name(CallPurpose purpose)
{
    switch (purpose) {
    case CallPurpose::propose: return "propose";
    case CallPurpose::repair: return "repair";
    case CallPurpose::meta_prompt: return "meta_prompt";
    case CallPurpose::analyst: return "analyst";
    case CallPurpose::plan: return "plan";
    case CallPurpose::code: return "code";
    }
    return "propose";
}

const std::vector<CallPurpose>& call_purposes()
{
    static const std::vector<CallPurpose> k_all = {CallPurpose::propose,  CallPurpose::repair, CallPurpose::meta_prompt,
                                                   CallPurpose::analyst,  CallPurpose::plan,   CallPurpose::code};
    return k_all;
}

std::optional<CallPurpose> parse_call_purpose(std::string_view name)
{
    for (CallPurpose purpose : call_purposes())
        if (call_purpose_name(purpose) == name)
            return purpose;
    return std::nullopt;
}

Json GpuUsage::to_json() const
{
    Json json = gpu.to_json();
    json["label"] = gpu.label();
    json["busy_s"] = busy_s;
    json["wall_s"] = wall_s;
    json["busy"] = wall_s > 0 ? busy_s / wall_s : 0.0;
    json["lock_wait_s"] = lock_wait_s;
    json["evaluations"] = evaluations;
    json["restarts"] = restarts;
    json["lost"] = lost;
    return json;
}

} // namespace kforge
