// kemu: runs a task's reference and seed kernels on the CPU (see cuda_emu.hpp) on the task's test
// shapes, for every param point, and compares them with an independent fp64 ground truth using the
// task's own check expressions. Also evaluates the "all zeros" and "copy of an input" candidates.
//
// usage: emulate TASK.json [--shapes tests|held|all] [--only FILE-SUBSTRING] [--points N]
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
#include "csr_gen.hpp"
#include "util/hash.hpp"
#include "util/text.hpp"

#ifndef EMU_DIR
#error "build with -DEMU_DIR=\"<path of tasks/tools/emulate>\""
#endif

using namespace kforge;

struct dim3 { unsigned x = 1, y = 1, z = 1; };
typedef void (*emu_invoker)(void* fn, void** args, int nargs, const char* kinds);
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


struct Registered {
    void* fn;
    emu_invoker invoker;
};
std::map<std::string, Registered>* g_registry = nullptr;
void emu_register(const char* name, void* fn, emu_invoker invoker) { (*g_registry)[name] = {fn, invoker}; }
}

// ---- compiling kernel files to shared objects ------------------------------------------------------
namespace {
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

std::string compile_command(const KernelFile& file, const ParamPoint& point, const std::string& out)
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
    return cmd + " " + glue + " -o " + out + ".tmp && mv " + out + ".tmp " + out + " 2> " + out + ".log";
}

void compile_all(const std::vector<std::pair<const KernelFile*, ParamPoint>>& jobs)
{
    std::vector<std::string> commands;
    for (const auto& [file, point] : jobs) {
        std::string out = so_path(*file, point);
        if (access(out.c_str(), F_OK) != 0)
            commands.push_back(compile_command(*file, point, out));
    }
    std::atomic<size_t> next{0};
    auto worker = [&] {
        for (size_t i; (i = next++) < commands.size();)
            if (std::system(commands[i].c_str()) != 0)
                fprintf(stderr, "compile failed: %s\n", commands[i].c_str());
    };
    std::thread a(worker), b(worker);
    a.join();
    b.join();
}

// ---- data -------------------------------------------------------------------------------------
constexpr size_t k_canary = 64;
struct Buffer {
    std::vector<unsigned char> bytes;   // canary + data + canary
    DType dtype = DType::u8;
    int64_t count = 0;
    unsigned char* data() { return bytes.data() + k_canary; }
    size_t size() const { return dtype_size(dtype); }
};

float bf16_round(double v)
{
    float f = (float)v;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&f, &u, 4);
    return f;
}

void store(Buffer& b, int64_t i, double v)
{
    unsigned char* p = b.data() + i * b.size();
    switch (b.dtype) {
    case DType::f32: { float f = (float)v; std::memcpy(p, &f, 4); break; }
    case DType::f64: std::memcpy(p, &v, 8); break;
    case DType::bf16: { float f = bf16_round(v); uint32_t u; std::memcpy(&u, &f, 4); uint16_t h = u >> 16; std::memcpy(p, &h, 2); break; }
    case DType::u8: case DType::i8: { uint8_t x = (uint8_t)(int64_t)v; std::memcpy(p, &x, 1); break; }
    case DType::i32: case DType::u32: { uint32_t x = (uint32_t)(int64_t)v; std::memcpy(p, &x, 4); break; }
    case DType::i64: case DType::u64: { int64_t x = (int64_t)v; std::memcpy(p, &x, 8); break; }
    default: throw std::runtime_error("store: dtype");
    }
}

double load(Buffer& b, int64_t i)
{
    unsigned char* p = b.data() + i * b.size();
    switch (b.dtype) {
    case DType::f32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::f64: { double d; std::memcpy(&d, p, 8); return d; }
    case DType::bf16: { uint16_t h; std::memcpy(&h, p, 2); uint32_t u = (uint32_t)h << 16; float f; std::memcpy(&f, &u, 4); return f; }
    case DType::u8: return *p;
    case DType::i8: return (int8_t)*p;
    case DType::i32: { int32_t x; std::memcpy(&x, p, 4); return x; }
    case DType::u32: { uint32_t x; std::memcpy(&x, p, 4); return x; }
    case DType::i64: case DType::u64: { int64_t x; std::memcpy(&x, p, 8); return (double)x; }
    default: throw std::runtime_error("load: dtype");
    }
}

