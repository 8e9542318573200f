// Matmul self-test problems: each transpose pair, batches (packed, padded, a shared weight),
// alpha and beta (C apart from D and C in place of D), a bias, each epilogue, f32, bf16 and f16.
//
// The sizes are odd or one past a power of two so that no algorithm sees only tile multiples; a
// padded batch stride leaves its matrices only 4-byte aligned, which the heuristic must be told.
#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "verify.hpp"

namespace kforge::vendor {
namespace {

struct MatmulCase {
    const char* label;
    int64_t m, n, k, batch;
    bool transpose_a, transpose_b;
    int64_t pad_a, pad_b;        // extra elements between batch matrices
    bool shared_b;               // stride_b = 0: one B for every batch index
    double alpha, beta;
    bool has_c, c_in_d, has_bias;
    int epilogue;
    const char* in_dtype;
    const char* out_dtype;
    unsigned long long workspace;
};

constexpr unsigned long long k_mib = 1ull << 20;

const MatmulCase k_matmul_cases[] = {
    {"NN", 37, 29, 53, 1, false, false, 0, 0, false, 1, 0, false, false, false, KFORGE_EPILOGUE_NONE, "f32", "f32", 0},
    {"NT Linear bias relu", 64, 48, 96, 1, false, true, 0, 0, false, 1, 0, false, false, true, KFORGE_EPILOGUE_RELU, "f32",
     "f32", 0},
    {"TN alpha", 33, 40, 17, 1, true, false, 0, 0, false, 0.5, 0, false, false, false, KFORGE_EPILOGUE_NONE, "f32", "f32",
     0},
    {"TT gelu", 19, 65, 31, 1, true, true, 0, 0, false, 1, 0, false, false, false, KFORGE_EPILOGUE_GELU_TANH, "f32", "f32",
     0},
    {"NT bias gelu", 45, 33, 70, 1, false, true, 0, 0, false, 1, 0, false, false, true, KFORGE_EPILOGUE_GELU_TANH, "f32",
     "f32", 0},
    {"NN bias", 17, 129, 9, 1, false, false, 0, 0, false, 1, 0, false, false, true, KFORGE_EPILOGUE_NONE, "f32", "f32", 0},
    {"batched NN relu", 21, 35, 27, 3, false, false, 0, 0, false, 1, 0, false, false, false, KFORGE_EPILOGUE_RELU, "f32",
     "f32", 0},
    {"batched padded TN", 23, 18, 41, 4, true, false, 5, 3, false, 1, 0, false, false, false, KFORGE_EPILOGUE_NONE, "f32",
     "f32", 0},
    {"batched shared weight NT bias", 30, 24, 50, 3, false, true, 0, 0, true, 1, 0, false, false, true,
     KFORGE_EPILOGUE_NONE, "f32", "f32", 0},
    {"beta with C", 26, 31, 44, 2, false, false, 0, 0, false, 1.5, -0.75, true, false, false, KFORGE_EPILOGUE_NONE, "f32",
     "f32", 0},
    {"beta in place (C is D) bias relu", 40, 36, 25, 1, false, true, 0, 0, false, 1, 1, true, true, true,
     KFORGE_EPILOGUE_RELU, "f32", "f32", 0},
    {"workspace 32 MiB", 256, 192, 1024, 1, false, true, 0, 0, false, 1, 0, false, false, true, KFORGE_EPILOGUE_NONE,
     "f32", "f32", 32 * k_mib},
    {"bf16 NT bias relu", 64, 72, 136, 1, false, true, 0, 0, false, 1, 0, false, false, true, KFORGE_EPILOGUE_RELU, "bf16",
     "bf16", 32 * k_mib},
    {"bf16 to f32 batched NN", 33, 48, 80, 2, false, false, 0, 0, false, 1, 0, false, false, false, KFORGE_EPILOGUE_NONE,
     "bf16", "f32", 0},
    {"f16 NT bias gelu", 48, 40, 64, 1, false, true, 0, 0, false, 1, 0, false, false, true, KFORGE_EPILOGUE_GELU_TANH,
     "f16", "f16", 0},
};

// Random values in [-1, 1) as stored in `dtype`: the bytes for the device, the values for the host.
struct Values {
    HostTensor tensor;
    std::vector<double> host;
};

Values random_values(Rng& rng, const std::string& name, const std::string& dtype, int64_t count)
{
    std::vector<float> floats = uniform_floats(rng, static_cast<size_t>(count), -1, 1);
    std::vector<double> host(floats.size());
    if (dtype == "f32") {
        for (size_t i = 0; i < floats.size(); ++i)
            host[i] = floats[i];
        return Values{host_input(name, dtype, floats), std::move(host)};
    }
    std::vector<uint16_t> halves(floats.size());
    for (size_t i = 0; i < floats.size(); ++i) {
        halves[i] = dtype == "bf16" ? to_bf16(floats[i]) : to_f16(floats[i]);
        host[i] = dtype == "bf16" ? from_bf16(halves[i]) : from_f16(halves[i]);
    }
    return Values{host_input(name, dtype, halves), std::move(host)};
}

double gelu_tanh(double x)
{
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

StepProblem matmul_problem(const MatmulCase& mc, Rng& rng)
{
    const int64_t m = mc.m, n = mc.n, k = mc.k, batch = mc.batch;
    KforgeMatmulStep s{};
    s.m = m;
    s.n = n;
    s.k = k;
    s.batch = batch;
    s.stride_a = m * k + mc.pad_a;
    s.stride_b = mc.shared_b ? 0 : k * n + mc.pad_b;
    s.stride_d = m * n;
    s.stride_c = mc.c_in_d ? s.stride_d : m * n + 11; // a C apart from D has gaps between its matrices
    s.transpose_a = mc.transpose_a;
    s.transpose_b = mc.transpose_b;
    s.alpha = mc.alpha;
    s.beta = mc.beta;
    s.has_c = mc.has_c;
    s.has_bias = mc.has_bias;
    s.epilogue = mc.epilogue;
    s.a_dtype = s.b_dtype = mc.in_dtype;
    s.c_dtype = s.d_dtype = s.bias_dtype = mc.out_dtype;

    Values a = random_values(rng, "a", mc.in_dtype, (batch - 1) * s.stride_a + m * k);
    Values b = random_values(rng, "b", mc.in_dtype, (batch - 1) * s.stride_b + k * n);
    Values c = random_values(rng, "c", mc.out_dtype, mc.has_c ? (batch - 1) * s.stride_c + m * n : 0);
    Values bias = random_values(rng, "bias", mc.out_dtype, mc.has_bias ? n : 0);
    std::vector<double> d(static_cast<size_t>((batch - 1) * s.stride_d + m * n));
    for (int64_t i = 0; i < batch; ++i)
        for (int64_t r = 0; r < m; ++r)
            for (int64_t col = 0; col < n; ++col) {
                double sum = 0;
                for (int64_t p = 0; p < k; ++p) {
                    double av = a.host[static_cast<size_t>(i * s.stride_a + (mc.transpose_a ? p * m + r : r * k + p))];
                    double bv =
                        b.host[static_cast<size_t>(i * s.stride_b + (mc.transpose_b ? col * k + p : p * n + col))];
                    sum += av * bv;
                }
                double value = mc.alpha * sum;
                if (mc.has_c)
                    value += mc.beta * c.host[static_cast<size_t>(i * s.stride_c + r * n + col)];
                if (mc.has_bias)
                    value += bias.host[static_cast<size_t>(col)];
                if (mc.epilogue == KFORGE_EPILOGUE_RELU)
                    value = std::max(value, 0.0);
                else if (mc.epilogue == KFORGE_EPILOGUE_GELU_TANH)
                    value = gelu_tanh(value);
                d[static_cast<size_t>(i * s.stride_d + r * n + col)] = value;
            }

    // fp32 accumulation: rounding errors grow like sqrt(k); a 16-bit output rounds once more.
    std::string out = mc.out_dtype;
    double atol =
        3e-5 * std::sqrt(static_cast<double>(k)) * std::max(1.0, std::fabs(mc.alpha)) + 1e-6 * std::fabs(mc.beta);
    if (mc.epilogue == KFORGE_EPILOGUE_GELU_TANH)
        atol += 1e-4; // the library's tanh may be a fast approximation; a task's fp32 check allows this much
    double rtol = out == "bf16" ? 8e-3 : out == "f16" ? 2e-3 : 1e-5;
    HostTensor d_tensor = host_output("d", out, std::move(d), atol, rtol, static_cast<uint64_t>(n));

    StepProblem problem;
    problem.label =
        fmt::format("matmul {} {}x{}x{} batch {} {}->{}", mc.label, m, n, k, batch, mc.in_dtype, mc.out_dtype);
    problem.step.op = KFORGE_STEP_MATMUL;
    problem.step.matmul = s;
    problem.step.workspace_bytes = mc.workspace;
    if (mc.c_in_d) {
        // D starts as C; the step reads and overwrites it in place.
        d_tensor.data = c.tensor.data;
        problem.shares_output = 2;
    }
    problem.operands = {a.tensor, b.tensor, c.tensor, d_tensor, bias.tensor};
    problem.output = 3;
    return problem;
}

} // namespace

std::vector<StepProblem> matmul_step_problems()
{
    Rng rng(31);
    std::vector<StepProblem> problems;
    for (const MatmulCase& mc : k_matmul_cases)
        problems.push_back(matmul_problem(mc, rng));
    return problems;
}

} // namespace kforge::vendor
