// A run's task is rebuilt from the snapshot in its run record, not from the spec on disk.
#include <catch2/catch.hpp>

#include "archive/run_task.hpp"
#include "archive/sample_run.hpp"
#include "util/error.hpp"

namespace kforge::test {

TEST_CASE("the task rebuilt from a run's snapshot is the task the run started with", "[archive]")
{
    RunInfo run = softmax_run_info();
    REQUIRE(run.task_files.contains("softmax_f32/reference.cu"));
    Task task = load_run_task(run, "run.kforge");
    CHECK(task.name == "softmax_f32");
    CHECK(task.spec_hash == run.task_hash);
    CHECK(task.bench.size() == 3);
    CHECK(task.reference.path == "softmax_f32/reference.cu");
    CHECK(task.reference.source == run.task_files["softmax_f32/reference.cu"].get<std::string>());
    // The snapshot of the rebuilt task is the snapshot it was built from.
    CHECK(snapshot_task_files(task) == run.task_files);
}

TEST_CASE("a snapshot that escapes its folder or lacks a file is refused naming the archive",
          "[archive]")
{
    RunInfo run = softmax_run_info();
    RunInfo escaping = run;
    escaping.task_files["../outside.cu"] = "int x;";
    CHECK_THROWS_WITH(
        load_run_task(escaping, "run.kforge"),
        Catch::Contains(
            "run.kforge: the run's task snapshot: task file '../outside.cu' leaves its folder"));

    RunInfo missing = run;
    missing.task_files = Json::object();
    CHECK_THROWS_WITH(load_run_task(missing, "run.kforge"),
                      Catch::Contains("run.kforge: the run's task snapshot does not load") &&
                          Catch::Contains("softmax_f32/reference.cu: no such file"));

    RunInfo empty = run;
    empty.task_spec.clear();
    CHECK_THROWS_WITH(load_run_task(empty, "run.kforge"),
                      Catch::Contains("holds no task spec snapshot"));
}

} // namespace kforge::test
