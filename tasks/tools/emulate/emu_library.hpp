// Library steps on the CPU (emu_library.cpp): a plan's `{"library": "matmul"}` (cuBLASLt) and
// `{"library": "conv"}` (cuDNN) launches computed on the emulator's own buffers, as
// docs/library-steps.md states them, in fp64 with one rounding to the output's dtype.
#pragma once

#include <map>
#include <string>

#include "core/library_step.hpp"
#include "emu_data.hpp"

// What the vendor library would refuse before touching the GPU (kforge_vendor_step_describe on the
// worker's own translation of the step): "" when it takes the step, else its reason, which the GPU
// worker makes a plan_error (any other failure of the library throws std::runtime_error). Without libkforge_vendor.so (KFORGE_VENDOR_LIB, or the
// dev build's, see tasks/tools/README.md) those checks are skipped and a note says so once; core's
// checks (names, dtypes, every operand's extent) have already run in resolve_plan either way.
std::string vendor_refusal(const ResolvedLibraryStep& step);

// Runs one resolved step over `bufs` (task tensors and the plan's scratch by name). The step's
// extents were checked against every operand by resolve_plan, so nothing here reads or writes
// outside them.
void run_library_step(const ResolvedLibraryStep& step, std::map<std::string, Buffer>& bufs);
