// What `kforge optimize` and `kforge resume` share: their options, the run configuration stored in
// the archive (search/run_config.hpp) made from them, building the proposer, models, knowledge base
// and evaluator of a session, and printing the summary.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "agents/builtin_proposer.hpp"
#include "agents/model_mix.hpp"
#include "agents/prompt_library.hpp"
#include "archive/knowledge_base.hpp"
#include "evaluator/evaluator.hpp"
#include "search/run_config.hpp"
#include "search/search.hpp"
#include "util/mpi_world.hpp"

namespace kforge {

// Flags common to optimize and resume. Budget values are text so resume can take "+N".
struct SessionOptions {
    std::vector<std::string> models;
    std::string budget, max_calls, max_cost, time;
    std::optional<int> patience;
    std::optional<int> parallel;
    std::string knowledge_path;
    bool no_knowledge = false;
    bool json = false;
    std::string progress;          // auto | live | lines | quiet ("" keeps the stored one)
    std::optional<double> temperature;
    std::optional<int64_t> max_tokens;
    std::string pricing_path;
    std::string prompts_dir;
    std::optional<double> timeout_s, connect_timeout_s, retry_backoff_s;
    std::optional<int> retries;
    std::string gpus;              // --gpus: all, N or indices ("" keeps the stored one)
    std::string gpu_share;         // --gpu-share DIR: GPUs shared with other runs (not stored)
    int gpu_searches = 0;          // --gpu-searches N: with --gpu-share, search in one of N turns (0: no turns)
    std::string strategy;          // --strategy: direct | plan | mix ("" keeps the stored one)
    std::optional<double> plan_share;   // --plan-share (with mix)
    std::optional<double> plan_explore; // --plan-explore
    std::vector<std::string> planner_models; // --planner-model
    std::string menu;              // --menu NAME
    std::string menus_dir;         // --menus DIR
};

// Registers the SessionOptions flags on `cmd`; `resume` changes the budget help texts ("+N").
void add_session_options(CLI::App* cmd, SessionOptions& options, bool resume);
// --parallel (model calls in flight, 1 to 64) with its check; `suite run` registers it too.
CLI::Option* add_parallel_option(CLI::App* cmd, std::optional<int>& parallel, const std::string& help);

// What --budget and --max-calls (Amount::count: a whole number) and --max-cost (Amount::dollars)
// accept: N from 0 to the bound in util/limits.hpp, or +N for N more than `base` (what a resumed run
// has used). Returns the total; throws Error(usage) naming `flag`, the range and the text.
enum class Amount { count, dollars };
double parse_amount(const std::string& text, const char* flag, double base, Amount kind);

// Every check `kforge optimize` makes on its flags before it touches anything: CLI11's parse with
// each option's validator, then the run configuration's (budgets, --mix, --strategy, ...). `flags`
// are what would follow TASK. `suite run` checks what it will pass on to its optimize children with
// it before it writes its folder, so a value optimize would refuse never reaches the manifest.
// Throws Error(usage) naming the flag. Defined in cmd_optimize.cpp.
void check_optimize_flags(const std::vector<std::string>& flags);

// Applies the session flags to `config`. `base` holds what the archive has used so far (0 for a new
// run): "+N" budgets count from there. Throws Error(usage) for malformed values.
struct BudgetBase {
    int64_t candidates = 0;
    int64_t calls = 0;
    double cost_usd = 0;
};
void apply_session_options(const SessionOptions& options, const BudgetBase& base, RunConfig& config);

// Under an MPI launcher (util/mpi_world.hpp), joins the MPI world; null on a plain run, which never
// touches MPI. Throws Error(runtime) when the launch cannot work (kforge built without MPI, a
// launcher that gives every task a world of its own). Rank 0 warns when a dead rank would end the
// whole job (Open MPI's mpirun without --enable-recovery, SLURM's srun --mpi=pmix).
std::unique_ptr<MpiWorld> join_mpi_launch();

// Rank 0's hold on the MPI world for one command: whatever way the command ends, the evaluation
// services hear that the session is over, then MPI is finalized. Declare it before the Session,
// whose evaluator talks to the services until it is destroyed.
class MpiController
{
public:
    explicit MpiController(std::unique_ptr<MpiWorld> world);
    ~MpiController();
    MpiController(const MpiController&) = delete;
    MpiController& operator=(const MpiController&) = delete;
    MpiWorld* world() const { return m_world.get(); }

private:
    std::unique_ptr<MpiWorld> m_world;
};

// Everything one session of a run works with; owns what SearchServices refers to.
class Session
{
public:
    // Builds the proposer and the model mix (checking API keys), the cost model and the knowledge
    // base. Starts nothing on the GPU.
    Session(const Task& task, const RunConfig& config);
    ~Session();
    // Starts the GPU evaluator (throws Error(runtime) "no NVIDIA driver/GPU found" without one);
    // with `mpi`, over the GPUs of every rank; with `gpu_share_dir`, on GPUs shared with other runs
    // (EvaluatorConfig::gpu_share_dir, gpu_searches).
    void start_evaluator(const RunConfig& config, uint64_t run_secret, MpiWorld* mpi = nullptr,
                         const std::string& gpu_share_dir = "", int gpu_searches = 0);
    SearchServices services();
    CandidateEvaluator& evaluator() { return *m_evaluator; }
    std::string proposer_label() const { return m_proposer_label; }

private:
    const Task& m_task;
    std::unique_ptr<PromptLibrary> m_library;
    ModelMix m_models;
    ModelMix m_planners;           // empty: the models plan
    std::unique_ptr<Menu> m_menu;  // set for two-phase proposals
    std::unique_ptr<Proposer> m_proposer;
    BuiltinProposer* m_builtin = nullptr;
    std::unique_ptr<KnowledgeBase> m_knowledge;
    std::unique_ptr<CandidateEvaluator> m_evaluator;
    CostModel m_cost;
    std::string m_proposer_label;
};

// Runs the search for this session, then prints the run summary (text, or JSON with --json) and
// returns the command's exit code: 0, 130 when interrupted, 4 when the model was unreachable.
int run_and_report(Archive& archive, const Task& task, const RunConfig& config, Session& session, bool json);

// $XDG_DATA_HOME/kforge/knowledge.sqlite (the folder is created).
std::filesystem::path default_knowledge_path();

// A fresh random 64-bit value (seeds, run secrets).
uint64_t random_u64();

} // namespace kforge
