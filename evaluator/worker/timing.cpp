// Sampling with CUPTI activity records, clock probes and stopping rules; see the header.
#include "evaluator/worker/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "evaluator/worker/cupti_activity.hpp"
#include "evaluator/worker/plan.hpp"
#include "evaluator/worker/sample_records.hpp"

namespace kforge {
namespace {

constexpr int k_max_batch = 32;
constexpr size_t k_max_subjects = 8;        // candidate, reference, vendor routines
constexpr size_t k_probe_slot_bytes = 4 * sizeof(uint64_t); // clock and time, before and after

double quantile(const std::vector<double>& sorted, double q)
{
    if (sorted.empty())
        return 0;
    double pos = q * static_cast<double>(sorted.size() - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, sorted.size() - 1);
    double frac = pos - static_cast<double>(lo);
    return sorted[lo] * (1 - frac) + sorted[hi] * frac;
}

// The kernel records of the last `samples` timed runs, one list per run (sample_records.hpp). CUPTI
// may still be handing records over after the stream is idle, so an incomplete pattern is drained
// again for a while; what never completes is reported, as is work outside the runs' brackets.
std::vector<std::vector<KernelRecord>> collect_sample_records(int samples, std::string& problem)
{
    constexpr auto k_patience = std::chrono::seconds(2);
    auto give_up = std::chrono::steady_clock::now() + k_patience;
    std::vector<KernelRecord> pool;
    for (;;) {
        auto more = ActivityTracer::drain();
        pool.insert(pool.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
        std::stable_sort(pool.begin(), pool.end(), [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
        SampleSplit split = split_samples(pool, samples);
        if (split.complete) {
            if (split.outside > 0)
                problem = fmt::format("CUPTI saw {} kernel execution{} outside the plan's launches: extra work the "
                                      "timing cannot attribute", split.outside, split.outside == 1 ? "" : "s");
            return std::move(split.samples);
        }
        if (std::chrono::steady_clock::now() > give_up) {
            problem = fmt::format("CUPTI's kernel records of {} timed run{} did not arrive in launch order within {} s "
                                  "(work still running after the plan's last launch, or on another stream?)",
                                  samples, samples == 1 ? "" : "s", k_patience.count());
            return {};
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

} // namespace

TimingSettings sweep_timing()
{
    TimingSettings s;
    s.warmup_runs = 2;
    s.warmup_seconds = 0.002;
    s.min_samples = 5;
    s.max_samples = 12;
    s.target_kernel_seconds = 0.01;
    s.wall_cap_seconds = 0.3;
    return s;
}

TimingSettings quick_timing()
{
    TimingSettings s;
    s.min_samples = 10;
    s.max_samples = 40;
    s.target_kernel_seconds = 0.04;
    s.wall_cap_seconds = 0.5;
    return s;
}

TimingSettings confirm_timing()
{
    TimingSettings s;
    s.warmup_runs = 5;
    s.warmup_seconds = 0.025;
    s.min_samples = 20;
    s.max_samples = 2000;
    s.target_kernel_seconds = 0.5;
    s.max_rel_stdev = 0.005;
    s.wall_cap_seconds = 10.0;
    return s;
}

SampleStats summarize_samples(std::vector<double> samples)
{
    SampleStats stats;
    std::sort(samples.begin(), samples.end());
    stats.kept_ns = samples;
    if (samples.empty())
        return stats;
    stats.median_ns = quantile(samples, 0.5);
    stats.q1_ns = quantile(samples, 0.25);
    stats.q3_ns = quantile(samples, 0.75);
    stats.min_ns = samples.front();
    stats.mean_ns = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
    if (samples.size() > 1) {
        double var = 0;
        for (double s : samples)
            var += (s - stats.mean_ns) * (s - stats.mean_ns);
        var /= static_cast<double>(samples.size() - 1);
        stats.rel_stdev = stats.mean_ns > 0 ? std::sqrt(var) / stats.mean_ns : 0;
    }
    return stats;
}

Timer::Timer(const GpuContext& context, const InternalKernels& kernels, size_t flush_bytes)
    : m_context(context), m_kernels(kernels), m_flush(flush_bytes),
      m_probe_slots(static_cast<size_t>(k_max_batch) * k_max_subjects * k_probe_slot_bytes)
{
}

void Timer::enqueue_flush() const
{
    m_kernels.flush_read(m_flush.get(), m_flush.bytes());
}

std::vector<SampleStats> Timer::measure(const std::vector<TimingSubject>& subjects, const TimingSettings& settings,
                                        std::chrono::milliseconds run_deadline, bool& timed_out)
{
    const auto& cu = driver();
    CUstream stream = m_context.stream();
    timed_out = false;
    if (subjects.empty() || subjects.size() > k_max_subjects)
        throw std::logic_error(fmt::format("Timer::measure takes 1 to {} subjects, got {}", k_max_subjects, subjects.size()));
    auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    auto wait = [&](int runs) {
        auto deadline = std::chrono::steady_clock::now() + run_deadline * std::max(1, runs);
        if (wait_for_stream(stream, deadline) == WaitStatus::timeout) {
            timed_out = true;
            return false;
        }
        return true;
    };

    // Warm-up: module loading, clock ramp-up, first-touch effects stay out of the numbers.
    auto warm_start = std::chrono::steady_clock::now();
    for (int i = 0;; ++i) {
        for (const auto& subject : subjects) {
            subject.reset();
            subject.launch();
        }
        if (!wait(static_cast<int>(subjects.size())))
            return {};
        double warm = std::chrono::duration<double>(std::chrono::steady_clock::now() - warm_start).count();
        if (i + 1 >= settings.warmup_runs && warm >= settings.warmup_seconds)
            break;
        if (warm > settings.wall_cap_seconds)
            break;
    }
    ActivityTracer::drain();
    uint64_t dropped_before = ActivityTracer::dropped();

    // Estimate a run's time from the warm-up to size batches (~10 ms of work per batch).
    std::vector<std::vector<double>> kept(subjects.size());
    std::vector<std::vector<double>> clocks(subjects.size());
    std::vector<int> discarded(subjects.size(), 0);
    std::vector<SampleStats> result(subjects.size());
    std::vector<size_t> learned(subjects.size(), 0); // kernels per run of a subject with library steps
    double nominal_mhz = m_context.facts().clock_khz / 1000.0;
    int batch = 1;
    double accumulated = 0;
    for (;;) {
        int slots = batch * static_cast<int>(subjects.size());
        KF_CU_CHECK(cu.cuMemsetD8Async(m_probe_slots.get(), 0, static_cast<size_t>(slots) * 4 * sizeof(uint64_t), stream));
        for (int b = 0; b < batch; ++b) {
            for (size_t s = 0; s < subjects.size(); ++s) {
                size_t index = static_cast<size_t>(b) * subjects.size() + s;
                CUdeviceptr slot = m_probe_slots.get() + index * 4 * sizeof(uint64_t);
                // Reset first (its memsets dirty L2), then flush: the timed run starts from a clean L2.
                subjects[s].reset();
                enqueue_flush();
                m_kernels.clock_probe(slot);
                subjects[s].launch();
                m_kernels.clock_probe(slot + 2 * sizeof(uint64_t));
            }
        }
        if (!wait(slots))
            return {};
        // Records for each (sample, subject), in launch order: whatever ran between a sample's
        // probes belongs to it, so a library call's unknown kernels need no sample of their own.
        std::string collect_problem;
        std::vector<std::vector<KernelRecord>> sample_records = collect_sample_records(slots, collect_problem);
        if (!collect_problem.empty()) {
            for (auto& stats : result)
                stats.problem = collect_problem;
            return result;
        }
        std::vector<uint64_t> probes(static_cast<size_t>(slots) * 4);
        KF_CU_CHECK(cu.cuMemcpyDtoH(probes.data(), m_probe_slots.get(), probes.size() * sizeof(uint64_t)));

        for (int b = 0; b < batch; ++b) {
            for (size_t s = 0; s < subjects.size(); ++s) {
                const auto& names = subjects[s].kernel_names;
                const auto& mine = sample_records[static_cast<size_t>(b) * subjects.size() + s];
                if (subjects[s].library_steps > 0) {
                    // The plan's own kernels plus at least one per library step; the first sample
                    // learns how many the steps launch, and the count never changes after that.
                    size_t least = names.size() + static_cast<size_t>(subjects[s].library_steps);
                    if (learned[s] == 0 && mine.size() >= least)
                        learned[s] = mine.size();
                    if (mine.size() != learned[s]) {
                        result[s].problem =
                            learned[s] == 0
                                ? fmt::format("{} ran {} kernels where its {} kernel launches and {} library steps "
                                              "need at least {}",
                                              subjects[s].label, mine.size(), names.size(), subjects[s].library_steps, least)
                                : fmt::format("{} ran {} kernels where its first timed run (library steps included) "
                                              "ran {}",
                                              subjects[s].label, mine.size(), learned[s]);
                        return result;
                    }
                } else if (names.empty() ? mine.empty() : mine.size() != names.size()) {
                    result[s].problem = fmt::format("{} ran {} kernels where {} were expected", subjects[s].label,
                                                    mine.size(), names.empty() ? "some" : std::to_string(names.size()));
                    return result;
                }
                uint64_t first_start = UINT64_MAX, last_end = 0;
                for (size_t k = 0; k < mine.size(); ++k) {
                    // The count of kernels inside the sample's probes is what is checked, not their
                    // names: CUPTI can report a kernel under the name of a function from a module
                    // unloaded earlier (seen on H100 and H200 when a candidate's module is reloaded
                    // for confirmation), and a candidate has no host code to launch anything else.
                    const KernelRecord& r = mine[k];
                    if (r.device_launched || r.start_ns == 0 || r.end_ns < r.start_ns) {
                        result[s].problem = fmt::format("unexpected kernel record '{}' where '{}' was launched{}",
                                                        r.name, k < names.size() && subjects[s].library_steps == 0
                                                                    ? names[k]
                                                                    : std::string("a library call"),
                                                        r.device_launched ? " (device-launched)" : "");
                        return result;
                    }
                    first_start = std::min(first_start, r.start_ns);
                    last_end = std::max(last_end, r.end_ns);
                }
                double ns = static_cast<double>(last_end - first_start);
                const uint64_t* probe = &probes[static_cast<size_t>(b * subjects.size() + s) * 4];
                double mhz = 0;
                if (probe[1] && probe[3] && probe[3] > probe[1] && probe[2] > probe[0])
                    mhz = static_cast<double>(probe[2] - probe[0]) / static_cast<double>(probe[3] - probe[1]) * 1000.0;
                if (mhz > 0 && nominal_mhz > 0 && mhz < settings.throttle_fraction * nominal_mhz) {
                    ++discarded[s];
                    continue;
                }
                kept[s].push_back(ns);
                if (mhz > 0)
                    clocks[s].push_back(mhz);
                accumulated += ns * 1e-9;
            }
        }
        size_t fewest = kept[0].size();
        for (const auto& k : kept)
            fewest = std::min(fewest, k.size());
        bool enough = static_cast<int>(fewest) >= settings.min_samples;
        bool spread_ok = true;
        if (settings.max_rel_stdev > 0)
            for (const auto& k : kept)
                spread_ok = spread_ok && summarize_samples(k).rel_stdev <= settings.max_rel_stdev;
        double per_subject_time = accumulated / static_cast<double>(subjects.size());
        if (enough && per_subject_time >= settings.target_kernel_seconds && spread_ok)
            break;
        if (static_cast<int>(fewest) >= settings.max_samples || elapsed() >= settings.wall_cap_seconds)
            break;
        // Grow batches toward ~10 ms of kernel time each.
        double per_run = fewest > 0 ? per_subject_time / static_cast<double>(fewest) : 1e-3;
        batch = std::clamp(static_cast<int>(0.01 / std::max(per_run, 1e-6)), 1, k_max_batch);
    }

    bool dropped = ActivityTracer::dropped() != dropped_before;
    for (size_t s = 0; s < subjects.size(); ++s) {
        SampleStats stats = summarize_samples(kept[s]);
        stats.discarded = discarded[s];
        if (!clocks[s].empty())
            stats.mean_clock_mhz = std::accumulate(clocks[s].begin(), clocks[s].end(), 0.0) / static_cast<double>(clocks[s].size());
        if (dropped)
            stats.problem = "CUPTI dropped activity records during the measurement";
        else if (stats.kept_ns.empty())
            stats.problem = fmt::format("every sample ran below {:.0f}% of the nominal SM clock (throttled GPU)",
                                        settings.throttle_fraction * 100);
        result[s] = std::move(stats);
    }
    return result;
}

} // namespace kforge
