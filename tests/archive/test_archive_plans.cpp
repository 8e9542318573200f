// Plans in the run archive (schema version 3) and technique tries and schedules in the user-level
// knowledge base (its version 2), including reading and upgrading files written before them.
#include "kf_catch.hpp"

#include "archive/archive.hpp"
#include "archive/knowledge_base.hpp"
#include "archive/sample_run.hpp"
#include "archive/sqlite.hpp"
#include "test_support.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

CandidatePlan sample_plan(int64_t candidate_id)
{
    CandidatePlan plan;
    plan.candidate_id = candidate_id;
    plan.menu = "rowwise";
    plan.status = PlanStatus::repaired;
    plan.problem = "removed trailing commas to read the JSON";
    TechniquePlan body;
    body.techniques = {{"vectorize-16b", "vectorise to 16 bytes", true}, {"new:two-rows", "two rows", false}};
    body.expected_speedup = 1.3;
    body.steps = {"float4 loads", "two rows per warp"};
    body.rationale = "dram 61%";
    body.warnings = {"'two rows' is not on the menu: kept as a new technique 'new:two-rows'"};
    plan.plan = body;
    plan.focus = "vectorize-16b";
    plan.techniques = {{body.techniques[0], Applied::applied}, {body.techniques[1], Applied::unchecked}};
    plan.predicted_speedup = 1.3;
    plan.measured_speedup = 1.25;
    plan.followed = true;
    return plan;
}

TechniqueTry one_try(const std::string& technique, int64_t candidate, bool improved, std::string category = "memory")
{
    return {technique, "softmax_f32", std::move(category), candidate, true, improved, improved ? 1.2 : 0.9, 1.1};
}

// A knowledge base file as kforge wrote it before technique tries (version 1: lessons only).
void write_version_1(const std::filesystem::path& path)
{
    Database db(path.string(), DbAccess::read_write_create);
    db.execute("PRAGMA application_id = 1801874274"); // "kfkb"
    db.execute("CREATE TABLE kb_version (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL, kforge_version TEXT "
               "NOT NULL); CREATE TABLE lesson (id INTEGER PRIMARY KEY, task_name TEXT NOT NULL, category TEXT NOT "
               "NULL, tags TEXT NOT NULL, text TEXT NOT NULL, evidence TEXT NOT NULL, run_id TEXT NOT NULL, "
               "candidate_id INTEGER, created_at REAL NOT NULL, UNIQUE (task_name, text)); INSERT INTO kb_version "
               "VALUES (1, 0, '0.1.0'); INSERT INTO lesson VALUES (1, 'softmax_f32', 'memory', '[]', 'float4 helps', "
               "'{}', 'old-run', NULL, 0)");
}

} // namespace

TEST_CASE("a candidate's plan and claimed techniques are stored and read back whole", "[archive][plan]")
{
    TempDir dir;
    SampleIds ids = build_sample_archive(dir / "run.kforge");
    {
        Archive archive = Archive::open(dir / "run.kforge", OpenMode::write);
        archive.insert_candidate_plan(sample_plan(ids.best));
        CandidatePlan failed;
        failed.candidate_id = ids.improved;
        failed.menu = "rowwise";
        failed.status = PlanStatus::failed;
        failed.problem = "the reply holds no JSON object";
        failed.call_ids = {ids.calls[0], ids.calls[1]};
        archive.insert_candidate_plan(failed);
    }
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    auto plan = archive.candidate_plan(ids.best);
    REQUIRE(plan);
    CandidatePlan expected = sample_plan(ids.best);
    CHECK(plan->menu == "rowwise");
    CHECK(plan->status == PlanStatus::repaired);
    CHECK(plan->problem == expected.problem);
    CHECK(plan->plan == expected.plan);
    CHECK(plan->focus == "vectorize-16b");
    REQUIRE(plan->techniques.size() == 2);
    CHECK(plan->techniques[1].choice == TechniqueChoice{"new:two-rows", "two rows", false});
    CHECK(plan->techniques[1].applied == Applied::unchecked);
    CHECK(plan->predicted_speedup == Approx(1.3));
    CHECK(plan->measured_speedup == Approx(1.25));
    CHECK(plan->followed == true);
    CHECK_FALSE(archive.candidate_plan(ids.seed)); // proposed in one phase
    auto all = archive.candidate_plans();
    REQUIRE(all.size() == 2);
    CHECK(all[0].candidate_id == ids.improved); // candidate id order
    CHECK_FALSE(all[0].plan);
    CHECK(all[0].call_ids == std::vector<int64_t>{ids.calls[0], ids.calls[1]});
    CHECK_FALSE(all[0].followed);
}

