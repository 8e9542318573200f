// `kforge doctor`: is this machine ready to run kforge, and if not, what to do.
//
// Checks, each with a status and a fix: the CUDA toolkit's NVRTC (a trivial kernel is compiled and
// timed), the GPU and driver (asked of a GPU worker process, so this process never initialises
// CUDA), CUPTI activity tracing, access to performance counters, the cache folder, and which model
// API keys are set (names only, never values). Exits 1 when something a user needs is missing.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>

#include <fmt/format.h>
#include <unistd.h>

#include "cli/app.hpp"
#include "cli/option_checks.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/gpu/client.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace kforge {
namespace {

struct DoctorOptions {
    bool json = false;
    std::string arch = "sm_90a";
};

struct Check {
    std::string name;
    std::string status; // ok | warn | fail
    std::string detail;
    std::string fix;
};

// The driver's profiling restriction, read without touching CUDA.
std::string profiling_restriction()
{
    std::ifstream params("/proc/driver/nvidia/params");
    std::string line;
    while (std::getline(params, line))
        if (line.rfind("RmProfilingAdminOnly:", 0) == 0)
            return line.substr(line.find(':') + 1);
    return "";
}

int run_doctor(const DoctorOptions& options)
{
    std::vector<Check> checks;

    CompileRequest request;
    request.source = "extern \"C\" __global__ void kforge_doctor(float* y) { y[threadIdx.x] = 2.0f * threadIdx.x; }\n";
    request.arch = options.arch;
    request.kernels = {"kforge_doctor"};
    auto begin = std::chrono::steady_clock::now();
    CompileResult compiled = compile_with_nvrtc(request);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    if (compiled.ok)
        checks.push_back({"nvrtc", "ok", fmt::format("NVRTC {} compiled a trivial kernel for {} in {:.0f} ms ({} bytes of "
                                                     "CUBIN)",
                                                     nvrtc_version(), options.arch, ms, compiled.cubin.size()),
                          ""});
    else
        checks.push_back({"nvrtc", "fail", "NVRTC could not compile a trivial kernel: " + compiled.message,
                          "install the CUDA Toolkit 13.0 (or 12.8+) and make sure libnvrtc is found"});

    GpuWorkerClient worker("", "");
    WorkerReply device = worker.request(Json{{"op", "device"}}, std::chrono::seconds(60));
    worker.stop();
    bool have_gpu = false;
    if (device.failure != WorkerFailure::none) {
        checks.push_back({"gpu", "fail", "the GPU worker could not run: " + device.failure_message,
                          "check the NVIDIA driver with nvidia-smi"});
    } else if (!device.body.value("ok", false)) {
        checks.push_back({"gpu", "fail", device.body.value("error", "no NVIDIA driver/GPU found"),
                          "kforge needs an NVIDIA GPU with a CUDA 13-capable driver (580+) for optimize and eval; "
                          "without one, `kforge task check`, `eval --compile-only`, `propose`, `inspect` and `export` "
                          "still work"});
    } else {
        have_gpu = true;
        const Json& facts = device.body.at("device");
        checks.push_back({"gpu", "ok",
                          fmt::format("{} ({}, {} SMs, {:.0f} GiB, {} MiB L2), driver for CUDA {}", facts.value("name", "?"),
                                      facts.value("arch", "?"), facts.value("sm_count", 0),
                                      facts.value("total_memory_bytes", 0.0) / (1 << 30), facts.value("l2_bytes", 0) >> 20,
                                      facts.value("driver_version", "?")),
                          ""});
        std::string cupti = device.body.value("cupti", "");
        if (cupti.empty())
            checks.push_back({"cupti", "ok", "CUPTI activity tracing works (kernel timings)", ""});
        else
            checks.push_back({"cupti", "fail", "CUPTI activity tracing is unavailable: " + cupti,
                              "kforge times kernels with CUPTI; do not run it under nsys/ncu/compute-sanitizer "
                              "(CUPTI allows one subscriber)"});
    }

    std::string restriction = profiling_restriction();
    bool root = ::geteuid() == 0;
    if (root || restriction.find('0') != std::string::npos)
        checks.push_back({"counters", "ok",
                          root ? "running as root: hardware counters (profiling metrics) are readable"
                               : "the driver allows non-admin profiling",
                          ""});
    else if (!restriction.empty())
        checks.push_back({"counters", "warn", "performance counters are restricted to admin users (RmProfilingAdminOnly=1): "
                                              "profiling metrics will be unavailable; timings are unaffected",
                          "set `options nvidia NVreg_RestrictProfilingToAdminUsers=0` in /etc/modprobe.d and reboot, or "
                          "run as root"});
    else if (have_gpu)
        checks.push_back({"counters", "warn", "could not read the driver's profiling restriction", ""});

    try {
        auto dir = cache_dir();
        checks.push_back({"cache", "ok", "CUBIN cache in " + (dir / "cubin").string(), ""});
    } catch (const Error& e) {
        checks.push_back({"cache", "warn", e.what(), "set XDG_CACHE_HOME to a writable folder"});
    }

    std::vector<std::string> keys;
    for (const char* name : {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"})
        if (const char* value = std::getenv(name); value && *value)
            keys.push_back(name);
    if (keys.empty())
        checks.push_back({"api keys", "ok", "no model API key set: `kforge optimize` will use the built-in offline "
                                            "proposer",
                          "export OPENAI_API_KEY or ANTHROPIC_API_KEY to use a hosted model"});
    else
        checks.push_back({"api keys", "ok", "set: " + fmt::format("{}", fmt::join(keys, ", ")) + " (values never shown)", ""});

    bool failed = false;
    Json report = Json::array();
    for (const auto& check : checks) {
        failed = failed || check.status == "fail";
        report.push_back(Json{{"check", check.name}, {"status", check.status}, {"detail", check.detail}, {"fix", check.fix}});
    }
    if (options.json) {
        fmt::print("{}\n", report.dump(2));
    } else {
        for (const auto& check : checks) {
            fmt::print("{:<5} {:<9} {}\n", check.status, check.name, check.detail);
            if (check.status != "ok" && !check.fix.empty())
                fmt::print("{:<15} fix: {}\n", "", check.fix);
        }
        fmt::print("{}\n", failed ? "Some checks failed; see the fixes above." : "kforge is ready.");
    }
    return failed ? k_exit_negative : k_exit_ok;
}

} // namespace

void add_doctor_command(CLI::App& app, CommandSlot& slot)
{
    auto options = std::make_shared<DoctorOptions>();
    auto* doctor = app.add_subcommand("doctor", "check the GPU, driver, NVRTC, CUPTI, counters and API keys");
    doctor->add_flag("--json", options->json, "print the checks as JSON on stdout");
    doctor->add_option("--arch", options->arch, "arch for the NVRTC test compile")->check(gpu_arch())->capture_default_str();
    doctor->callback([options, &slot] { slot = [options] { return run_doctor(*options); }; });
}

} // namespace kforge
