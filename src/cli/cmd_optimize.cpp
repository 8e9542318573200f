// `kforge optimize TASK`: start a search run (DESIGN.md §1, §7).
//
// Order matters for a user who has no GPU, a typo in a model name or a missing key: everything that
// can be checked without the GPU is checked first (options, the task, model specs and keys, prompt
// templates), then the GPU evaluator starts (and times the baselines), and only then is the archive
// created — so a run that cannot start leaves no half-written archive behind. From then on the
// archive is the run: its run record holds the configuration, the task snapshot, the device and
// versions; the run secret (mixed into input seeds) is drawn here, kept in the search state for
// resume, and never printed.
#include <algorithm>
#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "cli/app.hpp"
#include "cli/option_checks.hpp"
#include "cli/cmd_optimize_common.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/gpu/remote.hpp"
#include "search/run_record.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

struct OptimizeOptions {
    std::string task_path;
    SessionOptions session;
    std::string output;
    std::optional<uint64_t> seed;
    std::optional<int> islands, generation_size, migrate_every, meta_every, max_lessons, window;
    std::string mix;
    std::string edit_form;
    bool no_repair = false;
    int repairs = 2;
    bool no_tune = false;
    std::string arch;
    std::optional<size_t> compile_workers;
    double deadline_s = 10;
    bool no_reuse = false;
};

std::string timestamp()
{
    std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char text[32];
    std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &local);
    return text;
}

// runs/<task>-<stamp>.kforge, with -2, -3, ... when two runs start in the same second.
fs::path default_archive_path(const std::string& task_name)
{
    fs::path dir = "runs";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        fail_runtime("cannot create {}: {}", dir.string(), ec.message());
    std::string stem = fmt::format("{}-{}", task_name, timestamp());
    fs::path path = dir / (stem + ".kforge");
    for (int n = 2; fs::exists(path, ec); ++n)
        path = dir / fmt::format("{}-{}.kforge", stem, n);
    return path;
}

RunConfig build_config(const OptimizeOptions& o)
{
    RunConfig config;
    SearchConfig& s = config.search;
    if (o.islands)
        s.islands = *o.islands;
    if (o.generation_size)
        s.generation_size = *o.generation_size;
    if (o.migrate_every)
        s.migrate_every = *o.migrate_every;
    if (o.meta_every)
        s.meta_every = *o.meta_every;
    if (o.max_lessons)
        s.max_lessons = *o.max_lessons;
    if (o.window)
        s.window = *o.window;
    if (!o.mix.empty())
        s.mix = parse_selection_mix(o.mix);
    if (!o.edit_form.empty())
        s.edit_form = parse_edit_form_policy(o.edit_form).value_or(EditFormPolicy::mix);
    s.repairs = o.no_repair ? 0 : o.repairs;
    s.tune = !o.no_tune;
    s.seed = o.seed ? *o.seed : random_u64();
    if (!o.session.no_knowledge && o.session.knowledge_path.empty())
        config.knowledge = default_knowledge_path().string();
    config.evaluator = Json{{"arch", o.arch}, {"compile_workers", o.compile_workers.value_or(0)}, {"deadline_s", o.deadline_s},
                            {"reuse", !o.no_reuse}};
    apply_session_options(o.session, BudgetBase{}, config);
    return config;
}

int run_optimize(const OptimizeOptions& options)
{
    std::unique_ptr<MpiWorld> mpi = join_mpi_launch(); // null on a plain run
    if (mpi && mpi->rank() != 0)
        return serve_gpus(*mpi, "");
    MpiController controller(std::move(mpi));
    Task task = load_task(options.task_path);
    RunConfig config = build_config(options);
    Session session(task, config);
    log_info("kforge optimize {}: {} island{}, budget {} candidates, proposer: {}", task.name, config.search.islands,
             config.search.islands == 1 ? "" : "s", config.search.budgets.candidates, session.proposer_label());

    uint64_t secret = random_u64();
    session.start_evaluator(config, secret, controller.world(), options.session.gpu_share,
                            options.session.gpu_searches);

    fs::path path = options.output.empty() ? default_archive_path(task.name) : fs::path(options.output);
    RunInfo run = new_run_record(task, path.stem().string(), config.to_json(), config.search.seed);
    record_environment(run, session.evaluator().environment());
    Archive archive = Archive::create(path, run);
    store_run_secret(archive, secret);
    log_info("archive: {}", path.string());
    return run_and_report(archive, task, config, session, options.session.json);
}

