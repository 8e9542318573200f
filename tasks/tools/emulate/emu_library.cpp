// Library steps on the CPU; see emu_library.hpp. The numbers follow docs/library-steps.md, not the
// libraries: every product of f32/bf16/f16 operands is exact in fp64 and their sum is rounded far
// below any tolerance kforge sets, whatever its order; the result is rounded once to the output's
// dtype, as cuBLASLt and cuDNN round their fp32 accumulators once. The algorithm index changes
// nothing here.
#include "emu_library.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "core/plan.hpp"
#include "evaluator/worker/library_steps.hpp"

namespace {

// An operand as the step sees it: the buffer's bytes read in the operand's own dtype (a scratch
// buffer is u8 to the plan).
struct View {
    unsigned char* base = nullptr;
    DType dtype = DType::f32;
    double get(int64_t i) const { return load_element(base + i * dtype_size(dtype), dtype); }
    void put(int64_t i, double v) const { store_element(base + i * dtype_size(dtype), dtype, v); }
};

View view(const ResolvedLibraryStep& step, std::string_view role, std::map<std::string, Buffer>& bufs)
{
    const ResolvedOperand* operand = step.operand(role);
    if (!operand)
        return {};
    return {bufs.at(operand->name).data(), operand->dtype};
}

// Splits [0, count) over the machine's cores; `body(begin, end)` must touch disjoint outputs.
template <typename Body>
void parallel_rows(int64_t count, Body body)
{
    int64_t threads = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 16);
    threads = std::min(threads, std::max<int64_t>(1, count / 16));
    std::vector<std::thread> pool;
    for (int64_t t = 1; t < threads; ++t)
        pool.emplace_back(body, count * t / threads, count * (t + 1) / threads);
    body(0, count / threads);
    for (auto& th : pool)
        th.join();
}

double activate(StepEpilogue epilogue, double v)
{
    switch (epilogue) {
    case StepEpilogue::relu: return v > 0 ? v : 0;
    case StepEpilogue::gelu_tanh: return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    case StepEpilogue::none: break;
    }
    return v;
}

// D[i] = act(alpha * op(A[i]) @ op(B[i]) + beta * C[i] + bias), row-major, for every batch index.
void run_matmul(const ResolvedLibraryStep& step, std::map<std::string, Buffer>& bufs)
{
    const ResolvedMatmul& mm = step.matmul;
    const int64_t m = mm.m, n = mm.n, k = mm.k;
    View a = view(step, "a", bufs), b = view(step, "b", bufs), c = view(step, "c", bufs);
    View d = view(step, "d", bufs), bias = view(step, "bias", bufs);
    // cuBLASLt reads C only when beta is not 0 (NaN in an unread C does not spread).
    const bool read_c = mm.has_c && mm.beta != 0;
    std::vector<double> bias_values(mm.has_bias ? n : 0);
    for (int64_t j = 0; j < (int64_t)bias_values.size(); ++j)
        bias_values[j] = bias.get(j);
    // op(A) as [m][k] and op(B) transposed as [n][k], so that each output is a dot product of two
    // rows; the products run over blocks of 4 rows x 64 columns, which keeps the columns in cache.
    std::vector<double> at(m * k), bt(n * k);
    for (int64_t batch = 0; batch < mm.batch; ++batch) {
        const int64_t off_a = batch * mm.strides[0], off_b = batch * mm.strides[1];
        const int64_t off_c = batch * mm.strides[2], off_d = batch * mm.strides[3];
        if (batch == 0 || mm.strides[0] != 0)
            for (int64_t r = 0; r < m; ++r)
                for (int64_t l = 0; l < k; ++l)
                    at[r * k + l] = a.get(off_a + (mm.transpose_a ? l * m + r : r * k + l));
        if (batch == 0 || mm.strides[1] != 0)
            for (int64_t j = 0; j < n; ++j)
                for (int64_t l = 0; l < k; ++l)
                    bt[j * k + l] = b.get(off_b + (mm.transpose_b ? j * k + l : l * n + j));
        // C may be D itself: each element of C is read just before the same element of D is written.
        auto finish = [&](int64_t r, int64_t j, double product) {
            double v = mm.alpha * product;
            if (read_c)
                v += mm.beta * c.get(off_c + r * n + j);
            if (mm.has_bias)
                v += bias_values[j];
            d.put(off_d + r * n + j, activate(mm.epilogue, v));
        };
        parallel_rows(m, [&](int64_t begin, int64_t end) {
            for (int64_t j0 = 0; j0 < n; j0 += 64)
                for (int64_t r0 = begin; r0 < end; r0 += 4) {
                    const int64_t rows = std::min<int64_t>(4, end - r0);
                    const double* r_0 = &at[r0 * k];
                    const double* r_1 = &at[(r0 + std::min<int64_t>(1, rows - 1)) * k];
                    const double* r_2 = &at[(r0 + std::min<int64_t>(2, rows - 1)) * k];
                    const double* r_3 = &at[(r0 + std::min<int64_t>(3, rows - 1)) * k];
                    for (int64_t j = j0; j < std::min(n, j0 + 64); ++j) {
                        const double* col = &bt[j * k];
                        double acc[4] = {0, 0, 0, 0};
                        for (int64_t l = 0; l < k; ++l) {
                            const double v = col[l];
                            acc[0] += r_0[l] * v;
                            acc[1] += r_1[l] * v;
                            acc[2] += r_2[l] * v;
                            acc[3] += r_3[l] * v;
                        }
                        for (int64_t i = 0; i < rows; ++i)
                            finish(r0 + i, j, acc[i]);
                    }
                }
        });
    }
}

