// Conv self-test problems: 1-D, 2-D and 3-D, stride, padding, dilation, groups (depthwise too),
// transposed with output_padding (below the stride, and at or past it below the dilation), NCHW and
// channels last, fp32. Most have no workspace, as most plans will not; a few have one, so that the
// engines that need one are checked too.
//
// The host computes every convolution as a 3-D one, a 1-D or 2-D problem getting leading unit
// dimensions, straight from the definitions: forward, y[o] sums x[o * stride - padding +
// t * dilation] w[t]; transposed, every x[o] w[t] lands on y[o * stride - padding + t * dilation].
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "verify.hpp"

namespace kforge::vendor {
namespace {

using Dims3 = std::array<int64_t, 3>;

struct ConvCase {
    const char* label;
    int spatial_dims;
    int64_t n, c, k, groups;
    Dims3 size, kernel, stride, padding, dilation, output_padding;
    bool transposed, channels_last;
    unsigned long long workspace;
};

constexpr unsigned long long k_conv_mib = 1ull << 20;

const ConvCase k_conv_cases[] = {
    {"2-D 3x3 pad 1", 2, 2, 3, 8, 1, {13, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, false, 0},
    {"2-D 3x2 stride 2 dilation (2,1) workspace", 2, 2, 4, 6, 1, {15, 12}, {3, 2}, {2, 2}, {2, 1}, {2, 1}, {0, 0}, false,
     false, 32 * k_conv_mib},
    {"2-D groups 3", 2, 1, 6, 9, 3, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, false, 0},
    {"2-D depthwise", 2, 2, 8, 8, 8, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, false, 0},
    {"1-D stride 2", 1, 2, 4, 5, 1, {37}, {5}, {2}, {2}, {1}, {0}, false, false, 0},
    {"3-D 3x3x3 pad 1 workspace", 3, 1, 2, 3, 1, {7, 6, 5}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, false,
     false, 32 * k_conv_mib},
    {"2-D channels last", 2, 2, 3, 8, 1, {13, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, true, 0},
    {"2-D workspace 64 MiB", 2, 4, 32, 32, 1, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, false,
     64 * k_conv_mib},
    {"transposed 2-D stride 2 output_padding 1", 2, 2, 4, 6, 1, {9, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true,
     false, 0},
    {"transposed 1-D groups 2 dilation 2 workspace", 1, 2, 4, 6, 2, {20}, {3}, {1}, {2}, {2}, {0}, true, false,
     32 * k_conv_mib},
    {"transposed 2-D output_padding 1 at stride 1 dilation 2", 2, 2, 3, 4, 1, {7, 6}, {3, 3}, {1, 1}, {1, 2}, {2, 2},
     {1, 1}, true, false, 0},
    {"transposed 2-D channels last", 2, 1, 3, 4, 1, {8, 8}, {4, 4}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, true, true, 0},
    {"transposed 3-D stride 2 workspace", 3, 1, 2, 3, 1, {4, 5, 3}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1},
     {1, 0, 1}, true, false, 32 * k_conv_mib},
};

// A case's spatial parameters as three dimensions, unit ones first.
struct Geometry {
    Dims3 in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
};

Geometry geometry_of(const ConvCase& cc)
{
    Geometry g;
    int lead = 3 - cc.spatial_dims;
    for (int i = 0; i < cc.spatial_dims; ++i) {
        size_t j = static_cast<size_t>(lead + i), s = static_cast<size_t>(i);
        g.in[j] = cc.size[s];
        g.kernel[j] = cc.kernel[s];
        g.stride[j] = cc.stride[s];
        g.padding[j] = cc.padding[s];
        g.dilation[j] = cc.dilation[s];
        int64_t span = cc.dilation[s] * (cc.kernel[s] - 1) + 1;
        g.out[j] = cc.transposed ? (cc.size[s] - 1) * cc.stride[s] - 2 * cc.padding[s] + span + cc.output_padding[s]
                                 : (cc.size[s] + 2 * cc.padding[s] - span) / cc.stride[s] + 1;
    }
    return g;
}

int64_t volume(const Dims3& d) { return d[0] * d[1] * d[2]; }

// Where element (n, channel, position) of an activation lives, NCDHW or channels last.
size_t activation_at(int64_t n, int64_t channel, const Dims3& at, int64_t channels, const Dims3& dims,
                     bool channels_last)
{
    int64_t spatial = (at[0] * dims[1] + at[1]) * dims[2] + at[2];
    int64_t index = channels_last ? (n * volume(dims) + spatial) * channels + channel
                                  : (n * channels + channel) * volume(dims) + spatial;
    return static_cast<size_t>(index);
}

// Where filter element (out, in, tap) lives in a packed [out, in, kernel...] weight.
size_t filter_at(int64_t out, int64_t in, int64_t in_per_group, const Dims3& tap, const Dims3& kernel)
{
    return static_cast<size_t>((out * in_per_group + in) * volume(kernel) + (tap[0] * kernel[1] + tap[1]) * kernel[2] +
                               tap[2]);
}

// Calls visit(o, t, i) for every output position o of the forward relation, tap t and the input
// position i = o * stride - padding + t * dilation that lies inside `inside`.
template <typename Visit>
void for_each_tap(const Dims3& outer, const Geometry& g, const Dims3& inside, Visit visit)
{
    Dims3 o{}, t{}, i{};
    for (o[0] = 0; o[0] < outer[0]; ++o[0])
        for (o[1] = 0; o[1] < outer[1]; ++o[1])
            for (o[2] = 0; o[2] < outer[2]; ++o[2])
                for (t[0] = 0; t[0] < g.kernel[0]; ++t[0])
                    for (t[1] = 0; t[1] < g.kernel[1]; ++t[1])
                        for (t[2] = 0; t[2] < g.kernel[2]; ++t[2]) {
                            bool in_range = true;
                            for (size_t d = 0; d < 3; ++d) {
                                i[d] = o[d] * g.stride[d] - g.padding[d] + t[d] * g.dilation[d];
                                in_range = in_range && i[d] >= 0 && i[d] < inside[d];
                            }
                            if (in_range)
                                visit(o, t, i);
                        }
}

StepProblem conv_problem(const ConvCase& cc, Rng& rng)
{
    Geometry g = geometry_of(cc);
    int64_t c_per_group = cc.c / cc.groups, k_per_group = cc.k / cc.groups;
    int64_t filter_out = cc.transposed ? cc.c : cc.k, filter_in = cc.transposed ? k_per_group : c_per_group;
    std::vector<float> x = uniform_floats(rng, static_cast<size_t>(cc.n * cc.c * volume(g.in)), -1, 1);
    std::vector<float> w = uniform_floats(rng, static_cast<size_t>(filter_out * filter_in * volume(g.kernel)), -1, 1);
    std::vector<double> y(static_cast<size_t>(cc.n * cc.k * volume(g.out)), 0.0);
    for (int64_t n = 0; n < cc.n; ++n)
        for (int64_t c = 0; c < cc.c; ++c)
            for (int64_t kl = 0; kl < k_per_group; ++kl) {
                int64_t group = c / c_per_group, ko = group * k_per_group + kl, ci = c - group * c_per_group;
                if (cc.transposed)
                    // dy = x at o scatters into dx = y at i, through w[c, kl, t].
                    for_each_tap(g.in, g, g.out, [&](const Dims3& o, const Dims3& t, const Dims3& i) {
                        y[activation_at(n, ko, i, cc.k, g.out, cc.channels_last)] +=
                            static_cast<double>(x[activation_at(n, c, o, cc.c, g.in, cc.channels_last)]) *
                            w[filter_at(c, kl, k_per_group, t, g.kernel)];
                    });
                else
                    for_each_tap(g.out, g, g.in, [&](const Dims3& o, const Dims3& t, const Dims3& i) {
                        y[activation_at(n, ko, o, cc.k, g.out, cc.channels_last)] +=
                            static_cast<double>(x[activation_at(n, c, i, cc.c, g.in, cc.channels_last)]) *
                            w[filter_at(ko, ci, c_per_group, t, g.kernel)];
                    });
            }

    KforgeConvStep s{};
    s.spatial_dims = cc.spatial_dims;
    s.n = cc.n;
    s.c = cc.c;
    s.k = cc.k;
    s.groups = cc.groups;
    for (size_t i = 0; i < 3; ++i) {
        s.size[i] = cc.size[i];
        s.kernel[i] = cc.kernel[i];
        s.stride[i] = cc.stride[i];
        s.padding[i] = cc.padding[i];
        s.dilation[i] = cc.dilation[i];
        s.output_padding[i] = cc.output_padding[i];
    }
    s.transposed = cc.transposed;
    s.channels_last = cc.channels_last;
    s.dtype = "f32";

    // fp32 sums of up to c/groups * kernel products; Winograd and FFT engines round a little more.
    double reduction = static_cast<double>(c_per_group * volume(g.kernel));
    StepProblem problem;
    problem.label = fmt::format("conv {} n={} c={} k={}", cc.label, cc.n, cc.c, cc.k);
    problem.step.op = KFORGE_STEP_CONV;
    problem.step.conv = s;
    problem.step.workspace_bytes = cc.workspace;
    problem.operands = {host_input("x", "f32", x), host_input("w", "f32", w),
                        host_output("y", "f32", std::move(y), 5e-5 * std::sqrt(reduction), 1e-5)};
    problem.output = 2;
    return problem;
}

} // namespace

std::vector<StepProblem> conv_step_problems()
{
    Rng rng(41);
    std::vector<StepProblem> problems;
    for (const ConvCase& cc : k_conv_cases)
        problems.push_back(conv_problem(cc, rng));
    return problems;
}

} // namespace kforge::vendor
