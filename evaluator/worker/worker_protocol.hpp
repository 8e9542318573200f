// Messages between the controller and the GPU worker (`kforge __worker gpu`).
//
// Each frame is one JSON object encoded as CBOR (binary-safe, so CUBINs travel as byte strings).
// Requests carry "op"; replies carry "ok" and either the result or "error". Operations:
//   devices         -> {"devices": [DeviceFacts]}: every device the driver shows, no context made
//   device          -> {"device": DeviceFacts, "cupti": "" or why activity tracing is unavailable}
//   setup           {task_path, run_secret, cache_dir} -> {"peaks", "reference_behaviour_hash" (of the
//                   reference's CUBIN, cubin_info.hpp), timings}
//   time_reference  {level, deadline_ms, vendor} -> {"measurements": [...], "vendor": [VendorBaselineStatus],
//                   "vendor_library": {path, versions, reason}}; with vendor true, the task's vendor
//                   baselines are checked against the reference and timed interleaved with it
//   run_variant     {cubin, plan, params, verify_tests, verify_held_out, timing, profile, deadline_ms}
//                   -> {"verdict", "restart", "measurements", "resources", "notes", "profile"};
//                   timing is none, sweep, quick or confirm; each phase runs only when asked, so the
//                   measurement memo can ask for just the phases it lacks (e.g. the held-out check)
//   check_program   {sets: ["tests", "bench", "held_out"]} -> {"problem": "" or the first failure}: for a
//                   task whose reference is a PyTorch program, the program's own outputs under the check
// A reply with "restart": true means the worker's CUDA context is unusable; the worker exits right
// after sending it and the controller starts a new one before the next request.
#pragma once

#include <string>

#include "core/candidate.hpp"
#include "evaluator/worker/vendor_status.hpp"
#include "util/json_reader.hpp"

namespace kforge {

std::string encode_message(const Json& message);
// Throws std::invalid_argument on a frame that is not a CBOR object.
Json decode_message(const std::string& frame);

Json measurement_to_json(const Measurement& m);
Measurement measurement_from_json(const Json& json);
Json vendor_status_to_json(const VendorBaselineStatus& status);
VendorBaselineStatus vendor_status_from_json(const Json& json);

// The body of `kforge __worker gpu`.
int run_gpu_worker();

} // namespace kforge
