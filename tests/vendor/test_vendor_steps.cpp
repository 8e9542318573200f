// Library steps in libkforge_vendor.so (kforge_vendor.h, "Library steps"): without a GPU, the
// description of each step is the exact column-major cuBLASLt call or cuDNN operation it makes,
// and steps the libraries cannot take are refused with the reason before CUDA is touched; on a
// GPU, the library's own self-test runs every kind of step against the host.
#include "kf_catch.hpp"

#include <set>
#include <sstream>

#include "evaluator/worker/vendor_baseline.hpp"
#include "kforge_vendor.h"
#include "test_support.hpp"
#include "util/dynlib.hpp"
#include "vendor_test_support.hpp"

using namespace kforge;

namespace {

// The step entry points of this build's libkforge_vendor.so, looked up as the GPU worker will.
class StepEntryPoints
{
public:
    StepEntryPoints() : m_library({test::vendor_library_file().c_str()})
    {
        if (!m_library.loaded())
            return;
        m_describe = reinterpret_cast<decltype(m_describe)>(m_library.symbol("kforge_vendor_step_describe"));
        m_prepare = reinterpret_cast<decltype(m_prepare)>(m_library.symbol("kforge_vendor_step_prepare"));
        m_chosen = reinterpret_cast<decltype(m_chosen)>(m_library.symbol("kforge_vendor_step_chosen"));
        m_run = reinterpret_cast<decltype(m_run)>(m_library.symbol("kforge_vendor_step_run"));
        m_release = reinterpret_cast<decltype(m_release)>(m_library.symbol("kforge_vendor_step_release"));
        m_selftest = reinterpret_cast<decltype(m_selftest)>(m_library.symbol("kforge_vendor_step_selftest"));
        m_versions = reinterpret_cast<decltype(m_versions)>(m_library.symbol("kforge_vendor_versions"));
    }
    // Whether the tests can use the library: built (nvcc was found) and every entry point there.
    bool usable() const
    {
        return m_library.loaded() && m_describe && m_prepare && m_chosen && m_run && m_release && m_selftest;
    }
    std::string problem() const { return m_library.loaded() ? "an entry point is missing" : m_library.error(); }

