// The search's seeding (loop/schedule.cpp): once the reference is recorded, proposals start from
// the seeds, recorded or still being confirmed, never from the naive reference alone, and the
// records stay those of the recorded prefix.
//
// The fake evaluator stands in for two GPUs (two workers); the second seed's confirmation is made
// slow (as on an H200, where a confirmation takes 5-8 s of one GPU against ~1 s for a screen).
#include "kf_catch.hpp"

#include <atomic>
#include <mutex>

#include "search/search_harness.hpp"
#include "test_support.hpp"
#include "util/interrupt.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

using std::chrono::milliseconds;

// What the evaluator started while the task's second seed was being confirmed, as seen when that
// seed is recorded.
struct SeedingWatch {
    std::mutex mutex;
    bool second_seed_confirming = false;
    int proposals_started_meanwhile = 0; // screens of model-written kernels
    int proposals_started_before_record = -1;
};

// A model-written kernel (the scripted model's marker), not one of the task's seeds.
bool model_written(const Task& task, const std::string& source)
{
    for (const auto& seed : task.seeds)
        if (seed.source == source)
            return false;
    return source.find("#define KF_SPEED") != std::string::npos;
}

HarnessOptions two_gpu_run(const Task& task, SeedingWatch& watch, milliseconds slow_confirm)
{
    HarnessOptions options;
    options.config.islands = 2;
    options.config.parallel = 3;
    options.config.window = 8;
    options.config.generation_size = 3;
    options.config.budgets.candidates = 24;
    options.config.seed = 77;
    options.scripted.max_delay = milliseconds(2);
    options.fake.workers = 2;
    const std::string second_seed = task.seeds.at(1).source;
    options.fake.delay_of = [&watch, &task, second_seed, slow_confirm](const EvalJob& job) {
        std::lock_guard lock(watch.mutex);
        if (job.source == second_seed && job.options.confirm) {
            watch.second_seed_confirming = true;
            return slow_confirm;
        }
        if (watch.second_seed_confirming && model_written(task, job.source) && !job.options.confirm)
            ++watch.proposals_started_meanwhile;
        return milliseconds(2);
    };
    options.on_recorded = [&watch, second_seed](const Candidate& candidate) {
        if (candidate.origin != Origin::seed || candidate.source != second_seed)
            return;
        std::lock_guard lock(watch.mutex);
        watch.proposals_started_before_record = watch.proposals_started_meanwhile;
    };
    return options;
}

// The first `n` recorded candidates' origins, in record order.
std::vector<Origin> first_origins(const std::filesystem::path& path, size_t n)
{
    Archive archive = Archive::open(path, OpenMode::read_only);
    std::vector<Origin> origins;
    for (const auto& point : archive.fitness_series())
        if (origins.size() < n)
            origins.push_back(archive.candidate(point.candidate_id)->origin);
    return origins;
}

} // namespace

TEST_CASE("proposals are screened on a free GPU while a later seed is still being confirmed", "[search][seeding]")
{
    clear_interrupt();
    TempDir dir;
    const Task& task = softmax_task();
    REQUIRE(task.seeds.size() == 2);
    SeedingWatch watch;
    HarnessOptions options = two_gpu_run(task, watch, milliseconds(1500));
    run_session(dir / "run.kforge", options);
    CHECK(watch.second_seed_confirming);
    // Before, no proposal was even planned until every seeding item was recorded: the other GPU
    // idled through the whole confirmation.
    CHECK(watch.proposals_started_before_record > 0);
    // Records are still in schedule order: the reference and both seeds first.
    CHECK(first_origins(dir / "run.kforge", 3) == std::vector<Origin>{Origin::reference, Origin::seed, Origin::seed});
    // The first proposals were planned once the reference was recorded, before either seed was: they
    // start from a seed (#2 or #3, recorded as their parent), never from the naive reference (#1),
    // which the grids hold too; nor is the reference an inspiration.
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    auto first_proposal = archive.candidate(4);
    REQUIRE(first_proposal);
    CHECK(first_proposal->origin == Origin::llm);
    REQUIRE(first_proposal->parent_id);
    CHECK((*first_proposal->parent_id == 2 || *first_proposal->parent_id == 3));
    for (int64_t id : first_proposal->inspiration_ids)
        CHECK(id != 1);
    // Its prompt showed that seed's source as the parent, said to be not evaluated yet, and no
    // measurement of it.
    REQUIRE(first_proposal->llm_call_id);
    auto call = archive.llm_call(*first_proposal->llm_call_id);
    REQUIRE(call);
    std::string prompt = call->request.dump();
    auto seed = archive.candidate(*first_proposal->parent_id);
    REQUIRE(seed);
    CHECK(seed->origin == Origin::seed);
    CHECK_THAT(prompt, Catch::Contains(Json(seed->source).dump().substr(1, 200)));
    CHECK_THAT(prompt, Catch::Contains("not evaluated yet"));
    CHECK_THAT(prompt, Catch::Contains("scheduled while its measurement was still under way"));
}