Buffer make_buffer(DType dtype, int64_t count, unsigned char fill)
{
    Buffer b;
    b.dtype = dtype;
    b.count = count;
    b.bytes.assign(2 * k_canary + count * dtype_size(dtype), fill);
    std::memset(b.bytes.data(), 0xA5, k_canary);
    std::memset(b.bytes.data() + k_canary + count * dtype_size(dtype), 0xA5, k_canary);
    return b;
}

bool canaries_intact(const Buffer& b)
{
    for (size_t i = 0; i < k_canary; ++i)
        if (b.bytes[i] != 0xA5 || b.bytes[b.bytes.size() - 1 - i] != 0xA5)
            return false;
    return true;
}

std::map<std::string, Buffer> make_inputs(const Task& task, const Shape& shape, uint64_t seed)
{
    std::map<std::string, Buffer> bufs;
    ExprScope scope = task.scope_for(shape);
    std::map<std::string, CsrMatrix> csr;
    for (size_t t = 0; t < task.args.size(); ++t) {
        const ArgSpec& arg = task.args[t];
        if (!arg.is_tensor)
            continue;
        int64_t count = task.element_count(arg, shape);
        if (arg.intent == Intent::out) {
            bufs[arg.name] = make_buffer(arg.dtype, count, 0xFF);   // NaN / 0xFFFFFFFF poison
            continue;
        }
        Buffer b = make_buffer(arg.dtype, count, 0);
        const Generator& g = arg.gen;
        switch (g.dist) {
        case Generator::Dist::uniform:
            for (int64_t i = 0; i < count; ++i) store(b, i, g.low + (g.high - g.low) * U01(seed, t, i));
            break;
        case Generator::Dist::normal:
            for (int64_t i = 0; i < count; ++i) store(b, i, g.mean + g.std * Z(seed, t, i));
            break;
        case Generator::Dist::randint:
            for (int64_t i = 0; i < count; ++i) store(b, i, std::floor(g.low + (g.high - g.low) * U01(seed, t, i)));
            break;
        case Generator::Dist::bytes: {
            double hot = g.hot_fraction ? g.hot_fraction->eval_real(scope) : 0.0;
            uint64_t hot_value = U64(seed, t, 1ull << 62) & 255;
            for (int64_t i = 0; i < count; ++i)
                store(b, i, U01(seed, t ^ 0xabcdef, i) < hot ? (double)hot_value : (double)(U64(seed, t, i) & 255));
            break;
        }
        case Generator::Dist::constant:
            for (int64_t i = 0; i < count; ++i) store(b, i, g.value);
            break;
        case Generator::Dist::arange:
            for (int64_t i = 0; i < count; ++i) store(b, i, (double)i);
            break;
        case Generator::Dist::csr: {
            CsrSizes s = csr_sizes(task, arg, shape);
            size_t cols_t = 0;
            for (size_t u = 0; u < task.args.size(); ++u)
                if (task.args[u].gen.dist == Generator::Dist::csr_cols && task.args[u].gen.of == arg.name)
                    cols_t = u;
            csr[arg.name] = make_csr(seed, t, cols_t, s.rows, s.cols, s.nnz, s.sigma, s.window, s.group);
            for (int64_t i = 0; i < count; ++i) store(b, i, (double)csr[arg.name].row_ptr[i]);
            break;
        }
        case Generator::Dist::csr_cols:
            break;   // filled below, after its row pointers
        }
        for (const auto& plant : g.plants)
            store(b, plant.at.eval_int(scope), plant.value);
        bufs[arg.name] = std::move(b);
    }
    for (const auto& arg : task.args)
        if (arg.is_tensor && arg.intent != Intent::out && arg.gen.dist == Generator::Dist::csr_cols)
            for (int64_t i = 0; i < bufs[arg.name].count; ++i)
                store(bufs[arg.name], i, (double)csr.at(arg.gen.of).col[i]);
    return bufs;
}

// ---- ground truth (fp64, written independently of the CUDA references) -------------------------------
std::vector<double> values(std::map<std::string, Buffer>& b, const std::string& name)
{
    Buffer& buf = b.at(name);
    std::vector<double> v(buf.count);
    for (int64_t i = 0; i < buf.count; ++i)
        v[i] = load(buf, i);
    return v;
}

