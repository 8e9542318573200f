// CompileRequest and CompileResult as JSON: the compile worker's wire format (sent as CBOR, with
// the CUBIN as a binary value) and the disk cache's metadata (the CUBIN in a file beside it).
#pragma once

#include "evaluator/compile/compile.hpp"
#include "util/json_reader.hpp"

namespace kforge {

enum class CubinEncoding {
    omitted, // the cache stores the CUBIN in its own file
    binary,  // the worker protocol carries it inline (CBOR byte string)
};

Json compile_request_to_json(const CompileRequest& request);
// Throws nlohmann::json::exception for a malformed value.
CompileRequest compile_request_from_json(const Json& json);

Json compile_result_to_json(const CompileResult& result, CubinEncoding cubin);
// Throws nlohmann::json::exception (or std::out_of_range for an unknown verdict) when malformed.
CompileResult compile_result_from_json(const Json& json);

// The evaluation's "ptxas" metric (shown to models): per kernel its registers, stack frame and
// static shared memory, with spill bytes where a ptxas report gave them. A kernel the compile has
// no resources for takes the loaded function's attributes the GPU worker reported (`worker`:
// {"KERNEL": {"registers", "local_bytes_per_thread", "static_smem_bytes", ...}}), so no machine's
// NVRTC can make them disappear. Entries not from ptxas say where they came from ("source").
Json kernel_resources_metrics(const std::vector<KernelResources>& compiled, const Json& worker);

} // namespace kforge
