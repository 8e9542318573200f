// Scheduling and starting work: the only place the search draws random numbers.
//
// schedule() fills the window of items in flight. The next item is, in this order: a request
// (seeding items, lessons, meta-prompt rewrites — in the order they were asked for); nothing while
// the seeding holds proposals back (below); else the next island in round robin gets its queued
// follow-up (a repair or a tune) or a fresh proposal with a parent chosen by selection.hpp. Each
// item's budget reservation is checked before it is committed; committing applies its side effects
// (queues, counts) and makes it a Flight.
//
// Seeding. The first proposals should start from a kernel the task's author wrote, not from the
// naive reference. While the reference is in flight nothing else is planned (its jobs, a fraction
// of a second, are the run's first result; a proposal's screen taken by a GPU in between would
// hold it back). Then, while seeds are in flight:
//  - once a recorded seed holds a cell (seeds are recorded in order, so usually the first seed),
//    parents and inspirations are drawn from the recorded seeds that hold a cell only, never the
//    reference; a later seed joins the grids when it is recorded, like any candidate;
//  - before that, while seeds are still unrecorded, a proposal's parent is one of those seeds, drawn
//    at random: its source, shown as "not evaluated yet" (WorkItem::seed_parent). A seed's
//    confirmation takes seconds of one GPU (5-8 s on an H200), and waiting for it left every other
//    GPU idle (4 simulated GPUs: two idle 6 s of a 30 s run; 2 x H200: one idle 3.7 s of 40 s);
//    the GPUs take jobs lowest ticket first, so the seeds are measured no later for it;
//  - with every seed recorded (or none), proposals draw from the grids as usual: the reference is
//    a parent only when no seed holds a cell (no seeds, none correct, or each beaten in its cell).
// The rule reads the items in flight and the recorded grids only, so the schedule stays a function
// of the recorded prefix and the window, the same on any number of GPUs.
//
// A fresh proposal may be made two-phase (a planner, then a coder: loop/plans.cpp): with
// --strategy mix that is drawn here, and so is the technique the planner is pointed at
// (techniques.hpp, choose_focus), from the statistics of what was recorded before it.
//
// dispatch() starts an item: seeds, the reference, tunes and the builtin proposer run inline (fast,
// and the builtin proposer's memory of what it proposed must grow in schedule order); model calls
// go to the worker pool with their context built here, on the controller, from immutable records.
#include <fmt/format.h>

#include "agents/plan_variation.hpp"
#include "core/plan.hpp"
#include "core/source.hpp"
#include "search/loop/loop.hpp"
#include "search/knowledge.hpp"
#include "search/meta_prompts.hpp"
#include "search/techniques.hpp"
#include "search/views.hpp"
#include "util/log.hpp"

