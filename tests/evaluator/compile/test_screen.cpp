// The source screen: each rule refuses what it must (positive cases) and lets ordinary CUDA
// through (negative cases). The include cases are the ways NVRTC 13.0 was seen to open a host
// file: absolute and relative paths, splices, digraphs, comments inside the directive, raw strings
// that hide a comment opener from a naive scanner, __has_include.
#include <catch2/catch.hpp>

#include "core/task.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/compile/screen.hpp"
#include "test_support.hpp"

using namespace kforge;

namespace {

const Task& softmax_task()
{
    static const Task task = load_task(test::source_dir() / "tasks/softmax_f32.json");
    return task;
}

const std::string k_screen_kernel = "extern \"C\" __global__ void softmax(const float* x, float* y, int M, int N) { y[0] = x[0]; }\n";

std::optional<Verdict> screen(const std::string& source, std::vector<std::string> kernels = {"softmax"})
{
    return screen_source(softmax_task(), source, kernels);
}

void require_refused(const std::string& source, const std::string& expected_fragment, VerdictKind kind = VerdictKind::compile_error)
{
    auto verdict = screen(source);
    INFO("source:\n" << source);
    REQUIRE(verdict);
    INFO("message:\n" << verdict->message);
    CHECK(verdict->kind == kind);
    CHECK(verdict->message.find(expected_fragment) != std::string::npos);
}

void require_accepted(const std::string& source)
{
    auto verdict = screen(source);
    INFO("source:\n" << source << "\nmessage:\n" << (verdict ? verdict->message : ""));
    CHECK(!verdict);
}

} // namespace

TEST_CASE("an include of a host file by absolute path is refused, naming the line and the header", "[evaluator][screen]")
{
    require_refused("// a comment\n#include \"/etc/passwd\"\n" + k_screen_kernel, "line 2: `#include \"/etc/passwd\"` is not allowed: absolute paths");
    require_refused("#include </etc/passwd>\n" + k_screen_kernel, "absolute paths are not allowed");
}

TEST_CASE("an include that climbs out of the toolkit with .. is refused", "[evaluator][screen]")
{
    require_refused("#include \"../x.h\"\n" + k_screen_kernel, "line 1: `#include \"../x.h\"`");
    require_refused("#include <cuda/../../../../etc/passwd>\n" + k_screen_kernel, "no '.', '..' or empty path components");
    require_refused("#include \"./cuda_fp16.h\"\n" + k_screen_kernel, "no '.', '..'");
}

TEST_CASE("a standard library header is refused, and the message lists what is allowed", "[evaluator][screen]")
{
    auto verdict = screen("#include <iostream>\n" + k_screen_kernel);
    REQUIRE(verdict);
    CHECK(verdict->message.find("line 1: `#include <iostream>` is not allowed: 'iostream' is not a CUDA toolkit header") !=
          std::string::npos);
    CHECK(verdict->message.find("<cuda_fp16.h>") != std::string::npos);
    CHECK(verdict->message.find("<cstdint>") != std::string::npos);
    CHECK(verdict->message.find("available without any include") != std::string::npos);
}

TEST_CASE("a macro-expanded include is refused", "[evaluator][screen]")
{
    require_refused("#define HEADER \"cuda_fp16.h\"\n#include HEADER\n" + k_screen_kernel,
                    "line 2: `#include` is not allowed: the header name must be written literally");
}

TEST_CASE("include directives disguised by splices, digraphs and comments are still screened", "[evaluator][screen]")
{
    // Each of these made NVRTC 13.0 read /etc/hostname in a probe.
    require_refused("#\\\ninclude \"/etc/passwd\"\n" + k_screen_kernel, "line 1:");
    require_refused("#\\\r\ninclude \"/etc/passwd\"\r\n" + k_screen_kernel, "absolute paths");
    require_refused("%:include \"/etc/passwd\"\n" + k_screen_kernel, "absolute paths");
    require_refused("# /* c */ include /* spans\n lines */ \"/etc/passwd\"\n" + k_screen_kernel, "absolute paths");
    require_refused("#include \"/etc/pa\\\nsswd\"\n" + k_screen_kernel, "`#include \"/etc/passwd\"`");
}

TEST_CASE("a raw string that hides a comment opener from a naive scanner does not hide an include", "[evaluator][screen]")
{
    // NVRTC sees the raw string end on line 1, so line 2 is a real directive.
    require_refused("const char* s = R\"x(\" /* )x\";\n#include \"/etc/passwd\"\n// */\n" + k_screen_kernel, "line 2:");
}

