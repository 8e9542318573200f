// The emulator's library steps (emu_library.cpp) on a grid of small problems that covers every
// option of docs/library-steps.md: transposes, batch strides (0 shares a matrix), alpha, beta with
// C, bias, both epilogues, f32/bf16/f16 (a wider output too); 1-3 spatial dims, groups, stride,
// padding, dilation, channels last, transposed with output_padding. Writes each problem's operands
// and result (as fp64) and a manifest line into the folder named; library_check.py recomputes every
// result with PyTorch in fp64 and compares. Build and run: tasks/tools/README.md.
#include <cstdio>
#include <fstream>
#include <random>

#include "emu_library.hpp"

namespace {

std::string g_dir;
std::ofstream g_manifest;
std::mt19937_64 g_rng(7);
int g_cases = 0;

// A buffer of `count` elements of `dtype` (bytes, as scratch is), drawn from N(0, 1) or poisoned.
Buffer operand(DType dtype, int64_t count, bool poisoned)
{
    Buffer b = make_buffer(DType::u8, count * static_cast<int64_t>(dtype_size(dtype)), poisoned ? 0xFF : 0);
    std::normal_distribution<double> normal;
    for (int64_t i = 0; !poisoned && i < count; ++i)
        store_element(b.data() + i * dtype_size(dtype), dtype, normal(g_rng));
    return b;
}

void dump(const std::string& name, Buffer& b, DType dtype, int64_t count)
{
    std::ofstream out(g_dir + "/" + name + ".bin", std::ios::binary);
    for (int64_t i = 0; i < count; ++i) {
        double v = load_element(b.data() + i * dtype_size(dtype), dtype);
        out.write(reinterpret_cast<const char*>(&v), sizeof v);
    }
}

struct MatmulCase {
    int64_t m, n, k, batch;
    bool ta, tb;
    double alpha, beta;
    bool c, bias;
    StepEpilogue epilogue;
    DType in, out;
    std::array<int64_t, 4> strides; // a, b, c, d
};

void matmul(const MatmulCase& t)
{
    ResolvedLibraryStep step;
    step.op = LibraryOp::matmul;
    ResolvedMatmul& mm = step.matmul;
    mm.m = t.m, mm.n = t.n, mm.k = t.k, mm.batch = t.batch, mm.strides = t.strides;
    mm.transpose_a = t.ta, mm.transpose_b = t.tb, mm.alpha = t.alpha, mm.beta = t.beta;
    mm.has_c = t.c, mm.has_bias = t.bias, mm.epilogue = t.epilogue;
    const int64_t sizes[4] = {t.m * t.k, t.k * t.n, t.m * t.n, t.m * t.n};
    int64_t count[4];
    for (int i = 0; i < 4; ++i)
        count[i] = (t.batch - 1) * t.strides[i] + sizes[i];
    std::map<std::string, Buffer> bufs;
    bufs["a"] = operand(t.in, count[0], false);
    bufs["b"] = operand(t.in, count[1], false);
    bufs["d"] = operand(t.out, count[3], true);
    step.operands = {{"a", "a", t.in}, {"b", "b", t.in}, {"d", "d", t.out}};
    if (t.c) {
        bufs["c"] = operand(t.out, count[2], t.beta == 0); // NaN where the step must not read it
        step.operands.push_back({"c", "c", t.out});
    }
    if (t.bias) {
        bufs["bias"] = operand(t.out, t.n, false);
        step.operands.push_back({"bias", "bias", t.out});
    }
    run_library_step(step, bufs);
    std::string id = "case" + std::to_string(g_cases++);
    dump(id + "_a", bufs["a"], t.in, count[0]);
    dump(id + "_b", bufs["b"], t.in, count[1]);
    dump(id + "_d", bufs["d"], t.out, count[3]);
    if (t.c)
        dump(id + "_c", bufs["c"], t.out, count[2]);
    if (t.bias)
        dump(id + "_bias", bufs["bias"], t.out, t.n);
    g_manifest << id << " matmul " << t.m << " " << t.n << " " << t.k << " " << t.batch << " " << t.ta << " " << t.tb
               << " " << t.alpha << " " << t.beta << " " << t.c << " " << t.bias << " "
               << step_epilogue_name(t.epilogue) << " " << dtype_name(t.in) << " " << dtype_name(t.out);
    for (int64_t s : t.strides)
        g_manifest << " " << s;
    g_manifest << "\n";
}

struct ConvCase {
    int dims;
    int64_t n, c, k, groups;
    std::array<int64_t, 3> size, kernel, stride, padding, dilation, output_padding;
    bool transposed, channels_last;
    DType dtype;
};

void conv(ConvCase t)
{
    ResolvedLibraryStep step;
    step.op = LibraryOp::conv;
    ResolvedConv& cv = step.conv;
    cv.spatial_dims = t.dims, cv.n = t.n, cv.c = t.c, cv.k = t.k, cv.groups = t.groups;
    cv.transposed = t.transposed, cv.channels_last = t.channels_last;
    int64_t x_count = t.n * t.c, y_count = t.n * t.k;
    int64_t w_count = t.transposed ? t.c * (t.k / t.groups) : t.k * (t.c / t.groups);
    for (int d = 0; d < t.dims; ++d) {
        cv.size[d] = t.size[d], cv.kernel[d] = t.kernel[d], cv.stride[d] = t.stride[d];
        cv.padding[d] = t.padding[d], cv.dilation[d] = t.dilation[d], cv.output_padding[d] = t.output_padding[d];
        int64_t span = t.dilation[d] * (t.kernel[d] - 1) + 1;
        cv.out[d] = t.transposed ? (t.size[d] - 1) * t.stride[d] - 2 * t.padding[d] + span + t.output_padding[d]
                                 : (t.size[d] + 2 * t.padding[d] - span) / t.stride[d] + 1;
        x_count *= t.size[d], y_count *= cv.out[d], w_count *= t.kernel[d];
    }
    std::map<std::string, Buffer> bufs;
    bufs["x"] = operand(t.dtype, x_count, false);
    bufs["w"] = operand(t.dtype, w_count, false);
    bufs["y"] = operand(t.dtype, y_count, true);
    step.operands = {{"x", "x", t.dtype}, {"w", "w", t.dtype}, {"y", "y", t.dtype}};
    run_library_step(step, bufs);
    std::string id = "case" + std::to_string(g_cases++);
    dump(id + "_x", bufs["x"], t.dtype, x_count);
    dump(id + "_w", bufs["w"], t.dtype, w_count);
    dump(id + "_y", bufs["y"], t.dtype, y_count);
    g_manifest << id << " conv " << t.dims << " " << t.n << " " << t.c << " " << t.k << " " << t.groups << " "
               << t.transposed << " " << t.channels_last << " " << dtype_name(t.dtype);
    for (const auto* list : {&t.size, &t.kernel, &t.stride, &t.padding, &t.dilation, &t.output_padding})
        for (int d = 0; d < t.dims; ++d)
            g_manifest << " " << (*list)[d];
    g_manifest << "\n";
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: library_check OUT_DIR (then library_check.py OUT_DIR)\n");
        return 2;
    }
    g_dir = argv[1];
    g_manifest.open(g_dir + "/manifest.txt");
    using E = StepEpilogue;
    const DType f32 = DType::f32, bf16 = DType::bf16, f16 = DType::f16;
    for (bool ta : {false, true})
        for (bool tb : {false, true})
            matmul({7, 9, 5, 1, ta, tb, 1, 0, false, false, E::none, f32, f32, {35, 45, 63, 63}});
    matmul({13, 6, 70, 3, true, false, 0.5, 0, false, true, E::relu, f32, f32, {910, 0, 0, 82}});
    matmul({5, 11, 8, 4, false, true, -1.25, 0.75, true, true, E::gelu_tanh, f32, f32, {40, 91, 0, 55}});
    matmul({5, 11, 8, 2, false, false, 1, 0, true, false, E::none, f32, f32, {40, 88, 55, 55}}); // C unread
    matmul({5, 11, 8, 2, false, false, 1, 1, true, false, E::none, bf16, bf16, {40, 88, 55, 55}});
    matmul({5, 11, 8, 2, true, true, 1, 0, false, true, E::relu, f16, f32, {40, 88, 55, 60}});
    matmul({33, 17, 300, 1, false, true, 1, 0, false, true, E::gelu_tanh, bf16, f32, {0, 0, 0, 0}});
    matmul({6, 130, 9, 1, false, false, 2, 0, false, false, E::none, f16, f16, {0, 0, 0, 0}});
    conv({1, 2, 4, 6, 2, {11}, {3}, {2}, {1}, {2}, {0}, false, false, f32});
    conv({2, 2, 3, 5, 1, {7, 9}, {3, 2}, {1, 2}, {1, 0}, {1, 1}, {0, 0}, false, true, f32});
    conv({2, 3, 6, 4, 2, {8, 6}, {3, 3}, {2, 1}, {0, 2}, {2, 1}, {0, 0}, false, false, bf16});
    conv({3, 2, 2, 3, 1, {5, 6, 7}, {3, 2, 2}, {1, 2, 2}, {1, 0, 1}, {1, 1, 2}, {0, 0, 0}, false, false, f32});
    conv({3, 1, 4, 4, 4, {4, 5, 6}, {2, 3, 3}, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, {0, 0, 0}, false, true, f16});
    conv({2, 2, 4, 6, 2, {5, 4}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 0}, true, false, f32});
    conv({1, 2, 3, 2, 1, {7}, {4}, {3}, {2}, {2}, {1}, true, true, f32});
    conv({3, 1, 2, 4, 2, {3, 4, 3}, {2, 3, 2}, {2, 1, 2}, {0, 1, 1}, {1, 2, 1}, {1, 0, 0}, true, false, f32});
    conv({2, 2, 3, 3, 1, {4, 5}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, true, true, bf16});
    printf("%d library steps written to %s\n", g_cases, g_dir.c_str());
    return 0;
}
