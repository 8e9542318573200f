// Matching CUPTI kernel records to timed samples (evaluator/worker/sample_records.hpp), on made-up records.
#include "kf_catch.hpp"

#include "evaluator/worker/sample_records.hpp"

using namespace kforge;

namespace {

// Records in launch order with consecutive start times.
struct Recorder {
    std::vector<KernelRecord> records;
    uint64_t clock = 1000;
    void add(const std::string& name)
    {
        records.push_back({name, clock, clock + 5});
        clock += 10;
    }
    // One timed sample: reset, flush, probe, kernels, probe.
    void sample(const std::vector<std::string>& kernels, bool reset_kernel = false)
    {
        if (reset_kernel)
            add("kforge_poison");
        add(k_flush_kernel);
        add(k_probe_kernel);
        for (const auto& k : kernels)
            add(k);
        add(k_probe_kernel);
    }
};

std::vector<std::string> names_of(const std::vector<KernelRecord>& records)
{
    std::vector<std::string> names;
    for (const auto& r : records)
        names.push_back(r.name);
    return names;
}

} // namespace

TEST_CASE("records split into samples by their probes, whatever each sample launched", "[evaluator]")
{
    Recorder r;
    r.sample({"cand_a", "cand_b"});
    r.sample({"ref"}, true);
    r.sample({"cand_a", "cand_b"});
    SampleSplit split = split_samples(r.records, 3);
    REQUIRE(split.complete);
    CHECK(split.outside == 0);
    CHECK(split.stale == 0);
    CHECK(names_of(split.samples[0]) == std::vector<std::string>{"cand_a", "cand_b"});
    CHECK(names_of(split.samples[1]) == std::vector<std::string>{"ref"});
    CHECK(names_of(split.samples[2]) == std::vector<std::string>{"cand_a", "cand_b"});
}

TEST_CASE("a late record from an earlier drain is ignored instead of shifting every sample", "[evaluator]")
{
    // The failure seen on an H100: the last record of the previous measurement arrived with this
    // batch, and counting records attributed it to the first sample.
    Recorder r;
    r.add("softmax_block"); // late, from before this batch
    r.sample({"softmax_ref"});
    r.sample({"softmax_block"});
    SampleSplit split = split_samples(r.records, 2);
    REQUIRE(split.complete);
    CHECK(split.stale == 1);
    CHECK(split.outside == 0);
    CHECK(names_of(split.samples[0]) == std::vector<std::string>{"softmax_ref"});
    CHECK(names_of(split.samples[1]) == std::vector<std::string>{"softmax_block"});
}

TEST_CASE("a batch whose last records have not arrived yet is incomplete", "[evaluator]")
{
    Recorder r;
    r.sample({"k"});
    r.sample({"k"});
    auto all = r.records;
    for (size_t cut = 1; cut <= 4; ++cut) {
        std::vector<KernelRecord> partial(all.begin(), all.end() - static_cast<long>(cut));
        CAPTURE(cut);
        CHECK_FALSE(split_samples(partial, 2).complete);
    }
    // A record missing from the middle (a probe) is caught too.
    std::vector<KernelRecord> holed = all;
    holed.erase(holed.begin() + 3); // the first sample's end probe
    CHECK_FALSE(split_samples(holed, 2).complete);
}

TEST_CASE("kernels outside the brackets are counted; kernels after the last probe keep it incomplete", "[evaluator]")
{
    Recorder r;
    r.sample({"k"});
    r.add("hidden_between_samples");
    r.sample({"k"});
    SampleSplit split = split_samples(r.records, 2);
    REQUIRE(split.complete);
    CHECK(split.outside == 1);

    Recorder late;
    late.sample({"k"});
    late.add("still_running_after_the_plan");
    CHECK_FALSE(split_samples(late.records, 1).complete);

    Recorder inside;
    inside.sample({"k", "extra_on_the_side"});
    SampleSplit extra = split_samples(inside.records, 1);
    REQUIRE(extra.complete);
    CHECK(extra.samples[0].size() == 2); // the caller compares against the plan's kernel list
}

TEST_CASE("a library call that launched nothing gives an empty sample, not a shifted one", "[evaluator]")
{
    Recorder r;
    r.sample({});
    r.sample({"gemm_kernel"});
    SampleSplit split = split_samples(r.records, 2);
    REQUIRE(split.complete);
    CHECK(split.samples[0].empty());
    CHECK(names_of(split.samples[1]) == std::vector<std::string>{"gemm_kernel"});
}
