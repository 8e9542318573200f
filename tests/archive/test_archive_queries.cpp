// The queries the search and inspect ask of a run: best, top N, verdict counts, failures, lineage,
// duplicates, baselines.
#include <catch2/catch.hpp>

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "core/source.hpp"
#include "test_support.hpp"

namespace kforge::test {

TEST_CASE("the queries find the best, the top N, verdict counts and failures", "[archive]")
{
    TempDir dir;
    SampleIds ids = build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    CHECK(archive.candidate_count() == 7);

    auto best = archive.best_candidate();
    REQUIRE(best);
    CHECK(best->id == ids.best);
    CHECK(best->inspiration_ids == std::vector<int64_t>{ids.seed});
    CHECK(best->evaluation.measurements.size() == 3);

    auto top = archive.top_candidates(2);
    REQUIRE(top.size() == 2);
    CHECK(top[0].id == ids.best);
    CHECK(top[0].origin == Origin::tune);
    CHECK(top[0].best_params == ParamPoint{{"BLOCK", 128}});
    CHECK(top[1].id == ids.improved);
    CHECK(archive.top_candidates(100).size() == 3); // only correct candidates rank

    auto counts = archive.verdict_counts();
    CHECK(counts[VerdictKind::correct] == 3);
    CHECK(counts[VerdictKind::compile_error] == 2);
    CHECK(counts[VerdictKind::incorrect] == 1);
    CHECK(counts[VerdictKind::runtime_error] == 1);
    CHECK(counts.count(VerdictKind::timeout) == 0);

    auto failures = archive.failures(10, 20);
    REQUIRE(failures.size() == 4);
    CHECK(failures[0].candidate_id == ids.runtime_error); // newest first
    CHECK(failures[0].verdict == VerdictKind::runtime_error);
    CHECK(failures[3].candidate_id == ids.compile_error_a);
    CHECK(failures[3].message == "kernel.cu(61): error");
    CHECK(archive.failures(1, 100).size() == 1);

    auto series = archive.fitness_series();
    REQUIRE(series.size() == 7);
    CHECK(series[0].candidate_id == ids.seed);
    CHECK(series[0].fitness == 1.0);
    CHECK_FALSE(series[2].fitness);
}

TEST_CASE("lineage follows parents from the candidate to the root", "[archive]")
{
    TempDir dir;
    SampleIds ids = build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    auto chain = archive.lineage(ids.runtime_error);
    REQUIRE(chain.size() == 4);
    CHECK(chain[0].id == ids.runtime_error);
    CHECK(chain[1].id == ids.best);
    CHECK(chain[2].id == ids.improved);
    CHECK(chain[2].note == "one online max/sum pass instead of two");
    CHECK(chain[3].id == ids.seed);
    CHECK_FALSE(chain[3].parent_id);
    CHECK(archive.lineage(ids.seed).size() == 1);
    CHECK(archive.lineage(12345).empty());
}

TEST_CASE("a duplicate source is found by its hash", "[archive]")
{
    TempDir dir;
    SampleIds ids = build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    // Comments and whitespace do not make a new candidate.
    std::string reformatted = "/* a comment */\n" + softmax_candidate_source() + "\n\n   ";
    auto found = archive.find_candidate_by_hash(normalized_source_hash(reformatted));
    REQUIRE(found);
    CHECK(*found == ids.improved);
    CHECK_FALSE(archive.find_candidate_by_hash(
        normalized_source_hash("extern \"C\" __global__ void k() {}")));
}

TEST_CASE("baselines keep the latest timing per shape and subject", "[archive]")
{
    TempDir dir;
    build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::write);
    auto first = archive.baselines();
    REQUIRE(first.size() == 3);
    CHECK(first[0].subject == "reference");
    CHECK(first[0].median_ns == reference_bench_ns()[0]);
    CHECK(first[2].shape_label == bench_labels()[2]);

    // A resumed run re-times the reference; the newer timing wins, the order stays.
    auto retimed = bench_measurements("reference", 1.25);
    retimed.resize(1);
    archive.insert_baselines(retimed);
    auto second = archive.baselines();
    REQUIRE(second.size() == 3);
    CHECK(second[0].median_ns == Approx(reference_bench_ns()[0] / 1.25));
    CHECK(second[1].median_ns == reference_bench_ns()[1]);
    // Baselines are not any candidate's measurements.
    for (const auto& row : archive.top_candidates(10))
        for (const auto& m : archive.measurements(row.id))
            CHECK(m.subject == "candidate");
}

} // namespace kforge::test
