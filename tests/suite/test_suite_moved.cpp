// A suite folder that moves or is copied together with its sources (a `kforge model` folder holds
// regions/ and suite/ side by side) keeps its problems: each is known by its source's path relative
// to the suite folder too, so the copy's sources are the copy's problems, not new ones with ids
// `-2`, and a moved folder resumes its archives. A manifest written before the relative paths were
// kept still reads, and learns them where it was made.
#include "kf_catch.hpp"

#include <csignal>
#include <thread>

#include "suite/problems.hpp"
#include "suite/suite_checks.hpp"
#include "test_support.hpp"
#include "util/file_lock.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

namespace fs = std::filesystem;

// FOLDER/regions with a PyTorch program and a task spec (what a folder scan takes as problems).
void write_regions(const fs::path& folder)
{
    write_text(folder / "regions" / "r00_gemm_relu.py",
               "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_inputs():\n    return []\n");
    write_text(folder / "regions" / "r01_norm.json", R"({"schema": "kforge.task/1", "name": "r01_norm"})");
}

// The manifest as a run would leave it: written and read back.
SuiteManifest reread(const SuiteManifest& manifest)
{
    return SuiteManifest::from_json(manifest.to_json(), "suite.json");
}

std::vector<FoundProblem> regions_of(const fs::path& folder)
{
    return find_problem_sources({(folder / "regions").string()});
}

} // namespace

TEST_CASE("a suite folder copied or moved with its sources keeps its problems, which point at the sources beside it",
          "[cli][suite]")
{
    TempDir dir;
    fs::path original = dir / "model";
    write_regions(original);
    SuiteManifest manifest;
    REQUIRE(add_new_problems(manifest, regions_of(original), original / "suite") == 2);
    const SuiteProblem* gemm = manifest.find("r00_gemm_relu");
    REQUIRE(gemm);
    CHECK(gemm->source_relative == "../regions/r00_gemm_relu.py");
    CHECK(gemm->source == (original / "regions" / "r00_gemm_relu.py").string());

    // A copy: its manifest names the original's sources, which still exist; its own are found.
    fs::path copy = dir / "copy";
    fs::copy(original, copy, fs::copy_options::recursive);
    SuiteManifest copied = reread(manifest);
    CHECK(add_new_problems(copied, regions_of(copy), copy / "suite") == 0);
    REQUIRE(copied.problems.size() == 2);
    for (const auto& p : copied.problems) {
        INFO(p.id);
        CHECK_THAT(p.source, Catch::StartsWith((copy / "regions").string()));
        bool python = p.kind == ProblemKind::python;
        // An imported program's spec is the suite's own copy; a spec is read where it is.
        CHECK(p.spec == (python ? std::string("problems/r00_gemm_relu/r00_gemm_relu.json") : p.source));
    }
    // The original, run again, still has its own.
    CHECK(add_new_problems(manifest, regions_of(original), original / "suite") == 0);
    CHECK(manifest.find("r01_norm")->spec == (original / "regions" / "r01_norm.json").string());

    // Moved, and run without naming its sources: the stored ones are gone, those beside it taken.
    fs::path moved = dir / "moved";
    fs::rename(copy, moved);
    SuiteManifest after_move = reread(copied);
    CHECK(add_new_problems(after_move, {}, moved / "suite") == 0);
    CHECK(after_move.find("r01_norm")->source == (moved / "regions" / "r01_norm.json").string());
    CHECK(after_move.find("r01_norm")->spec == (moved / "regions" / "r01_norm.json").string());
    CHECK(add_new_problems(after_move, regions_of(moved), moved / "suite") == 0);

    // Both the original's sources and the copy's named to one suite: the stored path wins, and the
    // other folder's programs are new problems.
    fs::path other = dir / "other";
    fs::copy(original, other, fs::copy_options::recursive);
    SuiteManifest both = reread(manifest);
    std::vector<FoundProblem> found = regions_of(original);
    for (auto& p : regions_of(other))
        found.push_back(p);
    CHECK(add_new_problems(both, found, original / "suite") == 2);
    CHECK(both.find("r00_gemm_relu")->source == (original / "regions" / "r00_gemm_relu.py").string());
    REQUIRE(both.find("r00_gemm_relu-2"));
    CHECK(both.find("r00_gemm_relu-2")->source == (other / "regions" / "r00_gemm_relu.py").string());
}