    // The return code and the text (or the error).
    std::pair<int, std::string> describe(const KforgeStep& step) const
    {
        char text[4096] = {};
        int status = m_describe(&step, text, sizeof text);
        return {status, text};
    }
    std::pair<int, std::string> prepare(const KforgeStep& step, void** state) const
    {
        char error[4096] = {};
        int status = m_prepare(&step, state, error, sizeof error);
        return {status, error};
    }
    std::pair<int, std::string> run(void* state, const std::vector<unsigned long long>& operands) const
    {
        char error[1024] = {};
        int status = m_run(state, operands.data(), operands.size(), nullptr, error, sizeof error);
        return {status, error};
    }
    const char* chosen(void* state) const { return m_chosen(state); }
    void release(void* state) const { m_release(state); }
    std::pair<int, std::string> selftest() const
    {
        std::string report(16384, '\0');
        int status = m_selftest(report.data(), report.size());
        return {status, report.c_str()};
    }
    std::string versions() const { return m_versions ? m_versions() : ""; }

private:
    DynamicLibrary m_library;
    decltype(&kforge_vendor_step_describe) m_describe = nullptr;
    decltype(&kforge_vendor_step_prepare) m_prepare = nullptr;
    decltype(&kforge_vendor_step_chosen) m_chosen = nullptr;
    decltype(&kforge_vendor_step_run) m_run = nullptr;
    decltype(&kforge_vendor_step_release) m_release = nullptr;
    decltype(&kforge_vendor_step_selftest) m_selftest = nullptr;
    decltype(&kforge_vendor_versions) m_versions = nullptr;
};

// The "key=value" words of a description.
std::set<std::string> words_of(const std::string& text)
{
    std::set<std::string> words;
    std::istringstream in(text);
    for (std::string word; in >> word;)
        words.insert(word);
    return words;
}

// Every word in `expected` is a word of `text`; each missing one is reported with the text.
void require_words(const std::string& text, const std::vector<std::string>& expected)
{
    std::set<std::string> words = words_of(text);
    for (const auto& word : expected) {
        INFO("the description lacks " << word << ": " << text);
        CHECK(words.count(word) == 1);
    }
}

// y = x @ W^T + bias, relu: x [M, K], W [N, K] (an nn.Linear weight), y [M, N], fp32.
KforgeStep linear_step(long long m, long long n, long long k)
{
    KforgeStep step{};
    step.op = KFORGE_STEP_MATMUL;
    KforgeMatmulStep& mm = step.matmul;
    mm.m = m;
    mm.n = n;
    mm.k = k;
    mm.batch = 1;
    mm.stride_a = m * k;
    mm.stride_b = n * k;
    mm.stride_c = mm.stride_d = m * n;
    mm.transpose_b = 1;
    mm.alpha = 1;
    mm.has_bias = 1;
    mm.epilogue = KFORGE_EPILOGUE_RELU;
    mm.a_dtype = mm.b_dtype = mm.c_dtype = mm.d_dtype = mm.bias_dtype = "f32";
    return step;
}

// A 2-D convolution n=2, c=3, k=8 over 32 x 28 with a 3 x 3 kernel and padding 1, fp32, NCHW.
KforgeStep conv2d_step()
{
    KforgeStep step{};
    step.op = KFORGE_STEP_CONV;
    KforgeConvStep& cv = step.conv;
    cv.spatial_dims = 2;
    cv.n = 2;
    cv.c = 3;
    cv.k = 8;
    cv.groups = 1;
    for (int i = 0; i < 2; ++i) {
        cv.kernel[i] = 3;
        cv.stride[i] = 1;
        cv.padding[i] = 1;
        cv.dilation[i] = 1;
    }
    cv.size[0] = 32;
    cv.size[1] = 28;
    cv.dtype = "f32";
    return step;
}

#define REQUIRE_STEP_LIBRARY(steps)                                                                \
    if (!vendor_library_build_note().empty())                                                      \
        return; /* no nvcc, no library: the loader tests say so */                                 \
    INFO((steps).problem());                                                                       \
    REQUIRE((steps).usable())

} // namespace

TEST_CASE("a Linear matmul step is cuBLASLt's TN call on the transposes, with a RELU_BIAS epilogue and no TF32",
          "[vendor]")
{
    StepEntryPoints steps;
    REQUIRE_STEP_LIBRARY(steps);
    auto [status, text] = steps.describe(linear_step(128, 64, 256));
    REQUIRE(status == KFORGE_VENDOR_OK);
    // D^T = W x^T: cuBLASLt's m is the step's n, its A the weight (b) transposed, its B x (a).
    CHECK_THAT(text, Catch::StartsWith("cublasLtMatmul "));
    require_words(text, {"transa=T", "transb=N", "m=64", "n=128", "k=256", "lda=256", "ldb=256", "ldc=64", "ldd=64",
                         "batch=1", "A=b", "Arows=256", "Acols=64", "B=a", "Brows=256", "Bcols=128", "C=d", "D=d",
                         "Drows=64", "Dcols=128", "epilogue=RELU_BIAS", "biaslength=64", "biastype=f32", "compute=32F",
                         "scale=32F", "impl_mask=no-TF32/BF16/F16", "reduction_scheme_mask=NONE", "workspace=0",
                         "alpha=1", "beta=0", "alignA=256", "alignB=256", "alignD=256"});
}

