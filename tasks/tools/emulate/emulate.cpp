// kemu's runtime: CUDA kernels run on the CPU (see cuda_emu.hpp). Each kernel file is compiled as
// C++ into a shared object per param point; the threads of a block are fibers that switch only at
// barriers, warp operations and __nanosleep; several blocks are resident at once, each running its
// own copy of the object so that static __shared__ variables are per block. emu_main.cpp drives it.
//
// Build and run: see tasks/tools/README.md. EMU_DIR (compile-time) is this folder; compiled kernels
// are cached in $EMU_CACHE (default /tmp/kforge-emulate-cache).
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/plan.hpp"
#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "core/task.hpp"
#include "emu_library.hpp"
#include "emu_runtime.hpp"
#include "util/hash.hpp"
#include "util/text.hpp"

#ifndef EMU_DIR
#error "build with -DEMU_DIR=\"<path of tasks/tools/emulate>\""
#endif

using namespace kforge;

struct dim3 { unsigned x = 1, y = 1, z = 1; };
extern "C" {
dim3 emu_thread_idx, emu_block_idx, emu_block_dim, emu_grid_dim;
void emu_switch(void** save_sp, void* to_sp);
}

// ---- fibers -------------------------------------------------------------------------------------
asm(R"(
.text
.globl emu_switch
.type emu_switch,@function
emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
)");

