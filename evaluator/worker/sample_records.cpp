// Matching kernel records to timed samples by their launch pattern; see the header.
#include "evaluator/worker/sample_records.hpp"

#include <algorithm>
#include <string_view>

namespace kforge {
namespace {

bool is_internal(const KernelRecord& r) { return std::string_view(r.name).rfind("kforge_", 0) == 0; }
bool is_probe(const KernelRecord& r) { return r.name == k_probe_kernel; }
bool is_flush(const KernelRecord& r) { return r.name == k_flush_kernel; }

} // namespace

SampleSplit split_samples(const std::vector<KernelRecord>& records, int samples)
{
    SampleSplit split;
    split.samples.resize(static_cast<size_t>(std::max(samples, 0)));
    // Walk from the newest record back; `i` is one past the record to look at.
    size_t i = records.size();
    for (int s = samples - 1; s >= 0; --s) {
        auto& mine = split.samples[static_cast<size_t>(s)];
        // Between this sample's end probe and the next sample's flush (or the end): the next
        // sample's output reset (internal kernels) and nothing else.
        while (i > 0 && !is_probe(records[i - 1])) {
            if (s == samples - 1 && i == records.size())
                return split; // the newest record is not the last end probe: more is to come
            if (is_flush(records[i - 1]))
                return split; // a flush where an end probe belongs: the probe's record is missing
            split.outside += !is_internal(records[i - 1]);
            --i;
        }
        if (i == 0)
            return split;
        --i; // the end probe
        while (i > 0 && !is_probe(records[i - 1])) {
            if (is_internal(records[i - 1]))
                return split; // our own kernel inside a bracket: records are missing
            mine.push_back(records[i - 1]);
            --i;
        }
        if (i == 0)
            return split;
        --i; // the start probe
        std::reverse(mine.begin(), mine.end());
        // Between the flush and the start probe nothing of ours runs; anything else is outside.
        while (i > 0 && !is_flush(records[i - 1])) {
            if (is_probe(records[i - 1]))
                return split;
            split.outside += !is_internal(records[i - 1]);
            --i;
        }
        if (i == 0)
            return split;
        --i; // the flush
    }
    split.stale = i;
    split.complete = true;
    return split;
}

} // namespace kforge