std::vector<double> ground_truth(const Task& task, const Shape& shape, std::map<std::string, Buffer>& in)
{
    auto S = [&](const char* n) { return shape.sizes.at(n); };
    const std::string& name = task.name;
    if (name == "axpy_f32") {
        auto x = values(in, "x"), y = values(in, "y");
        double a = (float)task.constants.at("alpha");
        std::vector<double> z(x.size());
        for (size_t i = 0; i < x.size(); ++i) z[i] = a * x[i] + y[i];
        return z;
    }
    if (name == "softmax_f32") {
        auto x = values(in, "x");
        int64_t M = S("M"), N = S("N");
        std::vector<double> y(x.size());
        for (int64_t r = 0; r < M; ++r) {
            double m = -INFINITY, s = 0;
            for (int64_t c = 0; c < N; ++c) m = std::max(m, x[r * N + c]);
            for (int64_t c = 0; c < N; ++c) s += std::exp(x[r * N + c] - m);
            for (int64_t c = 0; c < N; ++c) y[r * N + c] = std::exp(x[r * N + c] - m) / s;
        }
        return y;
    }
    if (name == "layernorm_f32") {
        auto x = values(in, "x"), g = values(in, "gamma"), b = values(in, "beta");
        int64_t M = S("M"), N = S("N");
        double eps = (float)task.constants.at("eps");
        std::vector<double> y(x.size());
        for (int64_t r = 0; r < M; ++r) {
            double mean = 0, var = 0;
            for (int64_t c = 0; c < N; ++c) mean += x[r * N + c];
            mean /= N;
            for (int64_t c = 0; c < N; ++c) var += (x[r * N + c] - mean) * (x[r * N + c] - mean);
            var /= N;
            for (int64_t c = 0; c < N; ++c) y[r * N + c] = (x[r * N + c] - mean) / std::sqrt(var + eps) * g[c] + b[c];
        }
        return y;
    }
    if (name == "rmsnorm_bf16") {
        auto x = values(in, "x"), w = values(in, "w");
        int64_t M = S("M"), N = S("N");
        double eps = (float)task.constants.at("eps");
        std::vector<double> y(x.size());
        for (int64_t r = 0; r < M; ++r) {
            double ms = 0;
            for (int64_t c = 0; c < N; ++c) ms += x[r * N + c] * x[r * N + c];
            double rs = 1 / std::sqrt(ms / N + eps);
            for (int64_t c = 0; c < N; ++c) y[r * N + c] = x[r * N + c] * rs * w[c];
        }
        return y;
    }
    if (name == "reduce_sum_f32") {
        double s = 0;
        for (double v : values(in, "x")) s += v;
        return {s};
    }
    if (name == "transpose_f32") {
        auto x = values(in, "in");
        int64_t M = S("M"), N = S("N");
        std::vector<double> y(x.size());
        for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) y[n * M + m] = x[m * N + n];
        return y;
    }
    if (name == "sgemm_f32" || name == "hgemm_bf16") {
        bool tn = name == "hgemm_bf16";
        auto A = values(in, "A"), B = values(in, "B");
        int64_t M = S("M"), N = S("N"), K = S("K");
        std::vector<double> C(M * N);
        for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
                double s = 0;
                for (int64_t k = 0; k < K; ++k) s += A[m * K + k] * (tn ? B[n * K + k] : B[k * N + n]);
                C[m * N + n] = s;
            }
        return C;
    }
    if (name == "spmv_csr_f32") {
        auto rp = values(in, "row_ptr"), ci = values(in, "col_idx"), v = values(in, "vals"), x = values(in, "x");
        int64_t R = S("R");
        std::vector<double> y(R);
        for (int64_t r = 0; r < R; ++r) {
            double s = 0;
            for (int64_t k = (int64_t)rp[r]; k < (int64_t)rp[r + 1]; ++k) s += v[k] * x[(int64_t)ci[k]];
            y[r] = s;
        }
        return y;
    }
    if (name == "jacobi2d_f32") {
        auto u = values(in, "u_in");
        int64_t NX = S("NX"), NY = S("NY"), T = S("T");
        std::vector<double> w = u;
        for (int64_t t = 0; t < T; ++t) {
            for (int64_t i = 1; i + 1 < NY; ++i)
                for (int64_t j = 1; j + 1 < NX; ++j)
                    w[i * NX + j] = 0.25 * (u[(i - 1) * NX + j] + u[(i + 1) * NX + j] + u[i * NX + j - 1] + u[i * NX + j + 1]);
            std::swap(u, w);
        }
        return u;
    }
    if (name == "histogram_u8") {
        std::vector<double> h(256, 0);
        for (double v : values(in, "data")) h[(int)v] += 1;
        return h;
    }
    if (name == "scan_u32") {
        auto x = values(in, "in");
        std::vector<double> y(x.size());
        uint32_t s = 0;
        for (size_t i = 0; i < x.size(); ++i) { s += (uint32_t)x[i]; y[i] = s; }
        return y;
    }
    throw std::runtime_error("no ground truth for " + name);
}