TEST_CASE("a run whose seeds are confirmed slowly on two GPUs records what a run on one GPU without delays "
          "records",
          "[search][seeding]")
{
    clear_interrupt();
    TempDir dir;
    const Task& task = softmax_task();
    SeedingWatch watch;
    HarnessOptions slow = two_gpu_run(task, watch, milliseconds(600));
    run_session(dir / "two.kforge", slow);
    REQUIRE(watch.proposals_started_before_record > 0); // the early start did happen

    HarnessOptions plain = slow;
    plain.fake = FakeSettings{};
    plain.fake.workers = 1;
    plain.on_recorded = nullptr;
    run_session(dir / "one.kforge", plain);

    HarnessOptions jittery = plain;
    jittery.fake.workers = 3;
    jittery.fake.max_delay = milliseconds(8);
    jittery.scripted.max_delay = milliseconds(8);
    run_session(dir / "three.kforge", jittery);

    auto two = run_fingerprint(dir / "two.kforge");
    auto one = run_fingerprint(dir / "one.kforge");
    auto three = run_fingerprint(dir / "three.kforge");
    INFO("two GPUs against one: " << first_difference(one, two));
    CHECK(two == one);
    INFO("three GPUs against one: " << first_difference(one, three));
    CHECK(three == one);
}

TEST_CASE("with a first seed that fails, the proposals made while the second is confirmed start from the seeds, "
          "not the reference",
          "[search][seeding]")
{
    clear_interrupt();
    TempDir dir;
    // The first seed computes something wrong (the fake landscape's marker): the grids then hold
    // only the naive reference, and the first proposals must not start from it alone.
    Task task = softmax_task();
    task.seeds.at(0).source = "/* a seed that fails its tests */\n#define KF_SPEED 200\n#define KF_CELL 3\n"
                              "#define KF_VERDICT " +
                              std::to_string(static_cast<int>(VerdictKind::incorrect)) + "\n" +
                              "extern \"C\" __global__ void softmax(const float* x, float* y, int M, int N) { }\n";
    SeedingWatch watch;
    HarnessOptions options = two_gpu_run(task, watch, milliseconds(600));
    run_session(dir / "run.kforge", options, task);
    CHECK(watch.second_seed_confirming);
    // The GPU that is free screens proposals while the second seed is confirmed.
    CHECK(watch.proposals_started_before_record > 0);
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    auto first_seed = archive.candidate(2);
    REQUIRE(first_seed);
    CHECK(first_seed->evaluation.verdict.kind == VerdictKind::incorrect);
    // The proposals recorded before the second seed holds a cell in the grids (those scheduled
    // before it was recorded: the window's worth after the seeds) start from a seed, each named as
    // the parent; none from the reference.
    std::vector<int64_t> early_parents;
    for (int64_t id = 4; id <= archive.candidate_count(); ++id)
        if (auto c = archive.candidate(id); c && c->origin == Origin::llm && early_parents.size() < 3)
            early_parents.push_back(c->parent_id.value_or(-1));
    REQUIRE(early_parents.size() == 3);
    for (int64_t parent : early_parents)
        CHECK((parent == 2 || parent == 3));
    bool from_second_seed = false;
    for (const auto& point : archive.fitness_series())
        if (auto c = archive.candidate(point.candidate_id); c->origin == Origin::llm && c->parent_id == 3)
            from_second_seed = true;
    CHECK(from_second_seed);
}
