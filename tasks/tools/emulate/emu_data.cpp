// The emulator's data side; see emu_data.hpp. Inputs follow the task spec's generators (the
// generators' draws in draws.hpp, CSR structure in csr_gen.hpp); the ground truth is fp64 written
// from each task's description, not from its CUDA reference, so a shared mistake cannot hide.
#include "emu_data.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "csr_gen.hpp"
#include "util/hash.hpp"
#include "util/text.hpp"
static float bf16_round(double v)
{
    float f = (float)v;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&f, &u, 4);
    return f;
}

void store_element(unsigned char* p, DType dtype, double v)
{
    switch (dtype) {
    case DType::f32: { float f = (float)v; std::memcpy(p, &f, 4); break; }
    case DType::f64: std::memcpy(p, &v, 8); break;
    case DType::bf16: { float f = bf16_round(v); uint32_t u; std::memcpy(&u, &f, 4); uint16_t h = u >> 16; std::memcpy(p, &h, 2); break; }
    case DType::f16: { _Float16 h = (_Float16)v; std::memcpy(p, &h, 2); break; }
    case DType::u8: case DType::i8: { uint8_t x = (uint8_t)(int64_t)v; std::memcpy(p, &x, 1); break; }
    case DType::i32: case DType::u32: { uint32_t x = (uint32_t)(int64_t)v; std::memcpy(p, &x, 4); break; }
    case DType::i64: case DType::u64: { int64_t x = (int64_t)v; std::memcpy(p, &x, 8); break; }
    default: throw std::runtime_error("store: dtype");
    }
}

static void store(Buffer& b, int64_t i, double v) { store_element(b.data() + i * b.size(), b.dtype, v); }

double load_element(const unsigned char* p, DType dtype)
{
    switch (dtype) {
    case DType::f32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::f64: { double d; std::memcpy(&d, p, 8); return d; }
    case DType::bf16: { uint16_t h; std::memcpy(&h, p, 2); uint32_t u = (uint32_t)h << 16; float f; std::memcpy(&f, &u, 4); return f; }
    case DType::f16: { _Float16 h; std::memcpy(&h, p, 2); return (double)h; }
    case DType::u8: return *p;
    case DType::i8: return (int8_t)*p;
    case DType::i32: { int32_t x; std::memcpy(&x, p, 4); return x; }
    case DType::u32: { uint32_t x; std::memcpy(&x, p, 4); return x; }
    case DType::i64: case DType::u64: { int64_t x; std::memcpy(&x, p, 8); return (double)x; }
    default: throw std::runtime_error("load: dtype");
    }
}

static double load(Buffer& b, int64_t i) { return load_element(b.data() + i * b.size(), b.dtype); }

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
std::vector<double> buffer_values(Buffer& buf)
{
    std::vector<double> v(buf.count);
    for (int64_t i = 0; i < buf.count; ++i)
        v[i] = load(buf, i);
    return v;
}

static std::vector<double> values(std::map<std::string, Buffer>& b, const std::string& name)
{
    return buffer_values(b.at(name));
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
    if (name == "gelu_bf16") {
        auto x = values(in, "x");
        std::vector<double> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * 0.5 * std::erfc(-x[i] / std::sqrt(2.0));
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
