// What recording a candidate changes beyond its row: MAP-Elites placement, follow-up work,
// generations (migration, meta-prompt rewrites, patience) and lessons.
//
// All of it runs inside the recording transaction, from recorded facts only, so it is part of the
// deterministic sequence. Migration is a ring: at the end of every migrate_every-th generation each
// island sends its fittest native elite (one proposed there, never a migrant or a seed, so the same
// kernel does not circle the ring) to the next island, where it takes its cell only if fitter than
// the occupant. A lesson is asked for when a candidate becomes the run's new best or an elite at
// least 20% faster than its parent, one at a time, at most max_lessons per run.
#include <fmt/format.h>

#include "core/plan.hpp"
#include "evaluator/describe.hpp"
#include "search/meta_prompts.hpp"
#include "search/loop/loop.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr double k_notable_gain = 1.2;
constexpr size_t k_max_lesson_tags = 12;

bool repairable(VerdictKind kind)
{
    return kind == VerdictKind::plan_error || kind == VerdictKind::compile_error || kind == VerdictKind::runtime_error ||
           kind == VerdictKind::timeout || kind == VerdictKind::incorrect;
}

bool declares_params(const std::string& source)
{
    try {
        auto json = extract_plan_json(source);
        return json && json->contains("params") && !(*json)["params"].empty();
    } catch (const std::exception&) {
        return false;
    }
}

} // namespace

Placement SearchLoop::place(const Candidate& candidate, int island, double margin)
{
    Placement placement;
    const Evaluation& evaluation = candidate.evaluation;
    if (evaluation.metrics.contains("held_out"))
        m_state.held_out[candidate.id] = evaluation.metrics["held_out"].get<std::string>();
    if (!evaluation.verdict.is_correct() || !evaluation.fitness)
        return placement;
    double fitness = *evaluation.fitness;
    EliteEntry entry{candidate.id, fitness, descriptor_cell(evaluation.descriptors), island};
    for (int i = 0; i < m_config.islands; ++i) {
        if (island >= 0 && i != island)
            continue;
        if (!m_grids[static_cast<size_t>(i)].place(entry, margin))
            continue;
        m_archive.set_elite(Elite{i, entry.cell, candidate.id, fitness});
        placement.islands.push_back(i);
        double& island_best = m_state.island_best[static_cast<size_t>(i)];
        if (fitness > island_best) {
            island_best = fitness;
            placement.island_best = placement.island_best || i == island || island < 0;
        }
    }
    auto held_out = m_state.held_out.find(candidate.id);
    if (!placement.islands.empty() && fitness > m_state.best_fitness && held_out != m_state.held_out.end() &&
        held_out->second == "passed") {
        placement.new_best = true;
        m_state.best_id = candidate.id;
        m_state.best_fitness = fitness;
        m_state.generation_improved = true;
    }
    return placement;
}

// Flagged candidates (timed below the roofline floor) that a user accepted after re-measuring them
// (`kforge eval RUN --candidate ID --held-out --accept`, which sets their fitness) take their place
// when the run resumes: in their island's grid when fitter than the cell's elite, and as the run's
// best when fitter than it, since the acceptance carries a held-out pass. Placing is idempotent: an
// accepted candidate placed before is not fitter than itself.
void SearchLoop::place_accepted()
{
    m_archive.atomically([&] {
        for (const auto& candidate : m_archive.flagged_candidates()) {
            const Evaluation& evaluation = candidate.evaluation;
            if (!evaluation.metrics.contains("accepted") || !evaluation.fitness)
                continue;
            m_state.held_out[candidate.id] = "passed";
            bool planted = candidate.origin == Origin::seed || candidate.origin == Origin::reference;
            Placement placement = place(candidate, planted ? -1 : candidate.island);
            if (placement.islands.empty())
                continue;
            std::vector<std::string> islands;
            for (int island : placement.islands)
                islands.push_back(std::to_string(island));
            m_progress.event(fmt::format("accepted #{} ({:.3f}x; flagged below the roofline floor, accepted after "
                                         "re-measuring) placed on island {}{}",
                                         candidate.id, *evaluation.fitness, join(islands, ", "),
                                         placement.new_best ? ": the run's new best" : ""));
        }
    });
}

void SearchLoop::follow_up(const Candidate& candidate, const Flight& flight, const Placement& placement)
{
    if (m_services.builtin || candidate.source.empty())
        return;
    auto& queue = m_state.follow_ups[static_cast<size_t>(candidate.island)];
    // A failed proposal gets round 1; a failed repair the next round, up to --repairs in a row.
    bool proposed = flight.item.kind == ItemKind::propose && candidate.origin == Origin::llm;
    bool repaired = flight.item.kind == ItemKind::repair && candidate.origin == Origin::repair;
    int round = proposed ? 1 : repaired ? std::max(flight.item.repair_round, 1) + 1 : 0;
    if (round > 0 && round <= m_config.repairs && repairable(candidate.evaluation.verdict.kind))
        queue.push_back({ItemKind::repair, candidate.id, round});
    if (m_config.tune && placement.island_best && flight.item.island >= 0 && candidate.origin != Origin::tune &&
        declares_params(candidate.source))
        queue.push_back({ItemKind::tune, candidate.id});
}

void SearchLoop::count_generation()
{
    if (++m_state.generation_fill < m_config.islands * m_config.generation_size)
        return;
    m_state.generation_fill = 0;
    ++m_state.generation;
    m_state.stale_generations = m_state.generation_improved ? 0 : m_state.stale_generations + 1;
    m_state.generation_improved = false;
    if (m_config.islands > 1 && m_state.generation % m_config.migrate_every == 0)
        migrate();
    if (m_services.models && m_state.generation % m_config.meta_every == 0)
        request_meta_rewrite();
}

