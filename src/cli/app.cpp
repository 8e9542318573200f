// Builds the CLI, runs the chosen subcommand, maps errors to exit codes. This and the
// per-candidate wrapper in the search are the only places that catch kforge::Error.
#include "cli/app.hpp"

#include <cstdio>

#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "0.0.0"
#endif

namespace kforge {
namespace {

constexpr const char* k_exit_codes = R"(Exit codes:
  0    success
  1    ran, but the answer is negative (doctor found a problem, a verdict is not correct,
       a task's self-test failed)
  2    usage error (bad command line)
  3    bad input (task spec, candidate file, archive, config)
  4    runtime failure (GPU, driver, disk, network)
  130  interrupted (Ctrl-C); an interrupted run can be resumed)";

} // namespace

int run_cli(int argc, char** argv)
{
    CLI::App app{"kforge: finds fast CUDA kernels with LLM-driven evolutionary search", "kforge"};
    app.footer(k_exit_codes);
    app.set_version_flag("--version", KFORGE_VERSION);
    app.require_subcommand(1);
    std::string level = "info";
    app.add_option("--log-level", level, "error, warn, info or debug")->capture_default_str();
    bool quiet = false;
    app.add_flag("-q,--quiet", quiet, "only warnings and errors on stderr");

    CommandSlot slot;
    add_dataset_command(app, slot);
    add_doctor_command(app, slot);
    add_eval_command(app, slot);
    add_export_command(app, slot);
    add_inspect_command(app, slot);
    add_lessons_command(app, slot);
    add_optimize_command(app, slot);
    add_resume_command(app, slot);
    add_task_command(app, slot);
    add_propose_command(app, slot);
    add_report_command(app, slot);
    add_suite_command(app, slot);
    add_model_command(app, slot);
    add_worker_command(app, slot);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? k_exit_ok : k_exit_usage;
    }
    LogLevel parsed;
    if (!parse_log_level(level, parsed)) {
        std::fprintf(stderr, "error: --log-level: expected error, warn, info or debug, got '%s'\n", level.c_str());
        return k_exit_usage;
    }
    set_log_level(quiet ? LogLevel::warn : parsed);
    if (!slot)
        return k_exit_usage;
    try {
        install_interrupt_handler();
        return slot();
    } catch (const Error& e) {
        log_error("{}", e.what());
        return exit_code_of(e.kind());
    } catch (const std::exception& e) {
        log_error("internal error: {}", e.what());
        return k_exit_runtime;
    }
}

} // namespace kforge