TEST_CASE("a row-major NN matmul step swaps its operands into cuBLASLt's NN call, with no epilogue", "[vendor]")
{
    StepEntryPoints steps;
    REQUIRE_STEP_LIBRARY(steps);
    KforgeStep step = linear_step(48, 80, 112);
    step.matmul.transpose_b = 0;
    step.matmul.has_bias = 0;
    step.matmul.epilogue = KFORGE_EPILOGUE_NONE;
    step.workspace_bytes = 32u << 20;
    auto [status, text] = steps.describe(step);
    REQUIRE(status == KFORGE_VENDOR_OK);
    // B [K, N] row-major is column-major N x K with ld N; A [M, K] is K x M with ld K.
    require_words(text, {"transa=N", "transb=N", "m=80", "n=48", "k=112", "lda=80", "ldb=112", "ldd=80", "Arows=80",
                         "Acols=112", "Brows=112", "Bcols=48", "epilogue=DEFAULT", "workspace=33554432"});
    CHECK(text.find("bias=") == std::string::npos);
}

TEST_CASE("a batched matmul step sets the batch and each matrix's stride, and tells the heuristic each stride's "
          "alignment",
          "[vendor]")
{
    StepEntryPoints steps;
    REQUIRE_STEP_LIBRARY(steps);
    KforgeStep step = linear_step(16, 40, 24);
    KforgeMatmulStep& mm = step.matmul;
    mm.batch = 4;
    mm.transpose_a = 1;                 // A stored [k, m]
    mm.transpose_b = 0;                 // B stored [k, n], one for every batch index
    mm.stride_a = 16 * 24 + 8;          // padded: 392 floats = 1568 bytes = 32 * 49
    mm.stride_b = 0;
    mm.has_c = 1;
    mm.beta = 0.5;
    mm.stride_c = 16 * 40 + 1;          // 641 floats: only 4-byte aligned
    mm.stride_d = 16 * 40;
    mm.has_bias = 0;
    mm.epilogue = KFORGE_EPILOGUE_GELU_TANH;
    auto [status, text] = steps.describe(step);
    REQUIRE(status == KFORGE_VENDOR_OK);
    require_words(text, {"transa=N", "transb=T", "m=40", "n=16", "k=24", "lda=40", "ldb=16", "ldc=40", "ldd=40",
                         "batch=4", "A=b", "strideA=0", "alignA=256", "B=a", "Brows=16", "Bcols=24", "strideB=392",
                         "alignB=32", "C=c", "strideC=641", "alignC=4", "D=d", "strideD=640", "alignD=256", "beta=0.5",
                         "epilogue=GELU"});
}