TEST_CASE("__has_include, #include_next, #import and #embed of host files are refused", "[evaluator][screen]")
{
    require_refused("#if __has_include(\"/etc/passwd\")\n#endif\n" + k_screen_kernel, "`__has_include(\"/etc/passwd\")`");
    require_refused("#include_next <cuda_fp16.h>\n" + k_screen_kernel, "#include_next is not allowed");
    require_refused("#import \"/etc/passwd\"\n" + k_screen_kernel, "#import is not allowed");
    require_refused("#embed \"/etc/passwd\"\n" + k_screen_kernel, "#embed is not allowed");
}

TEST_CASE("an include line inside a block comment is refused too (the backstop)", "[evaluator][screen]")
{
    require_refused("/*\n#include \"/etc/passwd\"\n*/\n" + k_screen_kernel, "line 2:");
}

TEST_CASE("toolkit headers and kforge's shims may be included, angled or quoted", "[evaluator][screen]")
{
    require_accepted("#include <cuda_fp16.h>\n#include \"cuda_bf16.h\"\n#include <cuda/std/cstdint>\n"
                     "#include <cub/block/block_reduce.cuh>\n#include <cooperative_groups.h>\n#include <mma.h>\n" +
                     k_screen_kernel);
    require_accepted("#include <cstdint>\n#include <stdint.h>\n#include <cfloat>\n#include <float.h>\n#include <cmath>\n"
                     "#include <math.h>\n#include <climits>\n#include \"cstdint\"\n" + k_screen_kernel);
    require_accepted("// #include <iostream> is commented out\n" + k_screen_kernel);
    require_accepted("#if __has_include(<cuda_fp8.h>)\n#include <cuda_fp8.h>\n#endif\n" + k_screen_kernel);
}

TEST_CASE("a task's forbidden pattern is refused with the task's reason, outside comments and strings only", "[evaluator][screen]")
{
    require_refused("extern \"C\" __global__ void softmax(const float* x, float* y, int M, int N)\n{\n"
                    "    __half h = __float2half(x[0]);\n    y[0] = __half2float(h);\n}\n",
                    "line 3: `__half` is not allowed in this task: an fp32 task: reduced-precision arithmetic is not allowed");
    require_accepted("// no __half here, and \"__half\" in a string is fine\n" + k_screen_kernel);
}

TEST_CASE("a kernel the plan launches but the source lacks is a plan error naming it", "[evaluator][screen]")
{
    auto verdict = screen("extern \"C\" __global__ void sofmax(float* y) { y[0] = 1; }\n", {"softmax"});
    REQUIRE(verdict);
    CHECK(verdict->kind == VerdictKind::plan_error);
    CHECK(verdict->message.find("the plan launches kernel 'softmax', which the source does not define") != std::string::npos);
    CHECK(verdict->message.find("did you mean 'sofmax'?") != std::string::npos);
    require_accepted(k_screen_kernel);
}

TEST_CASE("device-side launches and the device runtime's launch APIs are refused", "[evaluator][screen]")
{
    require_refused("extern \"C\" __global__ void child(float* y) { y[0] = 1; }\n"
                    "extern \"C\" __global__ void softmax(float* y) { child<<<1, 1>>>(y); }\n",
                    "line 2: `<<<`: device-side kernel launches are not allowed");
    require_refused("extern \"C\" __global__ void softmax(float* y) { void* p = cudaGetParameterBuffer(64, 64); }\n",
                    "`cudaGetParameterBuffer`: the device runtime's launch and stream APIs are not allowed");
    require_accepted("extern \"C\" __global__ void softmax(unsigned* y) { y[0] = y[1] << 3; y[2] = y[3] >> 2; }\n");
}

TEST_CASE("clock reads are refused, in inline PTX and as functions", "[evaluator][screen]")
{
    require_refused("extern \"C\" __global__ void softmax(unsigned long long* y)\n"
                    "{ unsigned long long t; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t)); y[0] = t; }\n",
                    "line 2: `%globaltimer`: reading a clock is not allowed");
    require_refused("extern \"C\" __global__ void softmax(long long* y) { y[0] = clock64(); }\n", "`clock64(`");
    require_accepted("extern \"C\" __global__ void softmax(float* y, int clock_rate) { y[0] = clock_rate; }\n");
}

TEST_CASE("every problem of a source is reported at once", "[evaluator][screen]")
{
    auto verdict = screen("#include <vector>\nextern \"C\" __global__ void other(float* y) { __half h; }\n");
    REQUIRE(verdict);
    CHECK(verdict->kind == VerdictKind::plan_error);
    CHECK(verdict->message.find("'softmax'") != std::string::npos);
    CHECK(verdict->message.find("<vector>") != std::string::npos);
    CHECK(verdict->message.find("`__half`") != std::string::npos);
}

TEST_CASE("allowed quoted includes are rewritten to angle brackets in place", "[evaluator][screen]")
{
    std::string source = "#include \"cuda_fp16.h\"\n#include \"cstdint\"\nint x;\n";
    std::string rewritten = angle_quoted_includes(source);
    CHECK(rewritten == "#include <cuda_fp16.h>\n#include <cstdint>\nint x;\n");
}