namespace {
enum State { runnable, at_block, at_warp, yielded, done };
struct Fiber {
    void* sp = nullptr;
    char* stack = nullptr;
    dim3 idx;
    int linear = 0;
    State state = runnable;
    uint64_t post = 0, result = 0;
    int src = -1;
};
constexpr size_t k_stack = 256 * 1024;
void* g_sched_sp = nullptr;
Fiber* g_cur = nullptr;
std::string g_error;

struct Block;
Block* g_cur_block = nullptr;   // the block being stepped
void run_block_body();

void fiber_entry()
{
    run_block_body();
    g_cur->state = done;
    emu_switch(&g_cur->sp, g_sched_sp);
    abort();
}

// ---- resident blocks ------------------------------------------------------------------------------
// Several blocks are resident at once (EMU_RESIDENT, default 4), like SMs running blocks side by side;
// the scheduler steps one block at a time (each runnable fiber of it runs until a barrier, a warp
// operation, a yield or its end) and picks the next block round-robin, or at random when
// EMU_SCHED_SEED is set. Kernels whose blocks wait on one another (a decoupled look-back, a row split
// over several blocks exchanging partials) spin with __nanosleep, which yields here, so the blocks they
// wait on get to run. Each resident slot calls the kernel from its own copy of the kernel object, so
// static __shared__ variables are private to the block in that slot (and, as on a GPU, not cleared
// between the blocks that reuse it).
struct Block {
    std::vector<Fiber> fibers;
    std::function<void()> body;
    dim3 idx;
    unsigned threads = 0;
    bool active = false;
};

void run_block_body() { g_cur_block->body(); }

enum class Step { progressed, yielded, finished };

void start_block(Block& b, unsigned threads, dim3 idx)
{
    b.idx = idx;
    b.threads = threads;
    b.active = true;
    if (b.fibers.size() < threads)
        b.fibers.resize(threads);
    for (unsigned t = 0; t < threads; ++t) {
        Fiber& f = b.fibers[t];
        if (!f.stack)
            f.stack = static_cast<char*>(aligned_alloc(64, k_stack));
        char* top = f.stack + k_stack;
        void** sp = reinterpret_cast<void**>(top - 64);
        std::memset(sp, 0, 64);
        sp[6] = reinterpret_cast<void*>(&fiber_entry);
        f.sp = sp;
        f.linear = (int)t;
        f.idx.x = t % emu_block_dim.x;
        f.idx.y = (t / emu_block_dim.x) % emu_block_dim.y;
        f.idx.z = t / (emu_block_dim.x * emu_block_dim.y);
        f.state = runnable;
    }
}

// One step of block b: run its runnable fibers, then release a block barrier or warp operations
// that every live thread (lane) has reached.
Step step_block(Block& b)
{
    g_cur_block = &b;
    emu_block_idx = b.idx;
    std::vector<Fiber>& fibers = b.fibers;
    const unsigned threads = b.threads;
    for (unsigned t = 0; t < threads; ++t) {
        Fiber& f = fibers[t];
        if (f.state != runnable)
            continue;
        g_cur = &f;
        emu_thread_idx = f.idx;
        emu_switch(&g_sched_sp, f.sp);
    }
    unsigned live = 0, at_block_n = 0, yielded_n = 0;
    for (unsigned t = 0; t < threads; ++t) {
        live += fibers[t].state != done;
        at_block_n += fibers[t].state == at_block;
        yielded_n += fibers[t].state == yielded;
    }
    if (live == 0)
        return Step::finished;
    if (at_block_n == live) {
        for (unsigned t = 0; t < threads; ++t)
            if (fibers[t].state == at_block)
                fibers[t].state = runnable;
        return Step::progressed;
    }
    bool released = false;
    for (unsigned w = 0; w * 32 < threads; ++w) {
        unsigned lo = w * 32, hi = std::min(threads, lo + 32), live_w = 0, waiting = 0;
        for (unsigned t = lo; t < hi; ++t) {
            live_w += fibers[t].state != done;
            waiting += fibers[t].state == at_warp;
        }
        if (live_w == 0 || waiting != live_w)
            continue;
        for (unsigned t = lo; t < hi; ++t) {
            Fiber& f = fibers[t];
            if (f.state != at_warp)
                continue;
            unsigned s = lo + (unsigned)f.src;
            f.result = (f.src >= 0 && f.src < 32 && s < hi && fibers[s].state == at_warp) ? fibers[s].post : f.post;
        }
        for (unsigned t = lo; t < hi; ++t)
            if (fibers[t].state == at_warp)
                fibers[t].state = runnable;
        released = true;
    }
    if (yielded_n) {
        for (unsigned t = 0; t < threads; ++t)
            if (fibers[t].state == yielded)
                fibers[t].state = runnable;
        return released ? Step::progressed : Step::yielded;
    }
    if (!released) {
        g_error = "deadlock: threads wait at different barriers (divergent __syncthreads or warp op)";
        throw std::runtime_error(g_error);
    }
    return Step::progressed;
}

uint64_t next_random(uint64_t& state)
{
    state += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

size_t env_count(const char* name, size_t fallback)
{
    const char* env = getenv(name);
    return env ? std::max(1ul, std::stoul(env)) : fallback;
}

// Runs every block of the launch, blocks started in linear order (x fastest) as slots free up.
// body_for(s) gives the function that runs the kernel (from kernel-object copy s) for slot s. It
// starts with EMU_RESIDENT slots (default 4); when every resident block only spins and blocks are
// still waiting to start, it adds a slot (up to EMU_RESIDENT_MAX, default 64), as a GPU with more
// SMs would have them resident already: a kernel whose blocks wait on up to that many others runs.
void run_grid(dim3 grid, unsigned threads, const std::function<std::function<void()>(size_t)>& body_for)
{
    static std::vector<Block> slots;
    const char* seed_env = getenv("EMU_SCHED_SEED");
    const size_t max_resident = std::max(env_count("EMU_RESIDENT_MAX", 64), env_count("EMU_RESIDENT", 4));
    size_t resident = env_count("EMU_RESIDENT", 4);
    bool random = seed_env != nullptr;
    static uint64_t rng = 0;
    if (random && rng == 0)
        rng = std::stoull(seed_env) + 1;
    if (slots.size() < max_resident)
        slots.resize(max_resident);
    for (size_t s = 0; s < resident; ++s) {
        slots[s].body = body_for(s);
        slots[s].active = false;
    }
    const uint64_t total = (uint64_t)grid.x * grid.y * grid.z;
    uint64_t next = 0, idle_steps = 0;
    size_t turn = 0;
    for (;;) {
        size_t active = 0;
        for (size_t s = 0; s < resident; ++s) {
            if (!slots[s].active && next < total) {
                dim3 idx;
                idx.x = (unsigned)(next % grid.x);
                idx.y = (unsigned)((next / grid.x) % grid.y);
                idx.z = (unsigned)(next / ((uint64_t)grid.x * grid.y));
                ++next;
                start_block(slots[s], threads, idx);
            }
            active += slots[s].active;
        }
        if (active == 0)
            break;
        size_t pick = random ? next_random(rng) % resident : turn++ % resident;
        while (!slots[pick].active)
            pick = (pick + 1) % resident;
        Step step = step_block(slots[pick]);
        if (step == Step::finished)
            slots[pick].active = false;
        idle_steps = step == Step::yielded ? idle_steps + 1 : 0;
        if (idle_steps >= 8 * resident && next < total && resident < max_resident) {
            slots[resident].body = body_for(resident);
            slots[resident].active = false;
            ++resident;
            idle_steps = 0;
        }
        if (idle_steps > 1000000) {
            g_error = "livelock: every resident block keeps waiting (on a block that never runs? " +
                      std::to_string(resident) + " blocks resident)";
            throw std::runtime_error(g_error);
        }
    }
}
} // namespace

extern "C" {
void emu_block_barrier()
{
    g_cur->state = at_block;
    emu_switch(&g_cur->sp, g_sched_sp);
}
uint64_t emu_warp_exchange(uint64_t bits, int src)
{
    g_cur->post = bits;
    g_cur->src = src;
    g_cur->state = at_warp;
    emu_switch(&g_cur->sp, g_sched_sp);
    return g_cur->result;
}
void emu_warp_barrier() { emu_warp_exchange(0, -1); }
void emu_yield()
{
    g_cur->state = yielded;
    emu_switch(&g_cur->sp, g_sched_sp);
}

KernelRegistry* g_registry = nullptr;
void emu_register(const char* name, void* fn, emu_invoker invoker) { (*g_registry)[name] = {fn, invoker}; }
}

// ---- compiling kernel files to shared objects ------------------------------------------------------
std::string cache_dir()
{
    const char* dir = getenv("EMU_CACHE");
    return dir ? dir : "/tmp/kforge-emulate-cache";
}

std::string so_path(const KernelFile& file, const ParamPoint& point)
{
    std::string defines;
    for (const auto& [k, v] : point)
        defines += " -D" + k + "=" + std::to_string(v);
    Hasher h;
    h.add(file.source).add(defines).add(read_file(EMU_DIR "/cuda_emu.hpp"));
    return cache_dir() + "/" + h.hex().substr(0, 24) + ".so";
}

static std::string compile_command(const KernelFile& file, const ParamPoint& point, const std::string& out)
{
    std::string glue = out + ".glue.cpp";
    std::ofstream g(glue);
    // Dynamic shared memory: `extern __shared__ T name[];` would read `extern static` under the
    // emulator's `#define __shared__ static`, so the kernel is compiled from a copy that says only
    // `extern`, and the glue defines each such array with room for the largest allocation a plan may
    // ask for (only one block exists at a time, as for static shared memory).
    static const std::regex dynamic_shared(R"(extern\s+__shared__\s+(__align__\s*\(\s*\d+\s*\)\s*)?([A-Za-z_][\w:]*)\s+([A-Za-z_]\w*)\s*\[\s*\]\s*;)");
    std::string source = file.source;
    std::set<std::string> defined;
    std::string definitions;
    for (std::sregex_iterator it(source.begin(), source.end(), dynamic_shared), end; it != end; ++it)
        if (defined.insert((*it)[3]).second)
            definitions += "alignas(128) " + (*it)[2].str() + " " + (*it)[3].str() + "[232448 / sizeof(" + (*it)[2].str() + ")];\n";
    std::string included = std::filesystem::absolute(file.path).string();
    if (!definitions.empty()) {
        included = out + ".src.cu";
        std::ofstream(included) << std::regex_replace(source, std::regex(R"(extern\s+__shared__)"), "extern");
    }
    g << "#include \"" << included << "\"\n" << definitions;
    int i = 0;
    for (const auto& name : find_kernel_names(file.source))
        g << "static emu::Registrar r" << i++ << "(\"" << name << "\", &" << name << ");\n";
    g.close();
    std::string cmd = std::string("g++ -std=c++17 -O1 -fPIC -shared -fno-gnu-unique -w -include ") + EMU_DIR "/cuda_emu.hpp -I" EMU_DIR "/fakeinc";
    for (const auto& [k, v] : point)
        cmd += " -D" + k + "=" + std::to_string(v);
    return cmd + " " + glue + " -o " + out + ".tmp 2> " + out + ".log && mv " + out + ".tmp " + out;
}

std::map<std::string, std::string> compile_all(const std::vector<std::pair<const KernelFile*, ParamPoint>>& jobs)
{
    std::vector<std::string> commands, outputs;
    for (const auto& [file, point] : jobs) {
        std::string out = so_path(*file, point);
        if (access(out.c_str(), F_OK) != 0 && std::find(outputs.begin(), outputs.end(), out) == outputs.end()) {
            commands.push_back(compile_command(*file, point, out));
            outputs.push_back(out);
        }
    }
    std::map<std::string, std::string> failed;
    std::mutex mutex;
    std::atomic<size_t> next{0};
    auto worker = [&] {
        for (size_t i; (i = next++) < commands.size();)
            if (std::system(commands[i].c_str()) != 0) {
                std::ifstream in(outputs[i] + ".log");
                std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
                std::lock_guard lock(mutex);
                failed[outputs[i]] = log;
            }
    };
    std::thread a(worker), b(worker);
    a.join();
    b.join();
    return failed;
}

KernelRegistry* kernel_copy(const std::string& so, size_t k)
{
    // Each object is opened once per resident slot and kept: its static constructors register the
    // kernels into g_registry. Registries are handed out by address, so none may move.
    static std::map<std::string, std::vector<KernelRegistry>> loaded;
    auto& copies = loaded[so];
    copies.reserve(1024);
    while (copies.size() <= k) {
        std::string path = so;
        if (!copies.empty()) {
            path = so + ".slot" + std::to_string(copies.size()) + ".so";
            std::filesystem::copy_file(so, path, std::filesystem::copy_options::overwrite_existing);
        }
        copies.emplace_back();
        g_registry = &copies.back();
        if (!dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))
            throw std::runtime_error(std::string("dlopen: ") + dlerror());
    }
    return &copies[k];
}

