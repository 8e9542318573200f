// Fuzz target: a frame from a worker process, decoded and read the way the controller reads GPU
// worker replies (gpu/slot.cpp) and compile worker replies (compile_pool.cpp). Decoding refuses
// with std::invalid_argument; reading a well-formed frame of the wrong shape throws nlohmann's
// exceptions, which the controller's slot loop catches. A crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>

#include "core/verdict.hpp"
#include "evaluator/compile/compile_record.hpp"
#include "evaluator/worker/worker_protocol.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace kforge;
    std::string frame(fuzz::as_text(data, size));
    try {
        Json body = decode_message(frame);
        (void)body.value("ok", false);
        (void)body.value("restart", false);
        if (body.contains("verdict")) {
            const Json& verdict = body.at("verdict");
            (void)parse_verdict(verdict.value("kind", "runtime_error"));
            (void)verdict.value("message", "");
        }
        for (const auto& m : body.value("measurements", Json::array()))
            (void)measurement_from_json(m);
        for (const auto& status : body.value("vendor", Json::array()))
            (void)vendor_status_from_json(status);
        if (body.contains("result"))
            (void)compile_result_from_json(body.at("result"));
        else
            (void)compile_result_from_json(body);
        (void)encode_message(body);
    } catch (const std::exception&) {
    }
    return 0;
}