// ---- checking -----------------------------------------------------------------------------------
struct CheckResult {
    bool ok = true;
    double worst = 0;   // max |got - ref| / (atol + rtol |ref|), or mismatches for exact
    std::string first;
};

CheckResult check_output(const Task& task, const Shape& shape, const ArgSpec& out, Buffer& got,
                         const std::vector<double>& truth, std::map<std::string, Buffer>& inputs)
{
    CheckResult r;
    ExprScope scope = task.scope_for(shape);
    std::vector<double> ref(truth.size());
    Buffer rounded = make_buffer(out.dtype, (int64_t)truth.size(), 0);
    double max_abs = 0;
    for (size_t i = 0; i < truth.size(); ++i) {
        store(rounded, (int64_t)i, truth[i]);
        ref[i] = load(rounded, (int64_t)i);
        max_abs = std::max(max_abs, std::fabs(ref[i]));
    }
    scope.reals["max_abs_ref"] = max_abs;
    for (const auto& arg : task.args)
        if (arg.is_tensor && arg.intent != Intent::out) {
            double s = 0;
            for (double v : values(inputs, arg.name)) s += std::fabs(v);
            scope.reals["sum_abs_" + arg.name] = s;
        }
    bool exact = out.check->metric == CheckSpec::Metric::exact;
    double atol = exact ? 0 : out.check->atol.eval_real(scope), rtol = exact ? 0 : out.check->rtol.eval_real(scope);
    for (size_t i = 0; i < ref.size(); ++i) {
        double g = load(got, (int64_t)i);
        bool bad;
        double ratio;
        if (exact) {
            bad = std::memcmp(got.data() + i * got.size(), rounded.data() + i * got.size(), got.size()) != 0;
            ratio = bad ? 1e9 : 0;
        } else {
            double tol = atol + rtol * std::fabs(ref[i]);
            bad = !(std::fabs(g - ref[i]) <= tol);
            ratio = std::isnan(g) ? 1e9 : std::fabs(g - ref[i]) / tol;
        }
        r.worst = std::max(r.worst, ratio);
        if (bad && r.ok) {
            r.ok = false;
            r.first = "index " + std::to_string(i) + ": expected " + std::to_string(ref[i]) + " got " + std::to_string(g);
        }
    }
    return r;
}

