// No repeated GPU work: what one (binary, plan, params) point was found to do is reused within a run.
//
// Many candidates of a search resolve to a point already measured: the builtin proposer's children
// re-sweep their parent's params, ten "different" candidates can share one best configuration, and
// a confirmation re-verifies a point the sweep just verified. A point is keyed by what decides the
// GPU's behaviour: the CUBIN's behaviour hash (cubin_info.hpp: debug sections left out), the plan
// as written less its "params" lists (the point fixes their values; the lists do not reach the
// worker's resolution), and the param point. Everything else a run depends on (task, run secret,
// launch deadline, device model) is fixed for one evaluator, and the memo lives in one evaluator,
// shared by all its GPU threads (results from one GPU stand in on another of the same model).
//
// The memo keeps, per point, which phases of the worker's check ladder correct runs established —
// verification on the tests, timing at a standard (sweep < quick < confirm), a profile, the
// held-out check — and the results of failed runs. A request is then answered by:
//   - a stored failure, when the request runs every phase the failing run ran (a stricter or equal
//     ask fails the same way on the same binary);
//   - stored phases alone, when they cover it: a quick screen never stands in for a confirmation,
//     a result without the held-out check never for one with it, tests verified once stand in for
//     verification (as they already do for a sweep's winner);
//   - otherwise the worker runs only the missing phases (e.g. a held-out check after a confirmed
//     timing is only the held-out verification), and the stored phases fill in the rest.
// Results say what was reused and from which job (`reused`), and how long the GPU worked on them
// (`gpu_seconds`), so the archive shows which times were not re-measured. While one thread
// measures a point, another asking for it waits and then uses the answer. Failures of the pipeline
// itself (a crashed worker, a reply that never came) are never stored.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/candidate.hpp"

namespace kforge {

// Timing standards of a variant run, fewest samples first (names as the worker protocol's "timing").
enum class TimingStandard { none = 0, sweep = 1, quick = 2, confirm = 3 };
std::string_view timing_standard_name(TimingStandard standard);
std::optional<TimingStandard> parse_timing_standard(std::string_view name);

// What one run_variant request asks of the GPU worker.
struct VariantAsk {
    bool verify_tests = true;
    TimingStandard timing = TimingStandard::quick;
    bool held_out = false;
    bool profile = false;
};

// One variant's result, as the worker reported it or as the memo put it together.
struct VariantResult {
    ParamPoint params;
    Verdict verdict;
    std::vector<Measurement> measurements;
    Json resources = Json::object();
    Json notes = Json::object();
    Json profile = Json::object();
    VariantAsk ask;                     // what this result answers
    double gpu_seconds = 0;             // the worker's time on it (0 when wholly reused)
    std::string key;                    // the point's memo key ("" when unknown)
    Json reused;                        // null, or {"phases": [...], "from": [origin, ...]}
    bool from_worker = true;            // false: the pipeline failed (crash, lost reply); never stored
    std::string gpu;                    // the label of the GPU it was asked of ("" outside a session)
};

// What correct runs of one point established. Shared with `kforge inspect`, which counts repeats by
// the same rules.
struct PointCoverage {
    bool tests = false;
    TimingStandard timing = TimingStandard::none;
    bool held_out = false;
    bool profile = false;

    bool covers(const VariantAsk& ask) const;
    // The part of `ask` still to run (phases covered here are switched off).
    VariantAsk remainder(const VariantAsk& ask) const;
    void credit(const VariantAsk& ran);
};

// Does a failure seen under `failed` stand for a run under `ask`? Yes when `ask` runs every phase
// `failed` ran, at a timing standard at least as strict.
bool failure_stands_in(const VariantAsk& failed, const VariantAsk& ask);

class MeasurementMemo
{
public:
    // enabled = false: nothing is stored or reused (results still carry keys and GPU seconds, so
    // a run made that way shows its repeats). `capacity`: points kept, least recently used dropped.
    explicit MeasurementMemo(bool enabled = true, size_t capacity = 20000);
    ~MeasurementMemo();
    MeasurementMemo(const MeasurementMemo&) = delete;
    MeasurementMemo& operator=(const MeasurementMemo&) = delete;

    // The key of a point (32 hex digits). `plan` is the plan JSON as written.
    static std::string key_for(std::string_view cubin, const Json& plan, const ParamPoint& params);
    // The same from the CUBIN's behaviour hash (cubin_behaviour_hash), e.g. as the GPU worker
    // reports it for the task's reference.
    static std::string key_for_behaviour(const std::string& behaviour_hash, const Json& plan, const ParamPoint& params);

    // Records the session's baseline timing of the task's reference (its "reference" bench
    // measurements, timed to the confirmation standard) as the timing of the reference's own point:
    // the reference evaluated as a candidate is that very binary, so it is verified, profiled and
    // checked on held-out shapes, but not timed again (its fitness is then exactly 1). Reuses cite
    // {"baselines": true}.
    void record_reference_timing(const std::string& key, const std::vector<Measurement>& baselines);

    // Answers `ask` for the point `key`: from the memo where the rules allow, otherwise by calling
    // `measure` with what remains (once per point at a time). `origin` names the asking job (it
    // is what later reuses cite). An empty key bypasses the memo. Thread-safe; exceptions from
    // `measure` pass through and store nothing.
    VariantResult run(const std::string& key, const VariantAsk& ask, const Json& origin,
                      const std::function<VariantResult(const VariantAsk&)>& measure);

    struct Stats {
        int64_t measured = 0;           // runs that went to the worker (whole or in part)
        int64_t reused_whole = 0;       // answered from the memo alone
        int64_t reused_part = 0;        // the worker ran only the missing phases
        double gpu_seconds = 0;         // the worker's time on measured runs
    };
    Stats stats() const;

private:
    struct Entry;
    std::optional<VariantResult> answer(Entry& entry, const VariantAsk& ask) const;
    void store(Entry& entry, const VariantAsk& ran, const VariantResult& result, const Json& origin);
    VariantResult combine(const Entry& entry, const VariantAsk& ask, const VariantAsk& ran, VariantResult fresh) const;
    void evict_if_full();

    bool m_enabled;
    size_t m_capacity;
    mutable std::mutex m_mutex;
    std::condition_variable m_released;
    std::unordered_map<std::string, Entry> m_entries;
    uint64_t m_clock = 0;
    Stats m_stats;
};

// The archive's private "runs" metric: one object per result (params, ask, verdict, GPU seconds,
// key, what was reused, which GPU ran it).
Json variant_runs_to_json(const std::vector<VariantResult>& results);

} // namespace kforge