// ---- running a plan ------------------------------------------------------------------------------
std::string run_plan(const Task& task, const ResolvedPlan& plan, std::map<std::string, Buffer>& bufs,
                     const std::function<KernelRegistry*(size_t)>& copy)
{
    for (const auto& s : plan.scratch)
        bufs[s.name] = make_buffer(DType::u8, s.bytes, 0xCD);   // scratch is not initialised
    for (const auto& launch : plan.launches) {
        if (launch.library) { // cuBLASLt or cuDNN on the GPU: computed on the CPU (emu_library.cpp)
            run_library_step(*launch.library, bufs);
            continue;
        }
        if (!copy(0)->count(launch.kernel))
            return "kernel not registered: " + launch.kernel;
        std::vector<std::vector<unsigned char>> scalars;
        std::vector<void*> ptrs;
        std::vector<void*> args;
        std::string kinds;
        scalars.reserve(launch.args.size());
        ptrs.reserve(launch.args.size());
        for (const auto& a : launch.args) {
            if (a.kind == ResolvedArg::Kind::scalar) {
                scalars.push_back(scalar_bytes(a));
                args.push_back(scalars.back().data());
                kinds += (char)('0' + scalars.back().size());
            } else {
                ptrs.push_back(bufs.at(a.name).data());
                args.push_back(&ptrs.back());
                kinds += 'p';
            }
        }
        emu_block_dim = {launch.block[0], launch.block[1], launch.block[2]};
        emu_grid_dim = {launch.grid[0], launch.grid[1], launch.grid[2]};
        unsigned threads = launch.block[0] * launch.block[1] * launch.block[2];
        run_grid(emu_grid_dim, threads, [&](size_t slot) -> std::function<void()> {
            Registered k = copy(slot)->at(launch.kernel);
            return [&, k] { k.invoker(k.fn, args.data(), (int)args.size(), kinds.c_str()); };
        });
    }
    for (auto& [name, b] : bufs)
        if (!canaries_intact(b))
            return "canary around '" + name + "' overwritten";
    return "";
}