// Every flag of `kforge optimize` and its check, on `cmd`: the command itself and check_optimize_flags
// register the very same options.
void add_optimize_options(CLI::App* cmd, OptimizeOptions& o)
{
    cmd->add_option("TASK", o.task_path, "task spec (JSON)")->required();
    add_session_options(cmd, o.session, false);
    cmd->add_option("-o,--output,--archive", o.output,
                    "the run archive (SQLite) to create; it must not exist yet (default runs/<task>-<stamp>.kforge)");
    cmd->add_option("--seed", o.seed, "seed of every random choice (default: random; stored in the archive)")
        ->check(unsigned_number());
    cmd->add_option("--islands", o.islands, "islands, each with its own MAP-Elites grid (default 4)")
        ->check(whole_number(1, 64));
    cmd->add_option("--generation-size", o.generation_size, "candidates per island that make a generation (default 4)")
        ->check(whole_number(1, 10000));
    cmd->add_option("--migrate-every", o.migrate_every, "generations between ring migrations (default 2)")
        ->check(whole_number(1, 1000000));
    cmd->add_option("--meta-every", o.meta_every, "generations between rewrites of the weakest strategy (default 3)")
        ->check(whole_number(1, 1000000));
    cmd->add_option("--max-lessons", o.max_lessons, "lessons the analyst may write per run (default 20)")
        ->check(whole_number(0, 1000000));
    cmd->add_option("--window", o.window, "items in flight, proposing or being evaluated (default: 2 x --parallel + 2, "
                                          "at least 4 per GPU + 2); fixes the run's choices across GPU counts")
        ->check(whole_number(0, 1024));
    cmd->add_option("--mix", o.mix, "parent selection weights exploit,explore,target (default 0.6,0.2,0.2)");
    cmd->add_option("--edit-form", o.edit_form, "whole, diff (SEARCH/REPLACE) or mix (default)")
        ->check(CLI::IsMember({"whole", "diff", "mix"}));
    cmd->add_option("--repairs", o.repairs, "repair rounds in a row for a failed model-written candidate, each "
                                            "shown the compiler's or verifier's message (0: none)")
        ->check(whole_number(0, 10))
        ->capture_default_str();
    cmd->add_flag("--no-repair", o.no_repair, "no repair rounds (--repairs 0)");
    cmd->add_flag("--no-tune", o.no_tune, "no param-variation candidates after a new island best");
    cmd->add_option("--arch", o.arch, "target arch, e.g. sm_90a (default: the GPU's)")->check(gpu_arch());
    cmd->add_option("--compile-workers", o.compile_workers, "parallel NVRTC compiles, 1 to 1024 (default: $KFORGE_COMPILE_WORKERS, else 4 per GPU, at least 16, at "
                    "most one per CPU this process may use)")
        ->check(whole_number(1, static_cast<int64_t>(k_max_compile_workers)));
    cmd->add_option("--deadline", o.deadline_s, "seconds one run of a plan may take before it is killed")
        ->check(real_number(0, 3600, true))
        ->capture_default_str();
    cmd->add_flag("--no-reuse", o.no_reuse, "run every verification and timing on the GPU, even of a (kernel binary, "
                                            "params) point measured earlier in the run (for comparisons)");
}

} // namespace

void check_optimize_flags(const std::vector<std::string>& flags)
{
    CLI::App probe{"kforge optimize", "kforge optimize"};
    OptimizeOptions options;
    add_optimize_options(&probe, options);
    std::vector<std::string> argv{"TASK"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    std::reverse(argv.begin(), argv.end()); // CLI11 takes a vector last-argument-first
    try {
        probe.parse(argv);
    } catch (const CLI::ParseError& e) {
        fail(ErrorKind::usage, "{}", e.what());
    }
    build_config(options);
}

void add_optimize_command(CLI::App& app, CommandSlot& slot)
{
    auto o = std::make_shared<OptimizeOptions>();
    auto* cmd = app.add_subcommand("optimize", "search for a faster kernel: LLM proposals (or the builtin proposer), "
                                               "MAP-Elites islands, every candidate verified and timed on the GPU");
    cmd->footer("The run is kept in one archive (default runs/<task>-<stamp>.kforge) that `kforge resume` continues, "
                "`kforge inspect` and `kforge export` read.\nCtrl-C stops after in-flight work (exit 130, resumable); a "
                "second Ctrl-C stops at once.\nEvery visible GPU is used (--gpus to choose); across hosts: mpirun "
                "--enable-recovery --bind-to none -n R kforge optimize ... (rank 0 searches, the other ranks serve their "
                "hosts' GPUs), or srun --mpi=pmix.\nExit codes: 0 finished, 2 usage, 3 bad input, 4 runtime failure (no GPU, "
                "the model unreachable), 130 interrupted.");
    add_optimize_options(cmd, *o);
    cmd->callback([o, &slot] { slot = [o] { return run_optimize(*o); }; });
}

} // namespace kforge
