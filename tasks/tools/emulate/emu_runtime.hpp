// The emulator's runtime (emulate.cpp): kernel files compiled as C++ into shared objects, one copy
// of an object per resident block slot, and a plan run on the CPU with a fiber per CUDA thread.
// emu_main.cpp drives it over a task's shapes and files.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/plan.hpp"
#include "core/plan_check.hpp"
#include "core/task.hpp"
#include "emu_data.hpp"

typedef void (*emu_invoker)(void* fn, void** args, int nargs, const char* kinds);

struct Registered {
    void* fn;
    emu_invoker invoker;
};
using KernelRegistry = std::map<std::string, Registered>;

// Where compiled objects are cached ($EMU_CACHE, default /tmp/kforge-emulate-cache).
std::string cache_dir();
// The cached object of `file` at `point` (its name hashes the source, the defines and cuda_emu.hpp).
std::string so_path(const KernelFile& file, const ParamPoint& point);
// Compiles every (file, point) whose object is not cached yet, two at a time. Returns the jobs that
// failed with the compiler's log.
std::map<std::string, std::string> compile_all(const std::vector<std::pair<const KernelFile*, ParamPoint>>& jobs);
// Copy `k` of the object `so` (copy 0 is the file itself; copy k a duplicate, so its statics are its
// own), loaded on first use and kept. Throws std::runtime_error when dlopen fails.
KernelRegistry* kernel_copy(const std::string& so, size_t k);
// Runs `plan` over `bufs` (scratch is added, filled with 0xCD); `copy(s)` is the registry resident
// slot s runs; library steps run on the CPU in launch order (emu_library.hpp). Returns "" or what went wrong (a kernel missing, a canary overwritten); throws
// std::runtime_error on a deadlock or a livelock.
std::string run_plan(const Task& task, const ResolvedPlan& plan, std::map<std::string, Buffer>& bufs,
                     const std::function<KernelRegistry*(size_t)>& copy);