TEST_CASE("the lexer keeps line numbers across splices, raw strings and digit separators", "[evaluator][screen]")
{
    LexedSource lexed = lex_source("int a = 1'000'000; // x\nconst char* s = R\"(\nline\n)\";\n#define Y \\\n  2\nint b;\n");
    auto directives = find_directives(lexed);
    REQUIRE(directives.size() == 1);
    CHECK(directives[0].name == "define");
    CHECK(directives[0].line == 5);
    size_t b = lexed.code.find("int b");
    REQUIRE(b != std::string::npos);
    CHECK(lexed.line[b] == 7);
    CHECK(lexed.code.find("line") == std::string::npos); // raw string contents are blanked in code
    CHECK(lexed.text.find("line") != std::string::npos);
}

TEST_CASE("a macro that doubles itself forty times is refused before NVRTC runs", "[evaluator][screen][hostile]")
{
    std::string doubling = "#define A0 x x\n";
    for (int i = 1; i < 40; ++i)
        doubling += "#define A" + std::to_string(i) + " A" + std::to_string(i - 1) + " A" + std::to_string(i - 1) + "\n";
    require_refused(doubling + "int A39;\n" + k_screen_kernel, "its macros expand to more than 4194304 tokens");
    // The same through a function-like macro whose argument is used twice, nested in the arguments.
    std::string nested = "#define D(v) v v\n";
    std::string call = "y";
    for (int i = 0; i < 40; ++i)
        call = "D(" + call + ")";
    require_refused(nested + "int " + call + ";\n" + k_screen_kernel, "its macros expand to more than");
    // And across lines, as the preprocessor joins a call's arguments.
    std::string split_call = "y";
    for (int i = 0; i < 40; ++i)
        split_call = "D(\n" + split_call + "\n)";
    require_refused(nested + "int " + split_call + ";\n" + k_screen_kernel, "its macros expand to more than");
    // Defining the bomb without using it costs nothing.
    require_accepted(doubling + k_screen_kernel);
}

TEST_CASE("ordinary macros, recursion stopped by hide sets and variadic macros pass the bound",
          "[evaluator][screen][hostile]")
{
    require_accepted("#define BLOCK 256\n#define IDX(r, c) ((r) * N + (c))\n#define SELF SELF + 1\n"
                     "#define LOG(fmt, ...) printf(fmt, __VA_ARGS__)\n#define STR(a) #a\n#define CAT(a, b) a##b\n"
                     "__device__ int f(int N) { int SELF = 0; return IDX(1, 2) + BLOCK + CAT(SE, LF); }\n" +
                     k_screen_kernel);
    // 1000 uses of a macro that expands to 1000 tokens: a million, within the bound.
    std::string wide = "#define W " + std::string(1000 * 2, ' ');
    for (int i = 0; i < 1000; ++i)
        wide[10 + 2 * i] = 'w';
    std::string uses;
    for (int i = 0; i < 1000; ++i)
        uses += "W\n";
    require_accepted(wide + "\n#if 0\n" + uses + "#endif\n" + k_screen_kernel);
}

TEST_CASE("macro calls nested past the limit in arguments are refused, not recursed into",
          "[evaluator][screen][hostile]")
{
    std::string call = "y";
    for (int i = 0; i < 5000; ++i)
        call = "I(" + call + ")";
    require_refused("#define I(v) v\nint " + call + ";\n" + k_screen_kernel, "nested more than 200 deep");
}

TEST_CASE("a forbid pattern that backtracks for ever elsewhere screens a large source at once",
          "[evaluator][screen][hostile]")
{
    Task task = softmax_task();
    task.forbid.push_back({"((((.*)*)*)*)*QQQ", "never present"});
    std::string source = k_screen_kernel + "// " + std::string(300000, 'a') + "\n" +
                         "__device__ int filler() { return " + std::string(200000, '1') + "; }\n";
    auto verdict = screen_source(task, source, {"softmax"});
    CHECK_FALSE(verdict);
    task.forbid.back().regex = "fill(er)+";
    verdict = screen_source(task, source, {"softmax"});
    REQUIRE(verdict);
    CHECK_THAT(verdict->message, Catch::Contains("`filler` is not allowed in this task: never present"));
}

TEST_CASE("a megabyte line of comment openers and splices screens without recursion", "[evaluator][screen][hostile]")
{
    // std::regex recursed once per character on such lines (a stack overflow in the controller).
    std::string line(900000, ' ');
    for (size_t i = 0; i + 2 < line.size(); i += 3)
        line.replace(i, 2, "/*");
    require_accepted(k_screen_kernel + "// " + line + "\n");
    std::string spliced;
    for (int i = 0; i < 200000; ++i)
        spliced += "a\\\n";
    require_accepted(k_screen_kernel + "int " + spliced + "b;\n");
}