TEST_CASE("an archive written before plans reads without them and gains the tables when resumed", "[archive][plan]")
{
    TempDir dir;
    auto path = dir / "old.kforge";
    std::vector<Migration> before(schema_migrations().begin(), schema_migrations().begin() + 2);
    {
        Archive old = Archive::create(path, softmax_run_info(), before);
        CHECK(old.schema_version() == 2);
    }
    {
        Archive reader = Archive::open(path, OpenMode::read_only);
        CHECK(reader.schema_version() == 2);
        CHECK(reader.candidate_plans().empty());
        CHECK_FALSE(reader.candidate_plan(1));
    }
    Archive writer = Archive::open(path, OpenMode::write);
    CHECK(writer.schema_version() == k_schema_plan_tables);
    Candidate candidate;
    candidate.source = "extern \"C\" __global__ void k() {}";
    candidate.source_hash = "h";
    int64_t id = writer.insert_candidate(candidate);
    writer.insert_candidate_plan(sample_plan(id));
    CHECK(writer.candidate_plans().size() == 1);
}

TEST_CASE("the knowledge base keeps each technique try once and sums them per category, leaving a run out",
          "[archive][plan]")
{
    TempDir dir;
    KnowledgeBase knowledge = KnowledgeBase::open(dir / "kb.sqlite", KnowledgeAccess::read_write);
    CHECK(knowledge.add_technique_tries({one_try("vectorize-16b", 3, true), one_try("cache-hints", 3, false),
                                         one_try("vectorize-16b", 5, false)},
                                        "run-a") == 3);
    CHECK(knowledge.add_technique_tries({one_try("vectorize-16b", 3, true), one_try("vectorize-16b", 9, true)},
                                        "run-a") == 1); // candidate 3's try is held already
    CHECK(knowledge.add_technique_tries({one_try("vectorize-16b", 3, true), one_try("tile-shape-sweep", 4, true, "compute")},
                                        "run-b") == 2);
    CHECK(knowledge.technique_tries().size() == 6);
    auto memory = knowledge.technique_tallies("memory");
    CHECK(memory.size() == 2);
    CHECK(memory["vectorize-16b"].tried == 4);
    CHECK(memory["vectorize-16b"].improved == 3);
    CHECK(memory["vectorize-16b"].mean_gain() == Approx(std::pow(1.2 * 1.2 * 1.2 * 0.9, 0.25)));
    CHECK(memory["vectorize-16b"].mean_predicted() == Approx(1.1));
    auto without_a = knowledge.technique_tallies("memory", "run-a");
    CHECK(without_a.size() == 1);
    CHECK(without_a["vectorize-16b"].tried == 1);
    CHECK(knowledge.technique_tallies("compute")["tile-shape-sweep"].tried == 1);
}

TEST_CASE("schedules are kept per run, the best first and one per task", "[archive][plan]")
{
    TempDir dir;
    KnowledgeBase knowledge = KnowledgeBase::open(dir / "kb.sqlite", KnowledgeAccess::read_write);
    auto schedule = [](std::string run, std::string task, double speedup) {
        Schedule s;
        s.run_id = std::move(run);
        s.task_name = std::move(task);
        s.category = "memory";
        s.speedup = speedup;
        s.steps = {{1, "seed", {}, "seed a.cu", std::nullopt}, {4, "llm", {"vectorize-16b"}, "float4", speedup}};
        return s;
    };
    knowledge.put_schedule(schedule("r1", "softmax_f32", 1.4));
    knowledge.put_schedule(schedule("r2", "softmax_f32", 1.9));
    knowledge.put_schedule(schedule("r3", "axpy_f32", 1.2));
    knowledge.put_schedule(schedule("r3", "axpy_f32", 1.3)); // r3's best improved: replaced
    auto all = knowledge.schedules("memory", "", 5);
    REQUIRE(all.size() == 2);
    CHECK(all[0].run_id == "r2");
    CHECK(all[1].run_id == "r3");
    CHECK(all[1].speedup == Approx(1.3));
    CHECK(all[0].describe() == "seed a.cu -> vectorize-16b 1.90x");
    CHECK(knowledge.schedules("memory", "r2", 5)[0].run_id == "r1");
    CHECK(knowledge.schedules("compute", "", 5).empty());
    CHECK(knowledge.schedules("memory", "", 1).size() == 1);
}

TEST_CASE("a knowledge base from before technique tries keeps its lessons and is upgraded when opened to write",
          "[archive][plan]")
{
    TempDir dir;
    auto path = dir / "kb.sqlite";
    write_version_1(path);
    {
        KnowledgeBase reader = KnowledgeBase::open(path, KnowledgeAccess::read_only);
        CHECK(reader.count() == 1);
        CHECK(reader.technique_tallies("memory").empty());
        CHECK(reader.schedules("memory", "", 3).empty());
    }
    KnowledgeBase writer = KnowledgeBase::open(path, KnowledgeAccess::read_write);
    CHECK(writer.count() == 1);
    CHECK(writer.add_technique_tries({one_try("cache-hints", 2, true)}, "new-run") == 1);
    Database db(path.string(), DbAccess::read_only);
    CHECK(db.query_int("SELECT max(version) FROM kb_version") == 2);
    CHECK(KnowledgeBase::open(path, KnowledgeAccess::read_only).technique_tallies("memory").size() == 1);
}