// ---- running a plan ------------------------------------------------------------------------------
// copy(s) is the kernel registry of the object copy that resident slot s runs (loaded on demand).
std::string run_plan(const Task& task, const ResolvedPlan& plan, std::map<std::string, Buffer>& bufs,
                     const std::function<std::map<std::string, Registered>*(size_t)>& copy)
{
    for (const auto& s : plan.scratch)
        bufs[s.name] = make_buffer(DType::u8, s.bytes, 0xCD);   // scratch is not initialised
    for (const auto& launch : plan.launches) {
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
} // namespace

int main(int argc, char** argv)
{
    std::string which = "tests", only;
    size_t max_points = 1000;
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--shapes") which = argv[++i];
        else if (a == "--only") only = argv[++i];
        else if (a == "--points") max_points = std::stoul(argv[++i]);
    }
    std::filesystem::create_directories(cache_dir());
    Task task = load_task(argv[1]);
    std::vector<Shape> shapes;
    if (which == "tests" || which == "all") shapes.insert(shapes.end(), task.tests.begin(), task.tests.end());
    if (which == "held" || which == "all") shapes.insert(shapes.end(), task.held_out.begin(), task.held_out.end());
    std::vector<const KernelFile*> files{&task.reference};
    for (const auto& s : task.seeds) files.push_back(&s);
    std::vector<std::pair<const KernelFile*, ParamPoint>> jobs;
    for (const KernelFile* f : files)
        if (only.empty() || f->path.string().find(only) != std::string::npos)
            for (const auto& p : enumerate_param_points(f->plan, max_points))
                jobs.push_back({f, p});
    compile_all(jobs);

    int failures = 0;
    uint64_t secret = getenv("SECRET") ? std::stoull(getenv("SECRET")) : 0;
    for (const Shape& shape : shapes) {
        auto t0 = std::chrono::steady_clock::now();
        uint64_t seed = shape.seed * 1000003 + secret;
        auto pristine = make_inputs(task, shape, seed);
        std::map<std::string, std::vector<double>> truth;
        for (const auto& arg : task.args)
            if (arg.is_tensor && arg.intent != Intent::in)
                truth[arg.name] = ground_truth(task, shape, pristine);
        // Built-in bad candidates must fail.
        for (const auto& arg : task.args) {
            if (!arg.is_tensor || arg.intent == Intent::in)
                continue;
            Buffer zeros = make_buffer(arg.dtype, pristine[arg.name].count, 0);
            CheckResult z = check_output(task, shape, arg, zeros, truth[arg.name], pristine);
            std::string copy_note;
            for (const auto& src : task.args)
                if (src.is_tensor && src.intent == Intent::in && src.dtype == arg.dtype &&
                    pristine[src.name].count == pristine[arg.name].count) {
                    CheckResult c = check_output(task, shape, arg, pristine[src.name], truth[arg.name], pristine);
                    copy_note += " copy(" + src.name + ")=" + (c.ok ? "PASSES(!)" : "rejected");
                }
            printf("[%s] bad candidates for %s: zeros=%s%s\n", shape.label.c_str(), arg.name.c_str(),
                   z.ok ? "PASSES(!)" : "rejected", copy_note.c_str());
        }
        for (const auto& [file, point] : jobs) {
            // Each shared object is opened once per resident slot (copy k of the file for slot k, so
            // every slot has its own statics), on demand, and kept: its static constructors register
            // the kernels.
            static std::map<std::string, std::vector<std::map<std::string, Registered>>> loaded;
            std::string so = so_path(*file, point);
            auto& copies = loaded[so];
            copies.reserve(1024);   // registries are handed out by address
            auto copy = [&](size_t k) -> std::map<std::string, Registered>* {
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
            };
            try {
                copy(0);
            } catch (const std::exception& e) {
                printf("FAIL %s %s: %s\n", file->path.filename().c_str(), describe_param_point(point).c_str(), e.what());
                ++failures;
                continue;
            }
            auto bufs = pristine;
            std::string problem;
            try {
                problem = run_plan(task, resolve_plan(task, file->plan, shape, point), bufs, copy);
            } catch (const std::exception& e) {
                problem = e.what();
            }
            double worst = 0;
            for (const auto& arg : task.args) {
                if (!arg.is_tensor || !problem.empty())
                    continue;
                if (arg.intent == Intent::in) {
                    if (bufs[arg.name].bytes != pristine[arg.name].bytes)
                        problem = "input '" + arg.name + "' was modified";
                    continue;
                }
                CheckResult r = check_output(task, shape, arg, bufs[arg.name], truth[arg.name], pristine);
                worst = std::max(worst, r.worst);
                if (!r.ok)
                    problem = arg.name + " " + r.first;
            }
            printf("%s [%s] %s %s: %s (worst err/tol %.3g)\n", problem.empty() ? "ok  " : "FAIL", shape.label.c_str(),
                   file->path.filename().c_str(), describe_param_point(point).c_str(),
                   problem.empty() ? "correct" : problem.c_str(), worst);
            failures += !problem.empty();
        }
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        fprintf(stderr, "[%s] %.1f s\n", shape.label.c_str(), secs);
    }
    printf("%s: %d failure(s)\n", task.name.c_str(), failures);
    return failures ? 1 : 0;
}
