// compile_with_nvrtc(): one candidate, one param point, to a CUBIN, in this process.
//
// The steps follow research/evaluator.md §8.2: screen the includes (so no caller can compile a
// host file into a log), create the program with the prelude and the shims as in-memory headers,
// register every kernel as a name expression (works for extern "C" names too, and gives the
// mangled symbol of a C++ kernel), compile for a real arch so a CUBIN comes out, then keep the log
// always, the CUBIN and lowered names on success, and the ptxas resource report. The candidate is
// named "candidate.cu" and its quoted includes are rewritten to angled ones, so NVRTC never
// searches the working directory for them.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "evaluator/compile/compile.hpp"
#include "evaluator/compile/cubin_info.hpp"
#include "evaluator/compile/nvrtc_log.hpp"
#include "evaluator/compile/nvrtc_program.hpp"
#include "evaluator/compile/prelude.hpp"
#include "evaluator/compile/screen.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/text.hpp"

#ifndef KFORGE_CUDA_INCLUDE_DIR
#error "evaluator/compile/CMakeLists.txt defines KFORGE_CUDA_INCLUDE_DIR (the toolkit's include folder)"
#endif

namespace kforge {

namespace {

constexpr const char* k_program_name = "candidate.cu";

std::vector<NvrtcHeader> program_headers()
{
    std::vector<NvrtcHeader> headers{{std::string(k_prelude_header_name), candidate_prelude()}};
    for (const auto& shim : shim_headers())
        headers.push_back({shim.name, shim.text});
    return headers;
}

CompileResult refused(std::string message)
{
    CompileResult result;
    result.failure = VerdictKind::compile_error;
    result.message = std::move(message);
    return result;
}

} // namespace

std::string check_arch_name(std::string_view arch)
{
    // sm_ then two or three digits, then optionally a (arch-specific) or f (family-specific).
    std::string_view digits = arch.substr(std::min<size_t>(3, arch.size()));
    if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f'))
        digits.remove_suffix(1);
    bool ok = arch.substr(0, 3) == "sm_" && digits.size() >= 2 && digits.size() <= 3 &&
              std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (ok)
        return "";
    return fmt::format("'{}' is not a real GPU architecture (expected sm_ and its compute capability, such as "
                       "sm_80, sm_90a or sm_100a)",
                       arch.substr(0, 40));
}

namespace {

// "" or why the request cannot be compiled as asked (never the candidate's fault alone: arch and
// params come from kforge and the plan).
std::string check_request(const CompileRequest& request)
{
    static const std::regex identifier(R"([A-Za-z_][A-Za-z0-9_]*)");
    if (std::string problem = check_arch_name(request.arch); !problem.empty())
        return problem + ", so no CUBIN could be made";
    for (const auto& [name, value] : request.params)
        if (!std::regex_match(name, identifier))
            return fmt::format("param '{}' is not a C identifier, so it cannot be passed as -D{}={}", name, name, value);
    for (const auto& kernel : request.kernels)
        if (kernel.empty())
            return "the plan names an empty kernel";
    return "";
}

// A name expression NVRTC could not resolve shows up as errors in "__nv_name_map"; say it plainly.
std::string explain_name_map_errors(const std::string& message, const std::vector<std::string>& kernels)
{
    if (message.find("__nv_name_map") == std::string::npos)
        return message;
    std::vector<std::string> missing;
    for (const auto& k : kernels)
        if (message.find("\"" + k + "\" is undefined") != std::string::npos)
            missing.push_back("'" + k + "'");
    std::string lines;
    for (const auto& line : split(message, '\n'))
        if (line.find("__nv_name_map") == std::string::npos && line.find("nv_mangled_name") == std::string::npos &&
            trim(line) != "^")
            lines += line + "\n";
    return fmt::format("the plan launches kernel{} {} that the source does not define as a __global__ function\n{}",
                       missing.size() == 1 ? "" : "s", missing.empty() ? "(see below)" : join(missing, ", "), trim(lines));
}

} // namespace

void check_nvrtc(nvrtcResult result, const char* call, const char* file, int line)
{
    if (result == NVRTC_SUCCESS)
        return;
    fail_runtime("NVRTC: {} failed at {}:{}: {}", call, std::filesystem::path(file).filename().string(), line,
                 nvrtcGetErrorString(result));
}

NvrtcProgram::NvrtcProgram(const std::string& source, const std::string& name, const std::vector<NvrtcHeader>& headers)
{
    std::vector<const char*> texts;
    std::vector<const char*> names;
    for (const auto& h : headers) {
        texts.push_back(h.text.c_str());
        names.push_back(h.name.c_str());
    }
    KF_NVRTC_CHECK(nvrtcCreateProgram(&m_program, source.c_str(), name.c_str(), static_cast<int>(headers.size()),
                                      texts.data(), names.data()));
}

NvrtcProgram::~NvrtcProgram()
{
    if (m_program)
        nvrtcDestroyProgram(&m_program);
}

std::string NvrtcProgram::log() const
{
    size_t size = 0;
    KF_NVRTC_CHECK(nvrtcGetProgramLogSize(m_program, &size));
    std::string log(size, '\0');
    if (size > 0)
        KF_NVRTC_CHECK(nvrtcGetProgramLog(m_program, log.data()));
    while (!log.empty() && log.back() == '\0')
        log.pop_back();
    return log;
}

std::string NvrtcProgram::cubin() const
{
    size_t size = 0;
    KF_NVRTC_CHECK(nvrtcGetCUBINSize(m_program, &size));
    std::string cubin(size, '\0');
    if (size > 0)
        KF_NVRTC_CHECK(nvrtcGetCUBIN(m_program, cubin.data()));
    return cubin;
}

std::string NvrtcProgram::lowered_name(const std::string& expression) const
{
    const char* lowered = nullptr;
    KF_NVRTC_CHECK(nvrtcGetLoweredName(m_program, expression.c_str(), &lowered));
    return lowered ? std::string(lowered) : std::string();
}

std::vector<std::filesystem::path> toolkit_include_dirs()
{
    static const std::vector<std::filesystem::path> dirs = [] {
        const char* home = std::getenv("CUDA_HOME");
        bool from_env = home && *home;
        std::filesystem::path include =
            from_env ? std::filesystem::path(home) / "include" : std::filesystem::path(KFORGE_CUDA_INCLUDE_DIR);
        std::error_code ec;
        if (!std::filesystem::is_regular_file(include / "cuda_fp16.h", ec) ||
            !std::filesystem::is_directory(include / "cccl" / "cuda", ec))
            fail_runtime("the CUDA toolkit headers are not in {} ({}); NVRTC needs the headers of the toolkit it came "
                         "from, with CCCL under include/cccl (CUDA 13). Set CUDA_HOME to that toolkit.",
                         include.string(), from_env ? "from CUDA_HOME" : "the toolkit kforge was built with");
        return std::vector<std::filesystem::path>{include / "cccl", include};
    }();
    return dirs;
}

std::string nvrtc_version()
{
    int major = 0;
    int minor = 0;
    KF_NVRTC_CHECK(nvrtcVersion(&major, &minor));
    return fmt::format("{}.{}", major, minor);
}

const std::string& toolkit_fingerprint()
{
    static const std::string fingerprint = [] {
        Hasher hasher;
        auto include = toolkit_include_dirs().back();
        for (const char* file : {"cuda.h", "cuda_fp16.hpp", "cuda_bf16.hpp", "cccl/cuda/std/__cccl/version.h"}) {
            std::error_code ec;
            hasher.add(file);
            if (std::filesystem::is_regular_file(include / file, ec))
                hasher.add(read_file(include / file));
        }
        return hasher.hex();
    }();
    return fingerprint;
}

std::vector<std::string> nvrtc_options(const CompileRequest& request)
{
    auto dirs = toolkit_include_dirs();
    std::vector<std::string> options = {
        "-arch=" + request.arch, "-std=c++17", "-default-device", "-lineinfo", "-Xptxas=-v",
        "-fmad=true", "-ftz=false", "-prec-div=true", "-prec-sqrt=true",
    };
    for (const auto& dir : dirs)
        options.push_back("-I" + dir.string());
    options.push_back("-include");
    options.push_back(std::string(k_prelude_header_name));
    for (const auto& [name, value] : request.params)
        options.push_back(fmt::format("-D{}={}", name, value));
    options.insert(options.end(), request.extra_options.begin(), request.extra_options.end());
    return options;
}

CompileResult compile_with_nvrtc(const CompileRequest& request)
{
    if (std::string problem = check_request(request); !problem.empty())
        return refused(problem);
    if (auto problems = screen_includes(request.source); !problems.empty())
        return refused(join(problems, "\n"));

    auto start = std::chrono::steady_clock::now();
    NvrtcProgram program(angle_quoted_includes(request.source), k_program_name, program_headers());
    std::vector<std::string> kernels;
    for (const auto& k : request.kernels)
        if (std::find(kernels.begin(), kernels.end(), k) == kernels.end())
            kernels.push_back(k);
    for (const auto& k : kernels)
        KF_NVRTC_CHECK(nvrtcAddNameExpression(program.get(), k.c_str()));
    std::vector<std::string> options = nvrtc_options(request);
    std::vector<const char*> option_ptrs;
    for (const auto& o : options)
        option_ptrs.push_back(o.c_str());
    nvrtcResult status = nvrtcCompileProgram(program.get(), static_cast<int>(option_ptrs.size()), option_ptrs.data());

    CompileResult result;
    result.log = sanitize_nvrtc_log(program.log());
    if (status != NVRTC_SUCCESS) {
        result.failure = VerdictKind::compile_error;
        result.message = explain_name_map_errors(trim_log_for_model(result.log), kernels);
        if (status != NVRTC_ERROR_COMPILATION)
            result.message = fmt::format("NVRTC refused the compile ({})\n{}", nvrtcGetErrorString(status), result.message);
    } else {
        result.cubin = program.cubin();
        std::map<std::string, std::string> source_name_of;
        for (const auto& k : kernels) {
            std::string lowered = program.lowered_name(k);
            result.lowered_names[k] = lowered;
            source_name_of[lowered] = k;
        }
        result.resources = parse_ptxas_report(result.log);
        for (auto& r : result.resources)
            if (auto it = source_name_of.find(r.kernel); it != source_name_of.end())
                r.kernel = it->second;
        // Some NVRTC builds leave the ptxas report out of the log: the CUBIN still knows.
        add_cubin_resources(result, kernels);
        result.ok = !result.cubin.empty();
        if (!result.ok)
            result.message = "NVRTC produced no CUBIN (is the arch a real one, like sm_90a?)";
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace kforge
