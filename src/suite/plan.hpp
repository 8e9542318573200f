// How `kforge suite run` runs one problem's next session: which proposer, which budgets, and the
// command line of the `kforge optimize` (new archive) or `kforge resume` (existing one) child.
//
// Models per problem: `--model replay:DIR/` (a folder) gives each problem the recorded replies in
// DIR/<stem>.jsonl, where <stem> is its source file's stem; such a run is limited to as many model
// calls as the file has replies (--max-calls), so it ends when they are used rather than with
// failing calls, and without --budget its candidate budget is the replies plus the task's seeds plus
// one. A problem without its file uses the builtin proposer when its task has seed kernels and is
// skipped otherwise, as is any problem left to the builtin proposer without seeds. Other --model
// values apply to every problem, as they do in `optimize`.
//
// Budgets per problem: --budget N candidates over the run; --time T of search over the run (a
// resumed problem gets what its archive's earlier sessions left of T). A run that has nothing left
// of them is finished, not resumed. --max-cost is the whole suite's: the runner gives each child a
// share of what is left (see runner.hpp).
//
// Resuming a replay run serves the replies its archive does not hold yet: they are written to
// runs/<id>.replay.jsonl (the replay provider always starts at the top of its file).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "suite/manifest.hpp"

namespace kforge {

struct ProblemLaunch {
    enum class Outcome
    {
        run,      // start the child below
        finished, // the archive needs nothing more (budget, time or replies used; run finished)
        skipped,  // nothing can propose its kernels
        failed    // its spec does not load, or its archive cannot be read
    };
    Outcome outcome = Outcome::run;
    std::string reason;            // for every outcome but run
    std::string command;           // "optimize" or "resume"
    std::vector<std::string> args; // the kforge command line, without --gpus and --max-cost
    std::string model_label;       // "builtin", "replay:FILE", or the --model list joined
    bool priced = false;           // its models cost money: it takes a share of --max-cost
    bool torch_program = false;    // its reference is a PyTorch program (a reference process runs)
    uint64_t task_bytes = 0;       // its tensors' bytes at its largest shape (task/memory.hpp)
};

// Decides the next session of `problem` from its spec, its archive (if any) and the settings.
// Reads the archive and, for an archive that never got past its start (no saved search state, no
// candidate), removes it so the run starts afresh. Throws only for I/O failures of the suite
// folder itself (Error(runtime)).
ProblemLaunch plan_launch(const SuiteFolder& folder, const SuiteProblem& problem, const SuiteSettings& settings);

// The full command line: the launch's arguments plus the GPU (by index, "--gpus I,") and, for a
// priced launch, the run's dollar cap.
std::vector<std::string> launch_arguments(const ProblemLaunch& launch, int gpu, std::optional<double> cost_cap);

// True when `text` is --model replay:DIR with DIR an existing folder (the per-problem form).
bool is_replay_folder_model(const std::string& text);

} // namespace kforge