namespace kforge {
namespace {

constexpr size_t k_inspirations = 3;
constexpr int k_target_attempts = 3;     // a cell asked for this often without success is left alone
constexpr size_t k_prompt_overhead_chars = 6000; // templates, task text, reply format
constexpr int k_tune_draws = 8;
constexpr int64_t k_schedule_plans = 8;   // the run's first plans are shown earlier tasks' schedules
constexpr size_t k_plan_overhead_chars = 4000; // the menu, statistics and plan format of a planned item

std::string target_key(int island, const std::string& cell)
{
    return fmt::format("{}:{}", island, cell);
}

std::optional<Plan> plan_of(const Task& task, const std::string& source)
{
    try {
        if (auto json = extract_plan_json(source))
            return parse_plan(*json, "plan");
        return task.default_plan;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

} // namespace

// What a proposal's random choices are drawn from, for `--log-level debug`: a run that should have
// repeated another's choices (same seed, same recorded results) and did not shows where they parted.
std::string SearchLoop::describe_choice_inputs(int island, const IslandGrid& grid, size_t unrecorded_seeds) const
{
    std::string text = fmt::format("item {} island {}: rng {}", m_state.next_seq, island, m_state.rng.save());
    if (unrecorded_seeds > 0)
        text += fmt::format(", a parent among {} unrecorded seeds", unrecorded_seeds);
    text += ", elites";
    for (const EliteEntry* elite : grid.elites()) {
        auto children = m_state.children.find(elite->candidate_id);
        text += fmt::format(" #{} {} {:.6f} ({} children)", elite->candidate_id, elite->cell, elite->fitness,
                            children == m_state.children.end() ? 0 : children->second);
    }
    return text;
}

void SearchLoop::schedule()
{
    // After Ctrl-C items are still planned (never started): the saved state must hold what an
    // uninterrupted run would have scheduled by now, so that resume continues the same sequence.
    auto window = static_cast<size_t>(m_config.effective_window());
    while ((m_stop == StopReason::none || m_stop == StopReason::interrupted) && m_flights.size() < window) {
        std::optional<WorkItem> next = plan_next();
        if (!next)
            break; // the seeding holds proposals back (or nothing else to plan)
        int64_t candidates_in_flight = 0;
        for (const auto& [seq, flight] : m_flights)
            candidates_in_flight += yields_candidate(flight.item.kind) ? 1 : 0;
        BudgetUse use{m_state.recorded_candidates + candidates_in_flight, search_s(), m_state.stale_generations};
        StopReason blocked = budget_blocks(m_config.budgets, use, m_ledger, *next);
        if (blocked != StopReason::none && !yields_candidate(next->kind)) {
            log_debug("skipping a {} call: {}", item_kind_name(next->kind), describe_stop(blocked, m_config.budgets));
            m_state.requests.pop_front(); // lessons and rewrites are optional
            continue;
        }
        bool may_fit_later = blocked == StopReason::max_calls || blocked == StopReason::max_cost;
        if ((may_fit_later && !m_flights.empty()) || (blocked != StopReason::none && m_stop != StopReason::none))
            break;
        if (blocked != StopReason::none) {
            m_stop = blocked;
            m_progress.event(fmt::format("stopping: {}", describe_stop(blocked, m_config.budgets)));
            break;
        }
        commit_item(*next);
    }
}

std::optional<WorkItem> SearchLoop::plan_next()
{
    if (!m_state.requests.empty()) {
        WorkItem item = m_state.requests.front();
        item.seq = m_state.next_seq;
        item.generation = m_state.generation;
        item.seed = m_state.rng.next();
        reserve(item);
        return item;
    }
    bool reference_in_flight = false;
    std::vector<int> seeds_in_flight; // task seed indices, in schedule order
    for (const auto& [seq, flight] : m_flights) {
        reference_in_flight = reference_in_flight || flight.item.kind == ItemKind::reference;
        if (flight.item.kind == ItemKind::seed)
            seeds_in_flight.push_back(flight.item.seed_index);
    }
    if (reference_in_flight)
        return std::nullopt; // the first record waits for nothing but the reference's own jobs
    std::set<int64_t> seed_parents;
    if (!seeds_in_flight.empty()) {
        seed_parents = seeds_holding_cells();
        if (seed_parents.empty())
            return plan_proposal(m_state.next_island, {}, seeds_in_flight);
    }
    return plan_proposal(m_state.next_island, seed_parents, {});
}

std::set<int64_t> SearchLoop::seeds_holding_cells()
{
    // Seeds and the reference are planted with no native island; the reference is told apart by its
    // origin (looked up only while seeding items are in flight: a few per record).
    std::set<int64_t> seeds;
    for (const IslandGrid& grid : m_grids)
        for (const EliteEntry* elite : grid.elites()) {
            if (elite->native_island >= 0 || seeds.count(elite->candidate_id))
                continue;
            auto candidate = m_archive.candidate(elite->candidate_id);
            if (candidate && candidate->origin == Origin::seed)
                seeds.insert(elite->candidate_id);
        }
    return seeds;
}

WorkItem SearchLoop::plan_proposal(int island, const std::set<int64_t>& seed_parents,
                                   const std::vector<int>& unrecorded_seeds)
{
    WorkItem item;
    item.seq = m_state.next_seq;
    item.island = island;
    item.generation = m_state.generation;
    const IslandGrid* grid_ptr = &m_grids[static_cast<size_t>(island)];
    IslandGrid seeds_only; // while seeding is in flight: the seeds that hold a cell, not the reference
    if (!seed_parents.empty()) {
        for (const EliteEntry* elite : grid_ptr->elites())
            if (seed_parents.count(elite->candidate_id))
                seeds_only.place(*elite);
        if (!seeds_only.empty())
            grid_ptr = &seeds_only;
    }
    const IslandGrid& grid = *grid_ptr;
    if (log_level() >= LogLevel::debug)
        log_debug("schedule {}", describe_choice_inputs(island, grid, unrecorded_seeds.size()));
    const auto& queue = m_state.follow_ups[static_cast<size_t>(island)];
    if (!unrecorded_seeds.empty()) {
        item.kind = ItemKind::propose; // nothing recorded yet, so no follow-up can be queued
        item.mode = ParentMode::exploit;
        item.seed_parent = unrecorded_seeds[m_state.rng.below(unrecorded_seeds.size())];
    } else if (!queue.empty()) {
        item.kind = queue.front().kind;
        item.parent = queue.front().candidate;
        item.repair_round = item.kind == ItemKind::repair ? queue.front().round : 0;
    } else {
        item.kind = ItemKind::propose;
        TargetFilter targetable = [&](const std::string& cell) {
            auto it = m_state.target_attempts.find(target_key(island, cell));
            return it == m_state.target_attempts.end() || it->second < k_target_attempts;
        };
        ParentChoice choice = choose_parent(grid, m_config.mix, m_state.children, targetable, m_state.rng);
        item.mode = choice.mode;
        item.target_cell = choice.target_cell;
        if (choice.parent) {
            item.parent = choice.parent->candidate_id;
            item.inspirations = choose_inspirations(grid, choice.parent->candidate_id, k_inspirations, m_state.rng);
        }
    }
    bool has_parent = item.parent || item.seed_parent;
    bool diff = m_config.edit_form == EditFormPolicy::diff ||
                (m_config.edit_form == EditFormPolicy::mix && has_parent && m_state.rng.uniform() < 0.5);
    item.edit_form = has_parent && diff ? EditForm::search_replace : EditForm::whole_file;
    item.seed = m_state.rng.next();
    if (item.kind == ItemKind::propose && plans_enabled()) {
        double share = m_config.plan_share;
        item.two_phase = share >= 1 || m_state.rng.uniform() < share; // plan or direct: no draw at 1
        if (item.two_phase) {
            item.tries_seen = static_cast<int64_t>(m_run_tries.size());
            TechniqueTallies tallies = m_kb_tallies;
            for (const auto& [id, tally] : tally_tries(m_run_tries, m_run_tries.size()))
                tallies[id] += tally;
            Focus focus = choose_focus(*m_menu, tallies, m_task.category, m_config.plan_explore, m_state.rng);
            item.focus = focus.technique;
            item.focus_reason = focus.reason;
            item.show_schedules = m_state.plans_scheduled < k_schedule_plans;
        }
    }
    item.meta_prompt_id = m_active_meta[static_cast<size_t>(island)];
    if (item.kind != ItemKind::tune)
        item.lesson_ids = choose_lessons(m_lessons, m_task, static_cast<size_t>(m_config.lessons_per_prompt));
    reserve(item);
    return item;
}

void SearchLoop::commit_item(const WorkItem& item)
{
    bool fresh = item.kind == ItemKind::propose || item.kind == ItemKind::repair || item.kind == ItemKind::tune;
    if (!fresh) {
        m_state.requests.pop_front();
    } else {
        auto& queue = m_state.follow_ups[static_cast<size_t>(item.island)];
        if (item.kind != ItemKind::propose)
            queue.pop_front();
        m_state.next_island = (m_state.next_island + 1) % m_config.islands;
        if (item.parent)
            ++m_state.children[*item.parent];
        if (item.mode == ParentMode::target)
            ++m_state.target_attempts[target_key(item.island, item.target_cell)];
        if (item.two_phase)
            ++m_state.plans_scheduled;
    }
    ++m_state.next_seq;
    m_ledger.reserve(item);
    Flight flight;
    flight.item = item;
    m_flights.emplace(item.seq, std::move(flight));
    m_undispatched.push_back(item.seq);
}

void SearchLoop::reserve(WorkItem& item)
{
    item.reserved_calls = 0;
    item.reserved_cost_usd = 0;
    bool model_call = item.kind == ItemKind::analyst || item.kind == ItemKind::meta_prompt ||
                      ((item.kind == ItemKind::propose || item.kind == ItemKind::repair) && m_services.cost.models);
    if (!model_call)
        return;
    bool may_retry = item.kind != ItemKind::analyst && item.kind != ItemKind::meta_prompt &&
                     (!item.inspirations.empty() || !item.lesson_ids.empty());
    // A prompt too long for the model's window is answered by one shorter retry, which the
    // reservation allows for; the refused first attempt costs nothing.
    item.reserved_calls = may_retry ? 2 : 1;
    item.reserved_cost_usd = estimate_call_cost(m_services.cost, prompt_chars(item));
    if (item.two_phase) {
        // The planner (a shorter retry when its prompt does not fit, one repair) and the coder.
        item.reserved_calls = may_retry ? 4 : 3;
        item.reserved_cost_usd = static_cast<double>(item.reserved_calls) *
                                 estimate_call_cost(m_services.cost, prompt_chars(item) + k_plan_overhead_chars);
    }
}

size_t SearchLoop::prompt_chars(const WorkItem& item)
{
    auto source_size = [&](int64_t id) -> size_t {
        auto it = m_source_sizes.find(id);
        if (it != m_source_sizes.end())
            return it->second;
        auto candidate = m_archive.candidate(id);
        size_t size = candidate ? candidate->source.size() : 0;
        m_source_sizes[id] = size;
        return size;
    };
    size_t chars = k_prompt_overhead_chars + m_task.description.size() + m_task.reference.source.size();
    if (item.parent)
        chars += source_size(*item.parent) * (item.kind == ItemKind::analyst ? 2 : 1);
    if (const KernelFile* seed = seed_parent_file(item))
        chars += seed->source.size();
    if (item.subject)
        chars += 2 * source_size(*item.subject);
    for (int64_t id : item.inspirations)
        chars += source_size(id);
    for (int64_t id : item.lesson_ids)
        for (const auto& lesson : m_lessons)
            if (lesson.id == id)
                chars += lesson.text.size() + 100;
    if (item.meta_prompt_id)
        if (auto it = m_meta_prompts.find(*item.meta_prompt_id); it != m_meta_prompts.end())
            chars += it->second.text.size();
    if (item.kind == ItemKind::meta_prompt)
        chars += item.meta_request.dump().size();
    return chars;
}

void SearchLoop::dispatch_new()
{
    notice_interrupt();
    if (m_stop == StopReason::interrupted)
        return;
    std::vector<uint64_t> seqs;
    seqs.swap(m_undispatched);
    for (uint64_t seq : seqs)
        if (auto it = m_flights.find(seq); it != m_flights.end())
            dispatch(it->second);
}

void SearchLoop::dispatch(Flight& flight)
{
    const WorkItem item = flight.item;
    flight.dispatched = true;
    switch (item.kind) {
    case ItemKind::reference:
    case ItemKind::seed:
    case ItemKind::tune: accept_proposal(flight, inline_proposal(item)); return;
    case ItemKind::propose:
    case ItemKind::repair: {
        if (item.two_phase && plans_enabled() && !m_services.builtin) {
            dispatch_plan(flight);
            return;
        }
        ProposalContext context = proposal_context(item);
        if (m_services.builtin) {
            Rng rng(item.seed);
            accept_proposal(flight, m_services.proposer.propose(context, rng));
            return;
        }
        Proposer& proposer = m_services.proposer;
        m_pool->post(item.seq, [&proposer, context, seed = item.seed] {
            Rng rng(seed);
            return proposer.propose(context, rng);
        });
        return;
    }
    case ItemKind::analyst: {
        auto child = m_archive.candidate(item.subject.value_or(0));
        auto parent = m_archive.candidate(item.parent.value_or(0));
        if (!child || !parent) {
            flight.proposed = true;
            flight.lesson = LessonResult{std::nullopt, "the candidates it is about are missing", {}};
            return;
        }
        LessonRequest request{m_task, candidate_view(*parent, m_baselines), candidate_view(*child, m_baselines)};
        const ModelMix& models = *m_services.models;
        const PromptLibrary& library = *m_services.library;
        m_pool->post(item.seq, [&models, &library, request, seed = item.seed] {
            Rng rng(seed);
            return distil_lesson(models.pick(rng), library, request);
        });
        return;
    }
    case ItemKind::meta_prompt: {
        // Saved with the pending items, so a resume may read it from an archive: a null or absent
        // part reads as none.
        const Json none = Json::object();
        JsonReader saved(item.meta_request.is_object() ? item.meta_request : none,
                         fmt::format("the meta-prompt request of work item {}", item.seq));
        auto current = saved.find("current");
        MetaPromptRequest request{m_task, meta_prompt_from_json(current ? *current : JsonReader(none, saved.file())), {}};
        if (auto history = saved.find("history"))
            for (const auto& prompt : history->items())
                request.history.push_back(meta_prompt_from_json(prompt));
        const ModelMix& models = *m_services.models;
        const PromptLibrary& library = *m_services.library;
        m_pool->post(item.seq, [&models, &library, request, seed = item.seed] {
            Rng rng(seed);
            return rewrite_meta_prompt(models.pick(rng), library, request);
        });
        return;
    }
    }
}

ProposalContext SearchLoop::proposal_context(const WorkItem& item)
{
    ProposalContext context{m_task};
    context.hardware = m_hardware;
    if (item.parent)
        if (auto parent = m_archive.candidate(*item.parent))
            context.parent = candidate_view(*parent, m_baselines);
    if (const KernelFile* seed = seed_parent_file(item)) {
        CandidateView view; // no verdict: the prompt says "not evaluated yet"
        view.source = seed->source;
        view.note = "the task's seed kernel " + seed->path.filename().string() +
                    ", scheduled while its measurement was still under way";
        context.parent = std::move(view);
    }
    for (int64_t id : item.inspirations)
        if (auto inspiration = m_archive.candidate(id))
            context.inspirations.push_back(candidate_view(*inspiration, m_baselines));
    for (int64_t id : item.lesson_ids)
        for (const auto& lesson : m_lessons)
            if (lesson.id == id)
                context.lessons.push_back(lesson);
    if (item.meta_prompt_id)
        if (auto it = m_meta_prompts.find(*item.meta_prompt_id); it != m_meta_prompts.end())
            context.strategy = it->second.text;
    if (!item.target_cell.empty())
        context.target_hint = describe_cell_strategy(item.target_cell);
    context.edit_form = item.edit_form;
    context.round = item.kind == ItemKind::repair ? RoundKind::repair : RoundKind::fresh;
    return context;
}

const KernelFile* SearchLoop::seed_parent_file(const WorkItem& item) const
{
    if (!item.seed_parent || *item.seed_parent < 0 || static_cast<size_t>(*item.seed_parent) >= m_task.seeds.size())
        return nullptr;
    return &m_task.seeds[static_cast<size_t>(*item.seed_parent)];
}

Proposal SearchLoop::inline_proposal(const WorkItem& item)
{
    Proposal proposal;
    proposal.outcome = ProposalOutcome::source;
    if (item.kind == ItemKind::reference) {
        proposal.origin = Origin::reference;
        proposal.source = m_task.reference.source;
        proposal.note = "the task's reference kernel";
        return proposal;
    }
    if (item.kind == ItemKind::seed) {
        const KernelFile& seed = m_task.seeds.at(static_cast<size_t>(item.seed_index));
        proposal.origin = Origin::seed;
        proposal.source = seed.source;
        proposal.note = "seed " + seed.path.filename().string();
        return proposal;
    }
    proposal.origin = Origin::tune;
    auto parent = m_archive.candidate(item.parent.value_or(0));
    std::optional<Plan> plan = parent ? plan_of(m_task, parent->source) : std::nullopt;
    if (plan && !plan->params.empty()) {
        Rng rng(item.seed);
        std::vector<std::string> kernels = find_kernel_names(parent->source);
        for (int draw = 0; draw < k_tune_draws; ++draw) {
            auto variant = vary_plan_params(m_task, *plan, kernels, rng);
            if (!variant)
                continue;
            proposal.source = replace_plan_block(parent->source, variant->plan.json);
            proposal.note = fmt::format("tune: {} (params of #{})", variant->description, parent->id);
            if (m_services.builtin)
                m_services.builtin->remember(*proposal.source);
            return proposal;
        }
    }
    proposal.outcome = ProposalOutcome::no_code;
    proposal.failure = {VerdictKind::no_code, "no new param variant of the parent's plan was found"};
    return proposal;
}

} // namespace kforge
