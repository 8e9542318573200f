// Flagged candidates in the archive: correct ones timed below the roofline floor are listed but rank
// nowhere until a user accepts one, which gives it its re-measured fitness, its evidence and its
// new measurements in one transaction.
#include "kf_catch.hpp"

#include "archive/archive.hpp"
#include "archive/flagged_candidate.hpp"
#include "archive/sample_run.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using namespace kforge;
using namespace kforge::test;

TEST_CASE("a flagged candidate is listed but ranks nowhere until it is accepted", "[archive]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    SampleIds ids = build_sample_archive(path);
    int64_t flagged = add_flagged_candidate(path);
    Archive archive = Archive::open(path, OpenMode::read_only);
    CHECK(archive.flagged_count() == 1);
    std::vector<Candidate> listed = archive.flagged_candidates();
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].id == flagged);
    CHECK(listed[0].evaluation.metrics["suspicious_fitness"].get<double>() == k_flagged_fitness);
    CHECK(archive.best_candidate()->id == ids.best);
    for (const auto& row : archive.top_candidates(20))
        CHECK(row.id != flagged);
}

TEST_CASE("accepting a flagged candidate sets its fitness, keeps the evidence and adds the re-measurement",
          "[archive]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    SampleIds ids = build_sample_archive(path);
    int64_t flagged = add_flagged_candidate(path);
    size_t before = Archive::open(path, OpenMode::read_only).measurements(flagged).size();
    std::vector<Measurement> again = bench_measurements("candidate", 3.0);
    for (auto& m : again)
        m.confirmed = true;
    Json evidence{{"gpu", "NVIDIA H100 80GB HBM3"}, {"held_out", "passed"}, {"fitness", 3.0}};
    {
        Archive archive = Archive::open(path, OpenMode::write);
        archive.accept_flagged_candidate(flagged, 3.0, evidence, again);
    }
    Archive archive = Archive::open(path, OpenMode::read_only);
    auto accepted = archive.candidate(flagged);
    REQUIRE(accepted);
    CHECK(accepted->evaluation.fitness == 3.0);
    CHECK(accepted->evaluation.metrics["accepted"] == evidence);
    CHECK(accepted->evaluation.metrics["suspicious"] == true); // still listed as flagged, now accepted
    CHECK(accepted->evaluation.measurements.size() == before + again.size());
    CHECK(archive.best_candidate()->id == flagged);
    CHECK(archive.flagged_count() == 1);
    CHECK(archive.top_candidates(1).front().id == flagged);
    CHECK(ids.best != flagged);
}

TEST_CASE("only a flagged candidate is accepted, once, and only by a writer", "[archive]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    SampleIds ids = build_sample_archive(path);
    int64_t flagged = add_flagged_candidate(path);
    {
        Archive reader = Archive::open(path, OpenMode::read_only);
        CHECK_THROWS_WITH(reader.accept_flagged_candidate(flagged, 3.0, Json::object(), {}),
                          Catch::Contains("read-only") || Catch::Contains("read only"));
    }
    Archive archive = Archive::open(path, OpenMode::write);
    CHECK_THROWS_WITH(archive.accept_flagged_candidate(ids.best, 3.0, Json::object(), {}),
                      Catch::Contains("is not flagged as faster than the roofline floor"));
    CHECK_THROWS_WITH(archive.accept_flagged_candidate(9999, 3.0, Json::object(), {}),
                      Catch::Contains("no candidate 9999"));
    archive.accept_flagged_candidate(flagged, 3.0, Json::object(), {});
    CHECK_THROWS_WITH(archive.accept_flagged_candidate(flagged, 3.0, Json::object(), {}),
                      Catch::Contains("was accepted already"));
    // A refused acceptance changes nothing.
    CHECK(archive.candidate(ids.best)->evaluation.metrics.contains("accepted") == false);
}
