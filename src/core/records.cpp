// Names of record enums.
#include "core/records.hpp"

namespace kforge {

std::string_view call_purpose_name(CallPurpose purpose)
{
    switch (purpose) {
    case CallPurpose::propose: return "propose";
    case CallPurpose::repair: return "repair";
    case CallPurpose::meta_prompt: return "meta_prompt";
    case CallPurpose::analyst: return "analyst";
    }
    return "propose";
}

} // namespace kforge