TEST_CASE("matmul steps cuBLASLt cannot take are refused before CUDA, each naming the problem", "[vendor]")
{
    StepEntryPoints steps;
    REQUIRE_STEP_LIBRARY(steps);
    auto refusal = [&](const KforgeStep& step) {
        auto [status, text] = steps.describe(step);
        CHECK(status == KFORGE_VENDOR_BAD_BINDINGS);
        // prepare makes the same checks first, so it fails alike and leaves no state.
        void* state = reinterpret_cast<void*>(1);
        auto [prepare_status, prepare_text] = steps.prepare(step, &state);
        CHECK(prepare_status == KFORGE_VENDOR_BAD_BINDINGS);
        CHECK(prepare_text == text);
        CHECK(state == nullptr);
        return text;
    };

    KforgeStep mixed = linear_step(8, 8, 8);
    mixed.matmul.b_dtype = "bf16";
    CHECK_THAT(refusal(mixed), Catch::Contains("a is f32 and b is bf16") && Catch::Contains("one dtype"));

    KforgeStep integer = linear_step(8, 8, 8);
    integer.matmul.a_dtype = integer.matmul.b_dtype = integer.matmul.d_dtype = integer.matmul.bias_dtype = "i32";
    integer.matmul.epilogue = KFORGE_EPILOGUE_GELU_TANH;
    CHECK_THAT(refusal(integer), Catch::Contains("a_dtype is i32") && Catch::Contains("f32, bf16 or f16"));

    KforgeStep zero_k = linear_step(8, 8, 0);
    CHECK_THAT(refusal(zero_k), Catch::Contains("k = 0") && Catch::Contains("k >= 1"));

    KforgeStep huge = linear_step(int64_t{1} << 31, 8, 8);
    CHECK_THAT(refusal(huge), Catch::Contains("m = 2147483648") && Catch::Contains("2^31 - 1"));

    KforgeStep bf16_bias = linear_step(8, 8, 8);
    bf16_bias.matmul.a_dtype = bf16_bias.matmul.b_dtype = bf16_bias.matmul.d_dtype = "bf16";
    CHECK_THAT(refusal(bf16_bias), Catch::Contains("the bias is f32 and d is bf16"));

    KforgeStep f32_to_bf16 = linear_step(8, 8, 8);
    f32_to_bf16.matmul.d_dtype = f32_to_bf16.matmul.bias_dtype = "bf16";
    CHECK_THAT(refusal(f32_to_bf16), Catch::Contains("f32 inputs with a bf16 output"));

    KforgeStep beta_without_c = linear_step(8, 8, 8);
    beta_without_c.matmul.beta = 1;
    CHECK_THAT(refusal(beta_without_c), Catch::Contains("beta = 1 but the step has no c"));

    KforgeStep overlapping = linear_step(8, 8, 8);
    overlapping.matmul.batch = 2;
    overlapping.matmul.stride_d = 0;
    CHECK_THAT(refusal(overlapping), Catch::Contains("stride_d = 0 with batch = 2") && Catch::Contains("overlap"));

    KforgeStep unknown_epilogue = linear_step(8, 8, 8);
    unknown_epilogue.matmul.epilogue = 7;
    CHECK_THAT(refusal(unknown_epilogue), Catch::Contains("epilogue 7"));

    KforgeStep negative_algo = linear_step(8, 8, 8);
    negative_algo.algo = -1;
    CHECK_THAT(refusal(negative_algo), Catch::Contains("algo = -1"));

    KforgeStep no_op = linear_step(8, 8, 8);
    no_op.op = 9;
    CHECK_THAT(refusal(no_op), Catch::Contains("op = 9"));
}

TEST_CASE("a 2-D conv step is cuDNN's forward convolution on NCHW or channels-last strides with PyTorch's weight",
          "[vendor]")
{
    StepEntryPoints steps;
    REQUIRE_STEP_LIBRARY(steps);
    auto [status, text] = steps.describe(conv2d_step());
    REQUIRE(status == KFORGE_VENDOR_OK);
    CHECK_THAT(text, Catch::StartsWith("cudnnBackendExecute op=CONVOLUTION_FORWARD"));
    CHECK_THAT(text, Catch::Contains(" x=x dims=[2,3,32,28] strides=[2688,896,28,1] ") &&
                         Catch::Contains(" w=w dims=[8,3,3,3] strides=[27,9,3,1] ") &&
                         Catch::Contains(" y=y dims=[2,8,32,28] strides=[7168,896,28,1] "));
    require_words(text, {"mode=CROSS_CORRELATION", "compute=FLOAT", "dtype=f32", "layout=nchw", "spatial_dims=2",
                         "pre_padding=[1,1]", "post_padding=[1,1]", "stride=[1,1]", "dilation=[1,1]", "groups=1",
                         "excluded_notes=TENSOR_CORE,DOWN_CONVERT_INPUTS,REDUCED_PRECISION_REDUCTION"});

    KforgeStep last = conv2d_step();
    last.conv.channels_last = 1;
    last.conv.stride[0] = 2;
    auto [last_status, last_text] = steps.describe(last);
    REQUIRE(last_status == KFORGE_VENDOR_OK);
    // (32 + 2 - 3) / 2 + 1 = 16 rows; channels are the innermost dimension of x and y only.
    CHECK_THAT(last_text, Catch::Contains(" x=x dims=[2,3,32,28] strides=[2688,1,84,3] ") &&
                              Catch::Contains(" w=w dims=[8,3,3,3] strides=[27,9,3,1] ") &&
                              Catch::Contains(" y=y dims=[2,8,16,28] strides=[3584,1,224,8] "));
    require_words(last_text, {"layout=channels_last", "stride=[2,1]"});
}