// Element index of [n, channel, i0, i1, i2] in a tensor of `channels` x `size` stored NCHW or
// channels last (1-D and 2-D convolutions have unit sizes in the missing dimensions).
int64_t activation_index(bool channels_last, int64_t n, int64_t channel, int64_t channels,
                         const std::array<int64_t, 3>& size, int64_t i0, int64_t i1, int64_t i2)
{
    if (channels_last)
        return (((n * size[0] + i0) * size[1] + i1) * size[2] + i2) * channels + channel;
    return (((n * channels + channel) * size[0] + i0) * size[1] + i1) * size[2] + i2;
}

// The range of o in [0, count) with 0 <= o * stride + offset < limit.
std::pair<int64_t, int64_t> valid_range(int64_t count, int64_t stride, int64_t offset, int64_t limit)
{
    auto ceil_div = [](int64_t p, int64_t q) { return p >= 0 ? (p + q - 1) / q : -((-p) / q); };
    auto floor_div = [](int64_t p, int64_t q) { return p >= 0 ? p / q : -((-p + q - 1) / q); };
    int64_t lo = std::max<int64_t>(0, ceil_div(-offset, stride));
    int64_t hi = std::min<int64_t>(count, floor_div(limit - 1 - offset, stride) + 1);
    return {lo, std::max(lo, hi)};
}

// A convolution's spatial numbers over three dimensions, right-aligned: a 2-D one has a unit first
// dimension and a 1-D one two, so the innermost loops always run along the stored rows.
struct Spatial {
    std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, padding{}, dilation{1, 1, 1};

    explicit Spatial(const ResolvedConv& cv)
    {
        const int shift = 3 - cv.spatial_dims;
        for (int d = 0; d < cv.spatial_dims; ++d) {
            in[d + shift] = cv.size[d];
            out[d + shift] = cv.out[d];
            kernel[d + shift] = cv.kernel[d];
            stride[d + shift] = cv.stride[d];
            padding[d + shift] = cv.padding[d];
            dilation[d + shift] = cv.dilation[d];
        }
    }
    static int64_t volume(const std::array<int64_t, 3>& v) { return v[0] * v[1] * v[2]; }
};

// One kernel tap of one (input channel, output channel) pair on one image: forward, every output
// element o takes w * in[o * stride + offset]; transposed (the forward's data gradient), every
// input element i adds w * in[i] to out[i * stride + offset]. `offset` is tap * dilation - padding.
void conv_tap(const Spatial& s, bool transposed, const std::array<int64_t, 3>& offset, double w, const double* in,
              double* out)
{
    const auto& from = transposed ? s.in : s.out; // the positions iterated
    const auto& to = transposed ? s.out : s.in;   // the positions they reach
    std::pair<int64_t, int64_t> range[3];
    for (int d = 0; d < 3; ++d)
        range[d] = valid_range(from[d], s.stride[d], offset[d], to[d]);
    for (int64_t p0 = range[0].first; p0 < range[0].second; ++p0)
        for (int64_t p1 = range[1].first; p1 < range[1].second; ++p1) {
            const int64_t near = (p0 * from[1] + p1) * from[2];
            const int64_t far = ((p0 * s.stride[0] + offset[0]) * to[1] + p1 * s.stride[1] + offset[1]) * to[2] + offset[2];
            if (!transposed)
                for (int64_t p2 = range[2].first; p2 < range[2].second; ++p2)
                    out[near + p2] += w * in[far + p2 * s.stride[2]];
            else
                for (int64_t p2 = range[2].first; p2 < range[2].second; ++p2)
                    out[far + p2 * s.stride[2]] += w * in[near + p2];
        }
}

