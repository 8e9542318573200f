// The search loop's internals (search.hpp has the contract). One SearchLoop runs one session of a
// run on the controller thread; its member functions are split by stage:
//   loop/loop.cpp     the table of contents (run), starting and resuming, waiting, finishing
//   loop/schedule.cpp choosing and starting work (every random draw happens here)
//   loop/record.cpp   what comes back (proposals, evaluations), readiness, recording in order
//   loop/adapt.cpp    placement, generations, migration, meta-prompts, lessons, follow-ups
//   loop/plans.cpp    the two-phase step: plans saved between the phases, techniques, schedules
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "search/grid.hpp"
#include "search/loop_state.hpp"
#include "search/progress.hpp"
#include "search/search.hpp"
#include "search/techniques.hpp"
#include "search/worker_pool.hpp"

namespace kforge {

// Evaluation jobs of one item: ticket = seq * k_job_kinds + job.
enum class EvalJobKind : uint64_t { screen = 0, confirm = 1, held_out = 2 };
inline constexpr uint64_t k_job_kinds = 3;
// The ticket of the final held-out check of the run's best (not an item's job).
inline constexpr uint64_t k_final_ticket = ~uint64_t{0};

// One item in flight: its plan and what has come back for it so far.
struct Flight {
    WorkItem item;
    bool proposed = false;               // the proposal (or the side call's result) is back
    Proposal proposal;
    std::vector<int64_t> call_ids;       // its model calls, stored as they came back
    std::vector<LlmCallRecord> calls;
    std::string source;                  // what is evaluated ("" when the proposal has none)
    std::string source_hash;
    bool duplicate = false;              // an earlier item has the same source
    // Set when an earlier item with the same source arrived after this one had gone to the
    // evaluator: that item records first, so it takes over this item's evaluation, and results
    // still to come for this item's tickets are passed to it.
    std::optional<uint64_t> evaluated_for;
    std::optional<Evaluation> screen;
    std::optional<Evaluation> confirm;
    bool confirm_submitted = false;
    uint64_t confirm_ticket = 0;         // the submitted confirmation's (withdrawn when not needed)
    bool confirm_withdrawn = false;
    bool confirm_needed = false;         // decided at the head: the confirmed numbers are recorded
    std::optional<Evaluation> held_out;  // a separate held-out check, when confirmation lacked it
    bool held_out_submitted = false;
    std::optional<MetaPromptResult> meta;
    std::optional<LessonResult> lesson;
    bool interrupted = false;            // its model call was cut off by Ctrl-C: never recordable
    bool dispatched = false;             // started (after Ctrl-C, new items are planned, not started)
    bool phase2_held = false;            // its plan came back after Ctrl-C: the coder is not asked
};

// What recording one candidate changed, for progress lines and follow-ups.
struct Placement {
    std::vector<int> islands;            // islands where it became an elite
    bool island_best = false;            // improved its own island's best
    bool new_best = false;               // the run's new best
};

class SearchLoop
{
public:
    SearchLoop(Archive& archive, const Task& task, const SearchConfig& config, SearchServices& services);
    ~SearchLoop();
    SearchOutcome run();

private:
    // --- loop/loop.cpp ---
    void start();
    void start_fresh();
    void restore(const Json& saved);
    void wait_for_work();
    void notice_interrupt();
    bool leaving_now() const;
    void finish();
    void verify_final_best();
    ProgressSnapshot snapshot() const;
    std::vector<GpuShare> gpu_shares() const;
    std::string waiting_for() const;
    double elapsed_s() const;
    double search_s() const; // elapsed_s() less this session's waits for a shared GPU's measuring lock (--time)

    // --- loop/schedule.cpp ---
    void schedule();
    std::optional<WorkItem> plan_next();
    std::set<int64_t> seeds_holding_cells();
    std::string describe_choice_inputs(int island, const IslandGrid& grid, size_t unrecorded_seeds) const;
    // seed_parents: while seeding, the recorded seeds to draw parents from; unrecorded_seeds: before
    // any of them is recorded, the seeds still in flight (one becomes the parent, unmeasured).
    WorkItem plan_proposal(int island, const std::set<int64_t>& seed_parents, const std::vector<int>& unrecorded_seeds);
    const KernelFile* seed_parent_file(const WorkItem& item) const;
    void commit_item(const WorkItem& item);
    void reserve(WorkItem& item);
    size_t prompt_chars(const WorkItem& item);
    void dispatch_new();
    void dispatch(Flight& flight);
    ProposalContext proposal_context(const WorkItem& item);
    Proposal inline_proposal(const WorkItem& item);

