// How a session found each vendor baseline a task names: the GPU worker decides it, the controller
// reports it (worker_protocol.hpp carries it between them).
#pragma once

#include <string>

namespace kforge {

// A vendor baseline the task names (tasks/*.json "baseline": {"vendor": [...]}), as this session
// found it. A routine is timed only when it ran on the task's own generated inputs at every bench
// shape and agreed with the reference there under the task's tolerance; otherwise `reason` says
// why (library not built or not loadable, routine missing, operands that do not fit, disagreement
// with the reference, a failing call) and speedups are reported against the reference alone.
struct VendorBaselineStatus {
    std::string routine;            // "cublas_sgemm"
    std::string library;            // "cuBLAS", "CUB", "cuSPARSE"
    bool timed = false;             // its measurements are among baselines()
    std::string reason;             // why it is not timed; "" when timed
};

} // namespace kforge