TEST_CASE("a transposed conv step is cuDNN's data gradient: x is dy, y is dx, the weight is [c, k / groups, ...]",
          "[vendor]")
{
    StepEntryPoints steps;
    REQUIRE_STEP_LIBRARY(steps);
    KforgeStep step = conv2d_step();
    KforgeConvStep& cv = step.conv;
    cv.transposed = 1;
    cv.c = 16;
    cv.k = 8;
    cv.groups = 2;
    cv.size[0] = cv.size[1] = 10;
    cv.kernel[0] = cv.kernel[1] = 4;
    cv.stride[0] = cv.stride[1] = 2;
    cv.output_padding[1] = 1;
    auto [status, text] = steps.describe(step);
    REQUIRE(status == KFORGE_VENDOR_OK);
    // (10 - 1) * 2 - 2 * 1 + (4 - 1) + output_padding + 1: 20 rows, 21 columns.
    CHECK_THAT(text, Catch::StartsWith("cudnnBackendExecute op=CONVOLUTION_BACKWARD_DATA"));
    CHECK_THAT(text, Catch::Contains(" dy=x dims=[2,16,10,10] strides=[1600,100,10,1] ") &&
                         Catch::Contains(" w=w dims=[16,4,4,4] strides=[64,16,4,1] ") &&
                         Catch::Contains(" dx=y dims=[2,8,20,21] strides=[3360,420,21,1] "));
    require_words(text, {"groups=2", "stride=[2,2]", "pre_padding=[1,1]", "post_padding=[1,1]"});

    // PyTorch allows an output_padding of the stride or more when it is below the dilation; cuDNN
    // then needs that many whole strides less padding after the data for dy's size to check out.
    KforgeStep wide = conv2d_step();
    wide.conv.transposed = 1;
    wide.conv.dilation[1] = 3;
    wide.conv.padding[1] = 2;
    wide.conv.output_padding[1] = 2;
    auto [wide_status, wide_text] = steps.describe(wide);
    REQUIRE(wide_status == KFORGE_VENDOR_OK);
    // Columns: (28 - 1) * 1 - 2 * 2 + 3 * 2 + 2 + 1 = 32.
    CHECK_THAT(wide_text, Catch::Contains(" dx=y dims=[2,8,32,32] "));
    require_words(wide_text, {"pre_padding=[1,2]", "post_padding=[1,0]", "dilation=[1,3]"});
}

TEST_CASE("1-D and 3-D conv steps: a 1-D one runs as 2-D over a unit height, a 3-D one on 5-D tensors", "[vendor]")
{
    StepEntryPoints steps;
    REQUIRE_STEP_LIBRARY(steps);
    KforgeStep one = conv2d_step();
    one.conv.spatial_dims = 1;
    one.conv.size[0] = 37;
    one.conv.kernel[0] = 5;
    one.conv.stride[0] = 2;
    one.conv.padding[0] = 2;
    auto [status, text] = steps.describe(one);
    REQUIRE(status == KFORGE_VENDOR_OK);
    CHECK_THAT(text, Catch::Contains(" x=x dims=[2,3,1,37] ") && Catch::Contains(" w=w dims=[8,3,1,5] ") &&
                         Catch::Contains(" y=y dims=[2,8,1,19] "));
    require_words(text, {"spatial_dims=2", "stride=[1,2]", "pre_padding=[0,2]", "dilation=[1,1]", "unit_height=1"});

    KforgeStep three = conv2d_step();
    three.conv.spatial_dims = 3;
    three.conv.size[2] = 6;
    three.conv.kernel[2] = 1;
    three.conv.stride[2] = 1;
    three.conv.dilation[2] = 1;
    three.conv.channels_last = 1;
    auto [three_status, three_text] = steps.describe(three);
    REQUIRE(three_status == KFORGE_VENDOR_OK);
    CHECK_THAT(three_text, Catch::Contains(" x=x dims=[2,3,32,28,6] strides=[16128,1,504,18,3] ") &&
                               Catch::Contains(" w=w dims=[8,3,3,3,1] "));
    require_words(three_text, {"spatial_dims=3", "pre_padding=[1,1,0]"});
}

