// CBOR framing of worker messages and the Measurement and VendorBaselineStatus codecs.
#include "evaluator/worker/worker_protocol.hpp"

#include <stdexcept>

namespace kforge {

std::string encode_message(const Json& message)
{
    std::vector<std::uint8_t> bytes = Json::to_cbor(message);
    return std::string(bytes.begin(), bytes.end());
}

Json decode_message(const std::string& frame)
{
    std::string problem;
    std::optional<Json> message = try_parse_cbor(frame, problem);
    if (!message)
        throw std::invalid_argument("a worker message is not readable CBOR: " + problem);
    if (!message->is_object())
        throw std::invalid_argument("a worker message is not a CBOR object");
    return std::move(*message);
}

Json measurement_to_json(const Measurement& m)
{
    return Json{{"shape_set", m.shape_set},     {"shape_label", m.shape_label},   {"subject", m.subject},
                {"median_ns", m.median_ns},     {"q1_ns", m.q1_ns},               {"q3_ns", m.q3_ns},
                {"min_ns", m.min_ns},           {"samples", m.samples},           {"discarded", m.discarded},
                {"sm_clock_mhz", m.sm_clock_mhz}, {"confirmed", m.confirmed},     {"below_roofline", m.below_roofline},
                {"roofline_ns", m.roofline_ns}};
}

Measurement measurement_from_json(const Json& json)
{
    Measurement m;
    m.shape_set = json.value("shape_set", "");
    m.shape_label = json.value("shape_label", "");
    m.subject = json.value("subject", "");
    m.median_ns = json.value("median_ns", 0.0);
    m.q1_ns = json.value("q1_ns", 0.0);
    m.q3_ns = json.value("q3_ns", 0.0);
    m.min_ns = json.value("min_ns", 0.0);
    m.samples = json.value("samples", 0);
    m.discarded = json.value("discarded", 0);
    m.sm_clock_mhz = json.value("sm_clock_mhz", 0.0);
    m.confirmed = json.value("confirmed", false);
    m.below_roofline = json.value("below_roofline", false);
    m.roofline_ns = json.value("roofline_ns", 0.0);
    return m;
}

Json vendor_status_to_json(const VendorBaselineStatus& status)
{
    return Json{{"routine", status.routine}, {"library", status.library}, {"timed", status.timed},
                {"reason", status.reason}};
}

VendorBaselineStatus vendor_status_from_json(const Json& json)
{
    VendorBaselineStatus status;
    status.routine = json.value("routine", "");
    status.library = json.value("library", "");
    status.timed = json.value("timed", false);
    status.reason = json.value("reason", "");
    return status;
}

} // namespace kforge
