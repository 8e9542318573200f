// Which GPU measured what (schema version 2): stored with each candidate, per-session busy time,
// totals over sessions, and archives written before version 2 still readable.
#include <catch2/catch.hpp>

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "test_support.hpp"

namespace kforge::test {
namespace {

GpuIdentity gpu(int rank, int index)
{
    return GpuIdentity{"node7", rank, index, "GPU-0000000" + std::to_string(rank) + "-" + std::to_string(index),
                       "NVIDIA H100 80GB HBM3"};
}

Candidate measured_on(std::optional<GpuIdentity> where, double fitness)
{
    Candidate c;
    c.source = softmax_candidate_source() + "// " + std::to_string(fitness);
    c.source_hash = "hash-" + std::to_string(fitness);
    c.origin = Origin::llm;
    c.evaluation.verdict = Verdict{where ? VerdictKind::correct : VerdictKind::compile_error, ""};
    if (where) {
        c.evaluation.fitness = fitness;
        c.evaluation.measurements = bench_measurements("candidate", fitness);
    }
    c.evaluation.gpu = where;
    return c;
}

GpuUsage usage(const GpuIdentity& identity, double busy, double wall, int64_t evaluations, bool lost = false)
{
    return GpuUsage{identity, busy, wall, evaluations, lost ? 1 : 0, lost};
}

} // namespace

TEST_CASE("each candidate keeps the GPU that measured it, and each GPU its busy time per session", "[archive]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    {
        Archive archive = Archive::create(path, softmax_run_info());
        CHECK(archive.next_gpu_session() == 1);
        int64_t a = archive.insert_candidate(measured_on(gpu(0, 0), 1.5));
        archive.insert_candidate(measured_on(gpu(1, 0), 1.2));
        archive.insert_candidate(measured_on(gpu(0, 0), 1.1));
        archive.insert_candidate(measured_on(std::nullopt, 0)); // a compile error: no GPU ran it
        archive.record_gpu_usage(1, {usage(gpu(0, 0), 3, 10, 4), usage(gpu(1, 0), 2, 10, 2)});
        archive.record_gpu_usage(1, {usage(gpu(0, 0), 5, 12, 5), usage(gpu(1, 0), 6, 12, 3)}); // brought up to date
        CHECK(archive.next_gpu_session() == 2);
        archive.record_gpu_usage(2, {usage(gpu(0, 0), 1, 2, 1), usage(gpu(1, 0), 0.5, 1, 0, true)});
        REQUIRE(archive.candidate(a)->evaluation.gpu);
        CHECK(*archive.candidate(a)->evaluation.gpu == gpu(0, 0));
        CHECK(archive.candidate(a)->evaluation.gpu->name == "NVIDIA H100 80GB HBM3");
        CHECK_FALSE(archive.candidate(4)->evaluation.gpu);
    }
    Archive archive = Archive::open(path, OpenMode::read_only);
    std::vector<GpuTotals> totals = archive.gpu_totals();
    REQUIRE(totals.size() == 2);
    CHECK(totals[0].usage.gpu == gpu(0, 0));
    CHECK(totals[0].candidates == 2);
    CHECK(totals[0].usage.busy_s == Approx(6));
    CHECK(totals[0].usage.wall_s == Approx(14));
    CHECK(totals[0].usage.evaluations == 6);
    CHECK(totals[0].sessions == 2);
    CHECK_FALSE(totals[0].usage.lost);
    CHECK(totals[1].usage.gpu == gpu(1, 0));
    CHECK(totals[1].usage.gpu.label() == "r1/gpu0");
    CHECK(totals[1].candidates == 1);
    CHECK(totals[1].usage.restarts == 1);
    CHECK(totals[1].usage.lost); // lost in the latest session it served in
}

TEST_CASE("an archive written before GPUs were recorded opens read-only and upgrades when resumed", "[archive]")
{
    TempDir dir;
    auto path = dir / "old.kforge";
    std::vector<Migration> first_schema{schema_migrations().front()};
    {
        Archive old = Archive::create(path, softmax_run_info(), first_schema);
        old.insert_candidate(measured_on(std::nullopt, 0));
    }
    {
        // GPU tables are additive: a reader does without them.
        Archive reader = Archive::open(path, OpenMode::read_only);
        CHECK(reader.schema_version() == 1);
        CHECK(reader.candidate_count() == 1);
        CHECK(reader.gpu_totals().empty());
        CHECK_FALSE(reader.candidate(1)->evaluation.gpu);
    }
    Archive writer = Archive::open(path, OpenMode::write);
    CHECK(writer.schema_version() == schema_migrations().back().version);
    int64_t id = writer.insert_candidate(measured_on(gpu(0, 1), 2.0));
    CHECK(writer.candidate(id)->evaluation.gpu->device_index == 1);
    CHECK(writer.gpu_totals().size() == 1);
}

} // namespace kforge::test