// PyTorch's Conv{1,2,3}d (cross-correlation) without bias or, transposed, its ConvTranspose; each
// image's channels are gathered to fp64 NCHW planes, accumulated, and stored once in y's layout.
void run_conv(const ResolvedLibraryStep& step, std::map<std::string, Buffer>& bufs)
{
    const ResolvedConv& cv = step.conv;
    const Spatial s(cv);
    View x = view(step, "x", bufs), w = view(step, "w", bufs), y = view(step, "y", bufs);
    const int64_t in_plane = Spatial::volume(s.in), out_plane = Spatial::volume(s.out);
    const int64_t taps = Spatial::volume(s.kernel);
    // The step's c channels come in and its k go out, both ways; w is [k, c / groups, kernel...]
    // forward and [c, k / groups, kernel...] transposed.
    const int64_t c_group = cv.c / cv.groups, k_group = cv.k / cv.groups;
    const int64_t w_count = (cv.transposed ? cv.c * k_group : cv.k * c_group) * taps;
    std::vector<double> wd(w_count);
    for (int64_t i = 0; i < w_count; ++i)
        wd[i] = w.get(i);
    auto layout = [&](int64_t n, int64_t channel, int64_t channels, const std::array<int64_t, 3>& size, int64_t p) {
        return activation_index(cv.channels_last, n, channel, channels, size, p / (size[1] * size[2]),
                                p / size[2] % size[1], p % size[2]);
    };
    parallel_rows(cv.n, [&](int64_t begin, int64_t end) {
        std::vector<double> xd(cv.c * in_plane), yd(cv.k * out_plane);
        for (int64_t n = begin; n < end; ++n) {
            for (int64_t ch = 0; ch < cv.c; ++ch)
                for (int64_t p = 0; p < in_plane; ++p)
                    xd[ch * in_plane + p] = x.get(layout(n, ch, cv.c, s.in, p));
            std::fill(yd.begin(), yd.end(), 0.0);
            for (int64_t g = 0; g < cv.groups; ++g)
                for (int64_t ko = 0; ko < k_group; ++ko)
                    for (int64_t ci = 0; ci < c_group; ++ci)
                        for (int64_t tap = 0; tap < taps; ++tap) {
                            const int64_t t[3] = {tap / (s.kernel[1] * s.kernel[2]), tap / s.kernel[2] % s.kernel[1],
                                                  tap % s.kernel[2]};
                            std::array<int64_t, 3> offset;
                            for (int d = 0; d < 3; ++d)
                                offset[d] = t[d] * s.dilation[d] - s.padding[d];
                            const int64_t cin = g * c_group + ci, cout = g * k_group + ko;
                            const double weight = cv.transposed ? wd[(cin * k_group + ko) * taps + tap]
                                                                : wd[(cout * c_group + ci) * taps + tap];
                            conv_tap(s, cv.transposed, offset, weight, &xd[cin * in_plane], &yd[cout * out_plane]);
                        }
            for (int64_t ch = 0; ch < cv.k; ++ch)
                for (int64_t p = 0; p < out_plane; ++p)
                    y.put(layout(n, ch, cv.k, s.out, p), yd[ch * out_plane + p]);
        }
    });
}

} // namespace

std::string vendor_refusal(const ResolvedLibraryStep& step)
{
    const VendorLibrary& library = VendorLibrary::shared();
    if (!library.available()) {
        static bool told = false;
        if (!told)
            printf("note: the vendor library's own checks of library steps are skipped: %s\n", library.reason().c_str());
        told = true;
        return "";
    }
    KforgeStep description = to_vendor_step(step);
    char text[2048] = {};
    int status = library.steps().describe(&description, text, sizeof text);
    if (status == KFORGE_VENDOR_OK)
        return "";
    std::string why = text[0] ? text : "the vendor library refused the step";
    // Only a step the library cannot take is the plan's fault; the worker calls anything else a
    // failure to run it.
    if (status != KFORGE_VENDOR_BAD_BINDINGS)
        throw std::runtime_error(why);
    return why;
}

void run_library_step(const ResolvedLibraryStep& step, std::map<std::string, Buffer>& bufs)
{
    if (step.op == LibraryOp::matmul)
        run_matmul(step, bufs);
    else
        run_conv(step, bufs);
}
