// What a CUBIN says about itself, read from its ELF sections on the CPU (no GPU, no ptxas log).
//
// Two uses. (1) Resources: ptxas writes each kernel's register count and stack frame into the
// `.nv.info` section (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE) and gives its static shared memory a
// `.nv.shared.<kernel>` section of its own, so registers, local memory and shared memory are known
// wherever the CUBIN is, even when NVRTC's log carries no `-Xptxas=-v` report (seen on a driver-580
// machine). Spill byte counts are not in the CUBIN: resources read here say so (`from_cubin`).
// (2) Parameters: each kernel's parameter sizes (EIATTR_KPARAM_INFO), so a plan that passes the
// wrong number or size of arguments is a plan_error before any GPU work (launch_args.hpp).
// (3) Identity: two CUBINs whose code, attributes and data agree run the same on the GPU even when
// their debug sections differ, which they do whenever a comment above the kernel gains or loses a
// line (`-lineinfo` records line numbers). cubin_behaviour_hash() hashes everything but the debug
// sections, so the measurement memo (measurement_memo.hpp) recognises such twins.
//
// The reader trusts nothing: every offset and size is bounds-checked, and a CUBIN it cannot read
// yields no resources and a hash of all its bytes (which only ever under-recognises twins).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "evaluator/compile/compile.hpp"

namespace kforge {

struct CubinKernel {
    std::string symbol;                 // the ELF symbol (the lowered name)
    int registers = 0;
    int frame_bytes = 0;                // local memory per thread (stack frame, spills included)
    int static_smem_bytes = 0;          // its .nv.shared section, less the driver's reserved KiB
    int max_threads = 0;                // from __launch_bounds__ (EIATTR_MAX_THREADS); 0 when none
};

struct CubinReport {
    std::vector<CubinKernel> kernels;   // every function with a register count
    std::string problem;                // non-empty: the CUBIN could not be read (and why)
};

// Reads the kernels' resources from a CUBIN (ELF64, little-endian, as NVRTC writes it).
CubinReport read_cubin_resources(std::string_view cubin);

// Each kernel's parameters as the driver will copy them at launch: their sizes in bytes, by ordinal,
// from the EIATTR_KPARAM_INFO entries of the kernel's own `.nv.info.<symbol>` section. Keyed by ELF
// symbol. A kernel without such a section, or whose entries are inconsistent (a missing or repeated
// ordinal), is absent: its parameters are unknown, which is not the same as having none.
std::map<std::string, std::vector<uint32_t>> read_cubin_params(std::string_view cubin);

// 32 hex digits identifying what the GPU runs: the name, type, flags and bytes of every section
// except .debug_*, .nv_debug_* and their relocations. A CUBIN that cannot be parsed hashes whole.
std::string cubin_behaviour_hash(std::string_view cubin);

// Adds resources read from `result.cubin` for every kernel of `kernels` (plan names, mapped to
// symbols through result.lowered_names) that the ptxas report left out. Returns how many it added.
size_t add_cubin_resources(CompileResult& result, const std::vector<std::string>& kernels);

} // namespace kforge