    // --- loop/record.cpp ---
    void take_pool_result(PoolResult result);
    void accept_proposal(Flight& flight, Proposal proposal);
    void accept_source(Flight& flight);
    void adopt_evaluation(Flight& flight, Flight& later);
    void take_evaluation(EvalResult result);
    void submit(Flight& flight, EvalJobKind kind, EvalOptions options);
    bool head_ready(Flight& flight);
    bool would_be_elite(const Flight& flight, double fitness) const;
    bool outdone_in_flight(const Flight& flight) const;
    void withdraw_unneeded_confirmations();
    void record_head();
    std::optional<Candidate> record_candidate(Flight& flight);
    // Ends the run when too many items in a row gave nothing new to evaluate, or their model calls
    // failed; `last` is the latest item's problem, for the message.
    void stop_when_stuck(const std::string& last);
    Evaluation merged_evaluation(const Flight& flight) const;
    void save_state();

    // --- loop/adapt.cpp ---
    // `margin` as in IslandGrid::would_accept: a candidate recorded with its screen's numbers
    // places only where it would have been confirmed (so never).
    Placement place(const Candidate& candidate, int island, double margin = 0);
    void place_accepted();
    void report_flagged(const Candidate& candidate);
    void follow_up(const Candidate& candidate, const Flight& flight, const Placement& placement);
    void count_generation();
    void migrate();
    void request_meta_rewrite();
    void request_lesson(const Candidate& child, const Placement& placement);
    void record_lesson(Flight& flight);
    void record_meta_prompt(Flight& flight);
    void use_meta_prompt(const WorkItem& item, bool improved);

    // --- loop/plans.cpp ---
    void start_techniques();
    bool plans_enabled() const;
    PlanRequest plan_request(const WorkItem& item);
    void dispatch_plan(Flight& flight);
    void take_plan(Flight& flight, PlanOutcome outcome);
    void apply_plan_done(Flight& flight);
    void start_code_phase(Flight& flight);
    // Stores the plan of a two-phase candidate and its technique tries; returns a few words about it
    // for the progress line.
    std::string record_plan(const Candidate& candidate, const Flight& flight);
    void note_new_best(const Candidate& candidate);
    // After a recording transaction: lessons, technique tries and a new schedule to the knowledge base.
    void publish_knowledge();

    Archive& m_archive;
    const Task& m_task;
    SearchConfig m_config;
    SearchServices& m_services;
    std::unique_ptr<WorkerPool> m_pool;
    ProgressReporter m_progress;

    LoopState m_state;
    std::vector<IslandGrid> m_grids;
    std::map<int64_t, MetaPrompt> m_meta_prompts; // every strategy text of the run, by id
    std::vector<int64_t> m_active_meta;      // per island: the id of its text in force
    std::vector<Lesson> m_lessons;           // the run archive's lessons
    std::map<uint64_t, Flight> m_flights;    // in flight, by seq
    std::vector<uint64_t> m_undispatched;    // scheduled since the last dispatch
    std::map<int64_t, size_t> m_source_sizes; // candidate id -> source length (prompt estimates)
    std::vector<Lesson> m_knowledge_outbox;  // lessons to copy to the knowledge base after commit
    const Menu* m_menu = nullptr;            // the task's optimisation menu (two-phase proposals)
    std::map<std::string, TechniqueTally> m_kb_tallies; // other runs' tries on this category, by technique
    int64_t m_kb_tries = 0;
    std::vector<Schedule> m_kb_schedules;    // other runs' schedules on this category
    std::vector<TechniqueTry> m_run_tries;   // this run's tries, in record order
    std::vector<TechniqueTry> m_tries_outbox; // to copy to the knowledge base after commit
    std::optional<Schedule> m_schedule_outbox;
    Ledger m_ledger;
    Json m_hardware;
    std::vector<Measurement> m_baselines;
    std::map<VerdictKind, int64_t> m_verdicts;
    std::chrono::steady_clock::time_point m_started;
    double m_searched_before = 0; // search seconds of the sessions before this one (LoopState::searched_s)
    std::optional<std::chrono::steady_clock::time_point> m_interrupt_deadline;
    StopReason m_stop = StopReason::none;
    SearchOutcome m_outcome;
    std::optional<Evaluation> m_final_check;  // the final held-out check of the best
    int m_gpu_session = 1;                    // this session's number in the archive's GPU rows
    size_t m_gpu_count = 0;                   // GPUs the evaluator started with
    int64_t m_flagged = 0;                    // correct candidates timed below the roofline floor, whole run
    std::map<std::string, int64_t> m_candidates_per_gpu; // recorded this session, by GPU label
};

} // namespace kforge
