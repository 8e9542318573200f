// The search: islands of MAP-Elites grids fed by a steady-state pipeline (DESIGN.md §7).
//
// run_search() starts a run on a fresh archive or continues the one the archive holds. The loop:
//   schedule  — fill the window of work in flight, every random choice made here, on this thread
//   propose   — model calls on a pool of threads (the builtin proposer, params tunes, seeds: inline)
//   dedupe    — a source already archived, or already in flight earlier, is not evaluated
//   evaluate  — quick screen for every candidate; a would-be elite is confirmed (profile, its best
//               params, confirmation timing) and a would-be best also checked on held-out shapes
//   record    — strictly in schedule order: the candidate, its elite placements and the saved state
//               commit in one transaction
//   place, migrate, adapt, learn — MAP-Elites placement, ring migration, meta-prompt rewrites,
//               lessons, all decided while recording; a two-phase proposal's plan and technique
//               tries (technique statistics and schedules go to the knowledge base after commit)
//   budgets   — checked before anything is scheduled, with work in flight counted
//
// Determinism contract. (1) Every random draw happens on the controller thread while scheduling,
// in schedule order; each item carries its own seed, from which the proposer draws. (2) Items are
// recorded in schedule order whatever order their calls and evaluations finish in. (3) New items
// are scheduled only right after an item is recorded (or when the run starts), so what a choice
// sees is a function of the recorded prefix alone. (4) The RNG state and the items scheduled but
// not recorded are saved in the same transaction as each recorded item; resume re-issues those
// items and continues drawing. A two-phase item whose plan came back is saved again with the plan
// (its calls stored first), so resume asks its coder, never its planner, again. Hence with a
// deterministic proposer (replay, builtin) and evaluator (the tests' fake), an interrupted or
// killed run plus `resume` records exactly what an uninterrupted run records. What breaks it, by
// design: --time, dollar costs that differ between sessions, lessons and technique results other
// runs add to the knowledge base between sessions, and real GPU timings (choices then follow the
// measurements, but never thread timing).
//
// Generations: every islands x generation_size recorded candidates (seeds, duplicates and replies
// without code included) complete a generation. Migration, meta-prompt rewrites and --patience
// count generations.
//
// Interruption: the first Ctrl-C stops scheduling; work already finished (or finishing within
// interrupt_grace_s) is still recorded in order, the rest is dropped (model calls are stored even
// then) and the run is marked interrupted. A second Ctrl-C exits at once; transactions keep the
// archive consistent and `resume` continues from the last recorded item.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "agents/builtin_proposer.hpp"
#include "agents/menu.hpp"
#include "agents/model_mix.hpp"
#include "agents/prompt_library.hpp"
#include "agents/proposer.hpp"
#include "archive/archive.hpp"
#include "archive/knowledge_base.hpp"
#include "core/task.hpp"
#include "evaluator/evaluator.hpp"
#include "search/budget.hpp"
#include "search/progress.hpp"
#include "search/search_config.hpp"

namespace kforge {

// Observers for tests and tools; called on the controller thread.
struct SearchHooks {
    // After a candidate (not a duplicate) is recorded, outside its transaction.
    std::function<void(const Candidate&)> on_recorded;
    // After a two-phase item's plan (phase 1) is stored with the saved state, before phase 2 starts;
    // with the item's sequence number.
    std::function<void(uint64_t)> on_plan_stored;
};

// What the search works with. The CLI passes the GPU evaluator and a model or builtin proposer;
// tests pass a fake evaluator and scripted providers.
struct SearchServices {
    CandidateEvaluator& evaluator;
    Proposer& proposer;
    // Set when `proposer` is the builtin proposer: it then runs inline in schedule order and is
    // told what the archive holds on resume.
    BuiltinProposer* builtin = nullptr;
    // Models for meta-prompt rewrites and lessons; null: neither happens.
    const ModelMix* models = nullptr;
    const PromptLibrary* library = nullptr; // required with `models`
    // The two-phase step (config.plan_share > 0, with models): the planner models (null: `models`)
    // and the task's optimisation menu (required then).
    const ModelMix* planner = nullptr;
    const Menu* menu = nullptr;
    KnowledgeBase* knowledge = nullptr;     // user-level lessons; null: --no-knowledge
    CostModel cost;
    SearchHooks hooks;
};

struct SearchOutcome {
    StopReason reason = StopReason::none;
    std::string reason_text;
    int64_t recorded = 0;        // candidates recorded in this session
    int64_t duplicates = 0;      // duplicates rejected in this session
    int64_t dropped = 0;         // items dropped unrecorded (interruption)
    std::optional<int64_t> best_id;
    std::optional<double> best_fitness;
    std::string best_held_out;   // "passed", "failed" or "" (not checked)
    double seconds = 0;
    double search_seconds = 0;   // what --time counted: seconds less waits for a shared GPU's measuring lock
    double gpu_busy = 0;         // share of this session's GPU wall time the GPUs worked
    std::vector<GpuShare> gpus;  // per GPU of this session
    double cost_usd = 0;         // model calls of the whole run
    int64_t calls = 0;
};

// Runs the search on `archive` (open for writing, holding the run record) until a budget, a stop
// condition or an interrupt ends it; a run the archive already started is continued from its saved
// state. Sets the run state (running, then finished or interrupted; failed when it throws).
// Throws Error for what stops the run: archive I/O, a rejected API key, a settings mismatch with
// the archived run (e.g. another island count).
SearchOutcome run_search(Archive& archive, const Task& task, const SearchConfig& config, SearchServices& services);

} // namespace kforge