void SearchLoop::migrate()
{
    std::vector<std::optional<EliteEntry>> sent;
    for (int i = 0; i < m_config.islands; ++i) {
        const EliteEntry* best = m_grids[static_cast<size_t>(i)].best_native(i);
        sent.push_back(best ? std::optional<EliteEntry>(*best) : std::nullopt);
    }
    for (int i = 0; i < m_config.islands; ++i) {
        if (!sent[static_cast<size_t>(i)])
            continue;
        const EliteEntry& migrant = *sent[static_cast<size_t>(i)];
        int to = (i + 1) % m_config.islands;
        if (!m_grids[static_cast<size_t>(to)].place(migrant))
            continue;
        m_archive.set_elite(Elite{to, migrant.cell, migrant.candidate_id, migrant.fitness});
        double& island_best = m_state.island_best[static_cast<size_t>(to)];
        island_best = std::max(island_best, migrant.fitness);
        log_debug("generation {}: #{} ({:.3f}x) migrated from island {} to island {}", m_state.generation,
                  migrant.candidate_id, migrant.fitness, i, to);
    }
}

void SearchLoop::request_meta_rewrite()
{
    for (const auto& request : m_state.requests)
        if (request.kind == ItemKind::meta_prompt)
            return;
    for (const auto& [seq, flight] : m_flights)
        if (flight.item.kind == ItemKind::meta_prompt)
            return;
    std::vector<MetaPrompt> active;
    for (int64_t id : m_active_meta)
        active.push_back(m_meta_prompts.at(id));
    std::optional<int> weakest = weakest_island(active, m_config.generation_size);
    if (!weakest)
        return;
    Json history = Json::array();
    for (const auto& [id, prompt] : m_meta_prompts)
        history.push_back(meta_prompt_to_json(prompt));
    WorkItem request;
    request.kind = ItemKind::meta_prompt;
    request.island = *weakest;
    request.meta_request = Json{{"current", meta_prompt_to_json(m_meta_prompts.at(m_active_meta[static_cast<size_t>(*weakest)]))},
                                {"history", history}};
    m_state.requests.push_back(request);
}

void SearchLoop::request_lesson(const Candidate& child, const Placement& placement)
{
    if (!m_services.models || m_state.lessons_requested >= m_config.max_lessons || !child.parent_id ||
        placement.islands.empty() || !child.evaluation.fitness)
        return;
    for (const auto& request : m_state.requests)
        if (request.kind == ItemKind::analyst)
            return;
    for (const auto& [seq, flight] : m_flights)
        if (flight.item.kind == ItemKind::analyst)
            return;
    bool notable = placement.new_best;
    if (!notable) {
        auto parent = m_archive.candidate(*child.parent_id);
        notable = parent && parent->evaluation.fitness &&
                  *child.evaluation.fitness >= k_notable_gain * *parent->evaluation.fitness;
    }
    if (!notable)
        return;
    WorkItem request;
    request.kind = ItemKind::analyst;
    request.island = child.island;
    request.parent = child.parent_id;
    request.subject = child.id;
    m_state.requests.push_back(request);
    ++m_state.lessons_requested;
}

void SearchLoop::record_lesson(Flight& flight)
{
    const LessonResult& result = *flight.lesson;
    if (!result.lesson) {
        log_warn("no lesson about #{}: {}", flight.item.subject.value_or(0), result.problem);
        return;
    }
    Lesson lesson = *result.lesson;
    for (const auto& tag : m_task.tags)
        if (lesson.tags.size() < k_max_lesson_tags && std::find(lesson.tags.begin(), lesson.tags.end(), tag) == lesson.tags.end())
            lesson.tags.push_back(tag);
    lesson.id = m_archive.insert_lesson(lesson);
    m_lessons.push_back(lesson);
    m_knowledge_outbox.push_back(lesson);
    m_progress.event(fmt::format("lesson from #{}: {}", lesson.candidate_id.value_or(0), lesson.text));
}

void SearchLoop::record_meta_prompt(Flight& flight)
{
    const MetaPromptResult& result = *flight.meta;
    int island = flight.item.island;
    if (!result.text) {
        log_warn("island {} keeps its strategy text: {}", island, result.problem);
        return;
    }
    MetaPrompt& old = m_meta_prompts.at(m_active_meta[static_cast<size_t>(island)]);
    old.active = false;
    m_archive.update_meta_prompt(old);
    MetaPrompt fresh;
    fresh.island = island;
    fresh.text = *result.text;
    fresh.generation = m_state.generation;
    fresh.id = m_archive.insert_meta_prompt(fresh);
    m_meta_prompts[fresh.id] = fresh;
    m_active_meta[static_cast<size_t>(island)] = fresh.id;
    m_progress.event(fmt::format("island {}: new strategy text (the old one improved {} of {} attempts)", island,
                                 old.improvements, old.uses));
}

void SearchLoop::use_meta_prompt(const WorkItem& item, bool improved)
{
    if (!item.meta_prompt_id || (item.kind != ItemKind::propose && item.kind != ItemKind::repair))
        return;
    auto it = m_meta_prompts.find(*item.meta_prompt_id);
    if (it == m_meta_prompts.end())
        return;
    ++it->second.uses;
    if (improved)
        ++it->second.improvements;
    m_archive.update_meta_prompt(it->second);
}

} // namespace kforge
