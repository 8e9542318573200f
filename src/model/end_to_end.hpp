// The end-to-end figures of DIR/assembled.json (python/kforge_torch/model/endtoend.py): each way the
// model and the assembled model ran, timed side by side in one process, whether each way of the
// assembled model matched the original, and the time an assembled forward spends between kernels.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "util/json_reader.hpp"

namespace kforge {

struct ForwardTime {
    std::string key;   // "eager", "eager_graph", "compile", ..., "assembled_compile_max_autotune"
    std::string label; // "torch eager", "eager as a CUDA graph", ...
    std::optional<double> seconds;
    std::optional<bool> matches; // the assembled ways only: within the composed tolerance
    std::string error;           // why this way did not build (torch.compile failed, ...)
};

// Every way, in the table's order; a way assembled.json lacks has neither seconds nor an error.
// Folders written before the side-by-side table (eager_s, compile_s, assembled_s,
// assembled_compile_s) read as those four ways.
std::vector<ForwardTime> forward_times(const Json& assembled);

// The assembled forward's time outside the regions' own: `assembled_s` minus `regions_s` (each
// region's time after assembly: its kernels' where replaced, its own where kept), and the GPU's
// busy time per forward that the profiler saw, where measured.
struct BetweenKernels {
    double assembled_s = 0;
    std::optional<double> regions_s;  // the regions' times after assembly, summed (measured folders)
    std::optional<double> kernels_s;  // torch.profiler: the union of the forward's kernels, copies, fills
    double overhead_s() const { return assembled_s - regions_s.value_or(0); }
};

// Lines of text: the table of ways (time, against eager, torch.compile and max-autotune, matches),
// then the time between kernels of the assembled forward and of its CUDA graph.
std::vector<std::string> forward_time_lines(const Json& assembled, std::optional<double> regions_after_s);

Json forward_times_json(const Json& assembled, std::optional<double> regions_after_s);

} // namespace kforge