TEST_CASE("a suite manifest without relative sources reads and learns them where it was made", "[cli][suite]")
{
    TempDir dir;
    fs::path folder = dir / "model";
    write_regions(folder);
    SuiteManifest manifest;
    REQUIRE(add_new_problems(manifest, regions_of(folder), folder / "suite") == 2);
    Json older = manifest.to_json();
    for (auto& p : older["problems"])
        p.erase("source_relative");
    SuiteManifest read = SuiteManifest::from_json(older, "suite.json");
    CHECK(read.find("r00_gemm_relu")->source_relative.empty());
    CHECK(add_new_problems(read, regions_of(folder), folder / "suite") == 0);
    CHECK(read.find("r00_gemm_relu")->source_relative == "../regions/r00_gemm_relu.py");
    CHECK(read.find("r01_norm")->source_relative == "../regions/r01_norm.json");
}

TEST_CASE("a suite folder killed mid-run and moved resumes its problem's archive instead of adding it again",
          "[cli][suite][e2e]")
{
    TempDir dir;
    fs::path folder = dir / "work";
    fs::create_directories(folder / "specs");
    fs::copy(source_dir() / "tasks" / "axpy_f32.json", folder / "specs" / "axpy_f32.json");
    fs::copy(source_dir() / "tasks" / "axpy_f32", folder / "specs" / "axpy_f32", fs::copy_options::recursive);
    // Each simulated evaluation takes a few tenths of a second, so the run is still going when its
    // first candidate is seen.
    std::vector<std::string> env{"KFORGE_SIMULATE_GPUS=1", "KFORGE_SIMULATE_GPU_MS=100"};
    auto args = [&](const fs::path& at, int64_t budget) {
        return std::vector<std::string>{"suite", "run", (at / "specs").string(), "-o", (at / "suite").string(),
                                        "--budget", std::to_string(budget), "--no-knowledge", "--progress", "lines"};
    };
    int64_t recorded = 0;
    {
        RunningProgram suite(kforge_binary(), args(folder, 1000), env);
        for (int i = 0; i < 12000 && recorded < 1; ++i) {
            recorded = candidates_so_far(folder / "suite", "axpy_f32").value_or(0);
            if (recorded < 1)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        INFO(suite.stderr_so_far());
        REQUIRE(recorded >= 1);
        ::kill(suite.pid(), SIGKILL);
        suite.wait();
    }
    // Its run dies with it; the folder moves once the run has let go of its archive.
    for (int i = 0; i < 300 && file_lock_is_held(folder / "suite" / "runs" / "axpy_f32.kforge.lock"); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    REQUIRE_FALSE(file_lock_is_held(folder / "suite" / "runs" / "axpy_f32.kforge.lock"));
    recorded = *candidates_so_far(folder / "suite", "axpy_f32");

    fs::path moved = dir / "moved";
    fs::rename(folder, moved);
    CommandResult again = run_kforge(args(moved, recorded + 1), env);
    INFO(again.err);
    REQUIRE(again.exit_code == 0);
    SuiteManifest m = *suite_manifest_now(moved / "suite");
    REQUIRE(m.problems.size() == 1);
    const SuiteProblem& p = m.problems.front();
    CHECK(p.id == "axpy_f32");
    CHECK(p.state == ProblemState::finished);
    CHECK(p.spec == (moved / "specs" / "axpy_f32.json").string());
    REQUIRE(p.sessions.size() == 2);
    CHECK(p.sessions[1].command == "resume");
    CHECK(candidates_so_far(moved / "suite", p.id).value_or(0) > recorded); // continued, nothing lost
}