TEST_CASE("conv steps cuDNN cannot take are refused before CUDA, each naming the problem", "[vendor]")
{
    StepEntryPoints steps;
    REQUIRE_STEP_LIBRARY(steps);
    auto refusal = [&](const KforgeStep& step) {
        auto [status, text] = steps.describe(step);
        CHECK(status == KFORGE_VENDOR_BAD_BINDINGS);
        return text;
    };
    KforgeStep groups = conv2d_step();
    groups.conv.c = 6;
    groups.conv.groups = 4;
    groups.conv.k = 8;
    CHECK_THAT(refusal(groups), Catch::Contains("c = 6 input channels are not divisible by groups = 4"));

    KforgeStep output_groups = conv2d_step();
    output_groups.conv.groups = 3;
    CHECK_THAT(refusal(output_groups), Catch::Contains("k = 8 output channels are not divisible by groups = 3"));

    KforgeStep padding = conv2d_step();
    padding.conv.transposed = 1;
    padding.conv.stride[0] = 2;
    padding.conv.output_padding[0] = 2;
    CHECK_THAT(refusal(padding), Catch::Contains("output_padding[0] = 2") &&
                                     Catch::Contains("less than the stride (2) or the dilation (1)"));

    KforgeStep no_room = conv2d_step();
    no_room.conv.transposed = 1;
    no_room.conv.dilation[0] = 4;
    no_room.conv.output_padding[0] = 2; // below the dilation, but 2 whole strides of 1 exceed padding 1
    CHECK_THAT(refusal(no_room), Catch::Contains("output_padding[0] = 2 with stride 1 and padding 1") &&
                                     Catch::Contains("here at most 1"));

    KforgeStep forward_padding = conv2d_step();
    forward_padding.conv.output_padding[1] = 1;
    CHECK_THAT(refusal(forward_padding), Catch::Contains("only a transposed convolution has one"));

    KforgeStep too_small = conv2d_step();
    too_small.conv.size[1] = 2;
    too_small.conv.padding[1] = 0;
    CHECK_THAT(refusal(too_small), Catch::Contains("output size along dimension 1 is less than 1"));

    KforgeStep four = conv2d_step();
    four.conv.spatial_dims = 4;
    CHECK_THAT(refusal(four), Catch::Contains("spatial_dims = 4"));

    KforgeStep half = conv2d_step();
    half.conv.dtype = "f64";
    CHECK_THAT(refusal(half), Catch::Contains("dtype is f64"));

    KforgeStep no_stride = conv2d_step();
    no_stride.conv.stride[1] = 0;
    CHECK_THAT(refusal(no_stride), Catch::Contains("stride[1] = 0"));
}

TEST_CASE("the step entry points refuse a missing state and operand list, and the library names its step libraries",
          "[vendor]")
{
    StepEntryPoints steps;
    REQUIRE_STEP_LIBRARY(steps);
    auto [status, text] = steps.run(nullptr, {});
    CHECK(status == KFORGE_VENDOR_BAD_BINDINGS);
    CHECK_THAT(text, Catch::Contains("no prepared step"));
    CHECK(std::string(steps.chosen(nullptr)).empty());
    steps.release(nullptr);
    CHECK_THAT(steps.versions(), Catch::Contains("cuBLASLt ") && Catch::Contains("cuDNN "));
}

TEST_CASE("every kind of library step matches a host computation for every allowed algorithm", "[gpu][vendor]")
{
    test::require_gpu();
    REQUIRE(vendor_library_build_note() == "");
    std::string report = test::run_in_child([] {
        StepEntryPoints steps;
        if (!steps.usable())
            return "FAIL " + steps.problem();
        auto [status, text] = steps.selftest();
        return (status == KFORGE_VENDOR_OK ? "ok   " : "FAIL (" + std::to_string(status) + ") ") + text;
    });
    INFO(report);
    CHECK(report.rfind("ok   library steps: ", 0) == 0);
}
