// The measurement memo; measurement_memo.hpp states the rules. One mutex guards the table; a point
// being measured is marked busy so that a second thread asking for it waits for the answer rather
// than measuring it again on another GPU.
#include "evaluator/measurement_memo.hpp"

#include <algorithm>

#include "evaluator/compile/cubin_info.hpp"
#include "util/hash.hpp"

namespace kforge {
namespace {

constexpr size_t k_failures_per_point = 4;
constexpr size_t k_key_digits_archived = 16;

// Notes the timing phase writes (they belong with the measurements they describe).
bool is_timing_note(const std::string& key) { return key == "below_roofline"; }

void merge_notes(Json& into, const Json& notes, bool timing)
{
    if (!notes.is_object())
        return;
    for (const auto& [key, value] : notes.items())
        if (is_timing_note(key) == timing)
            into[key] = value;
}

} // namespace

std::string_view timing_standard_name(TimingStandard standard)
{
    switch (standard) {
    case TimingStandard::none: return "none";
    case TimingStandard::sweep: return "sweep";
    case TimingStandard::quick: return "quick";
    case TimingStandard::confirm: return "confirm";
    }
    return "quick";
}

std::optional<TimingStandard> parse_timing_standard(std::string_view name)
{
    for (auto s : {TimingStandard::none, TimingStandard::sweep, TimingStandard::quick, TimingStandard::confirm})
        if (timing_standard_name(s) == name)
            return s;
    return std::nullopt;
}

bool PointCoverage::covers(const VariantAsk& ask) const
{
    return (!ask.verify_tests || tests) && (ask.timing == TimingStandard::none || timing >= ask.timing) &&
           (!ask.held_out || held_out) && (!ask.profile || profile);
}

VariantAsk PointCoverage::remainder(const VariantAsk& ask) const
{
    VariantAsk left = ask;
    left.verify_tests = ask.verify_tests && !tests;
    if (ask.timing != TimingStandard::none && timing >= ask.timing)
        left.timing = TimingStandard::none;
    left.held_out = ask.held_out && !held_out;
    left.profile = ask.profile && !profile;
    return left;
}

void PointCoverage::credit(const VariantAsk& ran)
{
    tests = tests || ran.verify_tests;
    timing = std::max(timing, ran.timing);
    held_out = held_out || ran.held_out;
    profile = profile || ran.profile;
}

bool failure_stands_in(const VariantAsk& failed, const VariantAsk& ask)
{
    return (ask.verify_tests || !failed.verify_tests) && ask.timing >= failed.timing && (ask.held_out || !failed.held_out);
}

struct MeasurementMemo::Entry {
    PointCoverage coverage;
    Json tests_from, timing_from, held_out_from, profile_from; // the jobs that established each phase
    std::vector<Measurement> measurements;  // from the run that set coverage.timing
    Json timing_notes = Json::object();
    Json other_notes = Json::object();
    Json profile = Json::object();
    Json resources = Json::object();
    struct Failure {
        VariantAsk ran;
        VariantResult result;
        Json from;
    };
    std::vector<Failure> failures;
    bool busy = false;
    uint64_t used = 0;
};

MeasurementMemo::MeasurementMemo(bool enabled, size_t capacity) : m_enabled(enabled), m_capacity(std::max<size_t>(capacity, 16))
{
}

MeasurementMemo::~MeasurementMemo() = default;

std::string MeasurementMemo::key_for(std::string_view cubin, const Json& plan, const ParamPoint& params)
{
    return key_for_behaviour(cubin_behaviour_hash(cubin), plan, params);
}

std::string MeasurementMemo::key_for_behaviour(const std::string& behaviour_hash, const Json& plan, const ParamPoint& params)
{
    Json launches = plan;
    if (launches.is_object())
        launches.erase("params"); // the point below fixes their values; the lists reach no kernel
    Hasher hasher;
    hasher.add(behaviour_hash).add(launches.dump());
    for (const auto& [name, value] : params)
        hasher.add(name).add(value);
    return hasher.hex();
}

std::optional<VariantResult> MeasurementMemo::answer(Entry& entry, const VariantAsk& ask) const
{
    for (const auto& failure : entry.failures) {
        if (!failure_stands_in(failure.ran, ask))
            continue;
        VariantResult result = failure.result;
        result.ask = ask;
        result.gpu_seconds = 0;
        result.reused = Json{{"phases", Json::array({"failure"})}, {"from", Json::array({failure.from})}};
        return result;
    }
    if (!entry.coverage.covers(ask))
        return std::nullopt;
    VariantAsk nothing{false, TimingStandard::none, false, false};
    VariantResult none;
    none.verdict = Verdict{VerdictKind::correct, ""};
    return combine(entry, ask, nothing, none);
}

// The answer to `ask` from what `fresh` (a run of `ran`, already stored) and the entry hold. A
// failed run answers as it is, naming what it did not run again.
VariantResult MeasurementMemo::combine(const Entry& entry, const VariantAsk& ask, const VariantAsk& ran,
                                       VariantResult fresh) const
{
    fresh.ask = ask;
    bool correct = fresh.verdict.is_correct();
    Json phases = Json::array(), from = Json::array();
    auto reused = [&](const char* phase, const Json& origin) {
        phases.push_back(phase);
        from.push_back(origin);
    };
    if (ask.verify_tests && !ran.verify_tests)
        reused("tests", entry.tests_from);
    if (ask.timing != TimingStandard::none && ran.timing == TimingStandard::none) {
        reused("timing", entry.timing_from);
        if (correct)
            fresh.measurements = entry.measurements;
    }
    if (ask.held_out && !ran.held_out)
        reused("held_out", entry.held_out_from);
    if (ask.profile && !ran.profile) {
        reused("profile", entry.profile_from);
        if (correct)
            fresh.profile = entry.profile;
    }
    if (!phases.empty())
        fresh.reused = Json{{"phases", phases}, {"from", from}};
    if (!correct)
        return fresh;
    Json notes = entry.other_notes;
    merge_notes(notes, ask.timing != TimingStandard::none ? entry.timing_notes : Json::object(), true);
    fresh.notes = notes;
    if (fresh.resources.empty())
        fresh.resources = entry.resources;
    return fresh;
}

void MeasurementMemo::store(Entry& entry, const VariantAsk& ran, const VariantResult& result, const Json& origin)
{
    if (result.resources.is_object() && !result.resources.empty())
        entry.resources = result.resources;
    if (!result.verdict.is_correct()) {
        if (entry.failures.size() < k_failures_per_point)
            entry.failures.push_back({ran, result, origin});
        return;
    }
    if (ran.verify_tests && !entry.coverage.tests)
        entry.tests_from = origin;
    if (ran.timing > entry.coverage.timing) {
        entry.timing_from = origin;
        entry.measurements = result.measurements;
        entry.timing_notes = Json::object();
        merge_notes(entry.timing_notes, result.notes, true);
    }
    if (ran.held_out && !entry.coverage.held_out)
        entry.held_out_from = origin;
    if (ran.profile && !entry.coverage.profile) {
        entry.profile_from = origin;
        entry.profile = result.profile;
    }
    merge_notes(entry.other_notes, result.notes, false);
    entry.coverage.credit(ran);
}

VariantResult MeasurementMemo::run(const std::string& key, const VariantAsk& ask, const Json& origin,
                                   const std::function<VariantResult(const VariantAsk&)>& measure)
{
    if (!m_enabled || key.empty()) {
        VariantResult result = measure(ask);
        result.ask = ask;
        result.key = key;
        std::lock_guard lock(m_mutex);
        ++m_stats.measured;
        m_stats.gpu_seconds += result.gpu_seconds;
        return result;
    }
    VariantAsk ran;
    {
        std::unique_lock lock(m_mutex);
        for (;;) {
            Entry& entry = m_entries[key];
            entry.used = ++m_clock;
            if (entry.busy) {
                m_released.wait(lock); // the entry may be gone after the wait: look it up again
                continue;
            }
            if (auto answered = answer(entry, ask)) {
                ++m_stats.reused_whole;
                answered->key = key;
                return *answered;
            }
            ran = entry.coverage.remainder(ask);
            entry.busy = true;
            break;
        }
    }
    VariantResult fresh;
    try {
        fresh = measure(ran);
    } catch (...) {
        std::lock_guard lock(m_mutex);
        m_entries[key].busy = false;
        m_released.notify_all();
        throw;
    }
    fresh.key = key;
    std::lock_guard lock(m_mutex);
    Entry& entry = m_entries[key]; // busy entries are never evicted
    entry.busy = false;
    if (fresh.from_worker)
        store(entry, ran, fresh, origin);
    ++m_stats.measured;
    m_stats.gpu_seconds += fresh.gpu_seconds;
    VariantResult result = combine(entry, ask, ran, std::move(fresh));
    if (!result.reused.is_null())
        ++m_stats.reused_part;
    m_released.notify_all();
    evict_if_full();
    return result;
}

void MeasurementMemo::record_reference_timing(const std::string& key, const std::vector<Measurement>& baselines)
{
    VariantResult timed;
    timed.verdict = Verdict{VerdictKind::correct, ""};
    for (const auto& m : baselines) {
        if (m.subject != "reference" || m.shape_set != "bench" || !m.confirmed)
            continue;
        Measurement as_candidate = m;
        as_candidate.subject = "candidate";
        timed.measurements.push_back(as_candidate);
        timed.measurements.push_back(m); // the confirmation's interleaved reference: itself
    }
    if (!m_enabled || key.empty() || timed.measurements.empty())
        return;
    std::lock_guard lock(m_mutex);
    Entry& entry = m_entries[key];
    entry.used = ++m_clock;
    store(entry, VariantAsk{false, TimingStandard::confirm, false, false}, timed, Json{{"baselines", true}});
}

void MeasurementMemo::evict_if_full()
{
    if (m_entries.size() <= m_capacity)
        return;
    // Drop the least recently used tenth at once, so eviction is rare.
    std::vector<std::pair<uint64_t, std::string>> idle;
    for (const auto& [key, entry] : m_entries)
        if (!entry.busy)
            idle.emplace_back(entry.used, key);
    size_t drop = std::min(idle.size(), m_capacity / 10 + (m_entries.size() - m_capacity));
    std::nth_element(idle.begin(), idle.begin() + static_cast<std::ptrdiff_t>(drop), idle.end());
    for (size_t i = 0; i < drop; ++i)
        m_entries.erase(idle[i].second);
}

MeasurementMemo::Stats MeasurementMemo::stats() const
{
    std::lock_guard lock(m_mutex);
    return m_stats;
}

Json variant_runs_to_json(const std::vector<VariantResult>& results)
{
    Json runs = Json::array();
    for (const auto& r : results) {
        Json params = Json::object();
        for (const auto& [name, value] : r.params)
            params[name] = value;
        Json run{{"params", params},
                 {"tests", r.ask.verify_tests},
                 {"timing", timing_standard_name(r.ask.timing)},
                 {"held_out", r.ask.held_out},
                 {"profile", r.ask.profile},
                 {"verdict", verdict_name(r.verdict.kind)},
                 {"gpu_s", r.gpu_seconds},
                 {"key", r.key.substr(0, k_key_digits_archived)}};
        if (!r.reused.is_null())
            run["reused"] = r.reused;
        if (!r.gpu.empty())
            run["gpu"] = r.gpu;
        runs.push_back(std::move(run));
    }
    return runs;
}

} // namespace kforge
