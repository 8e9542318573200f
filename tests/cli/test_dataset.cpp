// `kforge dataset`, end to end: the real binary writes kforge.dataset/1 records whose counts agree
// with `kforge inspect --json`, carries the model call behind each candidate, keeps what the
// filters name, and refuses bad archives without leaving a partial file.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "archive/sqlite.hpp"
#include "core/source.hpp"
#include "report/test_report_archive.hpp"
#include "test_support.hpp"
#include "util/json_reader.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

namespace fs = std::filesystem;

std::vector<Json> parse_records(const std::string& text)
{
    std::vector<Json> records;
    int line_number = 0;
    for (const auto& line : split(text, '\n')) {
        ++line_number;
        if (!line.empty())
            records.push_back(parse_json_text(line, fmt::format("dataset line {}", line_number)));
    }
    return records;
}

// Runs `kforge dataset ARGS... -o -` and returns the records it printed.
std::vector<Json> dataset(std::vector<std::string> args)
{
    args.insert(args.begin(), "dataset");
    args.insert(args.end(), {"-o", "-"});
    auto result = run_kforge(args);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return parse_records(result.out);
}

Json inspect_json(const fs::path& archive)
{
    auto result = run_kforge({"inspect", archive.string(), "--json"});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return parse_json_text(result.out, "inspect --json output");
}

std::set<int64_t> candidate_ids(const std::vector<Json>& records)
{
    std::set<int64_t> ids;
    for (const auto& record : records)
        if (record["kind"] == "candidate")
            ids.insert(record["candidate_id"].get<int64_t>());
    return ids;
}

const Json& record_of(const std::vector<Json>& records, int64_t id)
{
    for (const auto& record : records)
        if (record["kind"] == "candidate" && record["candidate_id"] == id)
            return record;
    FAIL("no record of candidate " << id);
    throw std::logic_error("unreachable");
}

// The dataset of `archive` against inspect's report of it: a record per candidate, per verdict as
// many as inspect counts, and every model call once (inside its candidate's record or alone).
void check_counts_match_inspect(const fs::path& archive)
{
    INFO("archive " << archive.string());
    Json report = inspect_json(archive);
    std::vector<Json> records = dataset({archive.string()});
    int64_t candidates = 0;
    int64_t model_calls = 0;
    std::map<std::string, int64_t> verdicts;
    for (const auto& record : records) {
        CHECK(record["schema"] == "kforge.dataset/1");
        CHECK(record["archive"] == archive.filename().string());
        CHECK(record["run_id"] == report["run"]["run_id"]);
        CHECK(record["task_hash"] == report["run"]["task_hash"]);
        if (record["kind"] == "candidate") {
            ++candidates;
            ++verdicts[record["verdict"].get<std::string>()];
            CHECK_FALSE(record["source"].get<std::string>().empty());
        } else {
            CHECK(record["kind"] == "call");
            CHECK(record["candidate_id"].is_null());
        }
        model_calls += record["call"].is_null() ? 0 : 1;
    }
    CHECK(candidates == report["budget"]["candidates"].get<int64_t>());
    CHECK(model_calls == report["budget"]["llm"]["calls"].get<int64_t>());
    for (const auto& [name, count] : report["verdicts"].items())
        CHECK(verdicts[name] == count.get<int64_t>());
    CHECK(dataset({archive.string(), "--only", "correct"}).size() ==
          report["verdicts"]["correct"].get<size_t>());
}

LlmCallRecord model_call(const std::string& provider, const std::string& status, double cost)
{
    LlmCallRecord call;
    call.provider = provider;
    call.model = provider == "anthropic" ? "claude-sonnet-4-5" : "gpt-5";
    call.status = status;
    call.error = status == "ok" ? "" : "HTTP 500: internal server error";
    call.input_tokens = 9000;
    call.cached_input_tokens = 4000;
    call.output_tokens = 2100;
    call.cost_usd = cost;
    call.latency_s = 18.25;
    call.retries = 1;
    call.started_at = 1763762900.5;
    // The Anthropic wire form: the system prompt beside the messages.
    call.request = {
        {"model", call.model},
        {"max_tokens", 16000},
        {"system", "You write CUDA kernels."},
        {"messages", Json::array({{{"role", "user"}, {"content", "make softmax faster"}}})}};
    call.reply =
        status == "ok" ? "Here it is:\n```cuda\n" + softmax_candidate_source() + "```" : "";
    return call;
}

Candidate family_member(int index, std::optional<int64_t> parent, Origin origin,
                        std::optional<double> fitness)
{
    Candidate c;
    c.source = softmax_candidate_source() + fmt::format("#define FAMILY_MEMBER {}\n", index);
    c.source_hash = normalized_source_hash(c.source);
    c.parent_id = parent;
    c.origin = origin;
    c.generation = index;
    c.note = fmt::format("member {}", index);
    if (fitness) {
        c.evaluation.verdict = {VerdictKind::correct, ""};
        c.evaluation.fitness = *fitness;
        c.evaluation.best_params = {{"BLOCK", 256}};
        c.evaluation.measurements = bench_measurements("candidate", *fitness);
        c.evaluation.metrics = {
            {"baseline",
             {{"subject", "cudnn_softmax"}, {"library", "cuDNN"}, {"speedup", *fitness / 1.6}}}};
    } else {
        c.evaluation.verdict = {VerdictKind::compile_error,
                                "kernel.cu(3): error: expected a \";\""};
    }
    return c;
}

// What build_family() stored.
struct Family
{
    std::map<char, int64_t> id; // members by letter, in the order stored
    int64_t call_of_a = 0;
    int64_t meta_call = 0;   // a meta-prompt call: no candidate
    int64_t failed_call = 0; // a failed proposal call that left no candidate
};

// A small run with a known answer for each filter (fitness in brackets):
//   S seed [1.0] -> A llm [2.0] -> B llm [1.5] -> C tune [1.8] -> G llm [2.4]
//   A -> D llm (compile error) -> F repair [1.9];   S -> E builtin [1.0]
// correct: S A B C E F G; improving: S (first best), A (new best), C (beats B), G (new best).
// Not improving: B (slower than A), E (only equals S), F (parent has no fitness, below best 2.0).
Family build_family(const fs::path& path)
{
    Archive archive = Archive::create(path, softmax_run_info());
    archive.insert_baselines(bench_measurements("reference", 1.0));
    archive.insert_baselines(bench_measurements("cudnn_softmax", 1.6));
    Family family;
    auto add = [&](char letter, std::optional<char> parent, Origin origin,
                   std::optional<double> fitness, std::optional<int64_t> call) {
        Candidate c = family_member(static_cast<int>(family.id.size()),
                                    parent ? std::optional(family.id.at(*parent)) : std::nullopt,
                                    origin, fitness);
        c.llm_call_id = call;
        family.id[letter] = archive.insert_candidate(c);
    };
    add('S', std::nullopt, Origin::seed, 1.0, std::nullopt);
    family.call_of_a = archive.insert_llm_call(model_call("anthropic", "ok", 0.0455));
    add('A', 'S', Origin::llm, 2.0, family.call_of_a);
    LlmCallRecord unpriced = model_call("openai", "ok", 0);
    unpriced.cost_known = false;
    add('B', 'A', Origin::llm, 1.5, archive.insert_llm_call(unpriced));
    add('C', 'B', Origin::tune, 1.8, std::nullopt);
    add('D', 'A', Origin::llm, std::nullopt,
        archive.insert_llm_call(model_call("openai", "ok", 0.02)));
    LlmCallRecord builtin;
    builtin.provider = "builtin";
    builtin.model = "builtin";
    builtin.request = {{"base", "the parent"}, {"variation", "BLOCK [128, 256, 512] -> [64]"}};
    builtin.reply = "builtin: BLOCK [128, 256, 512] -> [64] (from the parent)";
    add('E', 'S', Origin::builtin, 1.0, archive.insert_llm_call(builtin));
    add('F', 'D', Origin::repair, 1.9, archive.insert_llm_call(model_call("openai", "ok", 0.02)));
    add('G', 'C', Origin::llm, 2.4, archive.insert_llm_call(model_call("openai", "ok", 0.02)));
    LlmCallRecord meta = model_call("openai", "ok", 0.01);
    meta.purpose = CallPurpose::meta_prompt;
    family.meta_call = archive.insert_llm_call(meta);
    family.failed_call = archive.insert_llm_call(model_call("openai", "http_error", 0));
    archive.insert_llm_call(builtin); // a builtin draw that left no candidate: not a model call
    archive.set_run_state("finished");
    return family;
}

std::set<int64_t> ids_of(const Family& family, const std::string& letters)
{
    std::set<int64_t> ids;
    for (char letter : letters)
        ids.insert(family.id.at(letter));
    return ids;
}

} // namespace

TEST_CASE("dataset writes a record per candidate with the model call behind it, and one per model "
          "call without a candidate",
          "[e2e][dataset]")
{
    TempDir dir;
    Family family = build_family(dir / "family.kforge");
    std::vector<Json> records = dataset({(dir / "family.kforge").string()});
    REQUIRE(records.size() == 8 + 2);
    CHECK(candidate_ids(records) == ids_of(family, "SABCDEFG"));

    const Json& a = record_of(records, family.id['A']);
    CHECK(a["task"] == "softmax_f32");
    CHECK(a["task_hash"] == softmax_run_info().task_hash);
    CHECK(a["device"] == "NVIDIA H100 80GB HBM3");
    CHECK(a["parent_id"] == family.id['S']);
    CHECK(a["origin"] == "llm");
    CHECK(a["proposed_by"] == "model");
    CHECK(a["verdict"] == "correct");
    CHECK(a["fitness"].get<double>() == Approx(2.0));
    CHECK(a["params"] == Json{{"BLOCK", 256}});
    CHECK(a["source"].get<std::string>().find("#define FAMILY_MEMBER 1") != std::string::npos);
    CHECK(a["speedup"]["reference"].get<double>() == Approx(2.0));
    CHECK(a["speedup"]["vendor"].get<double>() == Approx(2.0 / 1.6));
    CHECK(a["speedup"]["vendor_subject"] == "cudnn_softmax");
    const Json& call = a["call"];
    CHECK(call["call_id"] == family.call_of_a);
    CHECK(call["provider"] == "anthropic");
    CHECK(call["model"] == "claude-sonnet-4-5");
    CHECK(call["purpose"] == "propose");
    CHECK(call["messages"] ==
          Json::array({{{"role", "system"}, {"content", "You write CUDA kernels."}},
                       {{"role", "user"}, {"content", "make softmax faster"}}}));
    CHECK(call["request_params"] == Json{{"model", "claude-sonnet-4-5"}, {"max_tokens", 16000}});
    CHECK(call["reply"].get<std::string>().find("```cuda\n") != std::string::npos);
    CHECK(call["input_tokens"] == 9000);
    CHECK(call["cached_input_tokens"] == 4000);
    CHECK(call["output_tokens"] == 2100);
    CHECK(call["cost_usd"].get<double>() == Approx(0.0455));
    CHECK(call["latency_s"].get<double>() == Approx(18.25));
    CHECK(call["retries"] == 1);
    CHECK(a["builtin"].is_null());

    // Per bench shape: the candidate's median beside the reference and the vendor library.
    REQUIRE(a["times"].size() == bench_labels().size());
    for (size_t i = 0; i < bench_labels().size(); ++i) {
        const Json& time = a["times"][i];
        CHECK(time["set"] == "bench");
        CHECK(time["shape"] == bench_labels()[i]);
        CHECK(time["candidate_ns"].get<double>() == Approx(reference_bench_ns()[i] / 2.0));
        CHECK(time["baselines_ns"]["reference"].get<double>() == Approx(reference_bench_ns()[i]));
        CHECK(time["baselines_ns"]["cudnn_softmax"].get<double>() ==
              Approx(reference_bench_ns()[i] / 1.6));
        CHECK(time["speedup"]["reference"].get<double>() == Approx(2.0));
        CHECK(time["confirmed"] == false);
    }

    // Candidates without a model call say who wrote them instead.
    CHECK(record_of(records, family.id['B'])["call"]["cost_usd"].is_null()); // no known price
    const Json& seed = record_of(records, family.id['S']);
    CHECK(seed["proposed_by"] == "task");
    CHECK(seed["call"].is_null());
    CHECK(seed["parent_id"].is_null());
    CHECK(record_of(records, family.id['C'])["proposed_by"] == "search");
    const Json& builtin = record_of(records, family.id['E']);
    CHECK(builtin["proposed_by"] == "builtin");
    CHECK(builtin["call"].is_null());
    CHECK(builtin["builtin"]["variation"] == "BLOCK [128, 256, 512] -> [64]");
    const Json& broken = record_of(records, family.id['D']);
    CHECK(broken["verdict"] == "compile_error");
    CHECK(broken["verdict_message"] == "kernel.cu(3): error: expected a \";\"");
    CHECK(broken["fitness"].is_null());
    CHECK(broken["times"].empty());
    CHECK(broken["speedup"]["vendor"].is_null());

    // The calls no candidate names come last, in the order stored; the builtin draw is not among
    // them.
    std::vector<Json> calls(records.end() - 2, records.end());
    CHECK(calls[0]["kind"] == "call");
    CHECK(calls[0]["call"]["call_id"] == family.meta_call);
    CHECK(calls[0]["call"]["purpose"] == "meta_prompt");
    CHECK(calls[1]["call"]["call_id"] == family.failed_call);
    CHECK(calls[1]["call"]["status"] == "http_error");
    CHECK(calls[1]["call"]["error"] == "HTTP 500: internal server error");

    // The same counts as inspect.
    check_counts_match_inspect(dir / "family.kforge");
}

TEST_CASE("dataset --only correct and --only improving keep exactly the candidates they name",
          "[e2e][dataset]")
{
    TempDir dir;
    auto path = (dir / "family.kforge").string();
    Family family = build_family(path);

    std::vector<Json> correct = dataset({path, "--only", "correct"});
    CHECK(candidate_ids(correct) == ids_of(family, "SABCEFG"));
    CHECK(correct.size() == 7); // no call records under a filter

    std::vector<Json> improving = dataset({path, "--only", "improving"});
    CHECK(candidate_ids(improving) == ids_of(family, "SACG"));
    for (const auto& record : improving)
        CHECK(record["improvement"]["improving"] == true);

    std::vector<Json> all = dataset({path});
    const Json& c = record_of(all, family.id['C']);
    CHECK(c["improvement"]["parent_fitness"].get<double>() == Approx(1.5));
    CHECK(c["improvement"]["vs_parent"].get<double>() == Approx(1.8 / 1.5));
    CHECK(c["improvement"]["best_before"].get<double>() == Approx(2.0));
    CHECK(c["improvement"]["new_best"] == false);
    const Json& g = record_of(all, family.id['G']);
    CHECK(g["improvement"]["new_best"] == true);
    const Json& f = record_of(all, family.id['F']);
    CHECK(f["improvement"]["parent_fitness"].is_null());
    CHECK(f["improvement"]["improving"] == false);
    CHECK(record_of(all, family.id['E'])["improvement"]["improving"] == false);
    CHECK(record_of(all, family.id['S'])["improvement"]["best_before"].is_null());

    auto bad = run_kforge({"dataset", path, "--only", "faster", "-o", "-"});
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--only"));
}

TEST_CASE("dataset --only improving agrees with a walk of a synthetic search through the archive "
          "API",
          "[e2e][dataset]")
{
    TempDir dir;
    auto path = dir / "synthetic.kforge";
    build_synthetic_run(path, {300, 4, Spending::llm, 11});
    // The definition, walked independently: correct with a fitness, and faster than the parent or
    // than every candidate stored before it.
    std::set<int64_t> expected;
    {
        Archive archive = Archive::open(path, OpenMode::read_only);
        std::map<int64_t, double> fitness;
        double best = 0;
        for (int64_t id = 1; id <= archive.candidate_count(); ++id) {
            Candidate c = *archive.candidate(id);
            const auto& f = c.evaluation.fitness;
            if (!f || !c.evaluation.verdict.is_correct())
                continue;
            bool beats_parent =
                c.parent_id && fitness.count(*c.parent_id) > 0 && *f > fitness.at(*c.parent_id);
            if (fitness.empty() || *f > best || beats_parent)
                expected.insert(id);
            best = std::max(best, *f);
            fitness[id] = *f;
        }
    }
    std::vector<Json> improving = dataset({path.string(), "--only", "improving"});
    CHECK(candidate_ids(improving) == expected);
    CHECK(expected.size() > 3);
    CHECK(expected.size() < dataset({path.string(), "--only", "correct"}).size());
    check_counts_match_inspect(path);
}

TEST_CASE("dataset record counts match inspect on the sample run and several archives at once",
          "[e2e][dataset]")
{
    TempDir dir;
    build_sample_archive(dir / "sample.kforge");
    check_counts_match_inspect(dir / "sample.kforge");
    build_family(dir / "family.kforge");
    std::vector<Json> both =
        dataset({(dir / "sample.kforge").string(), (dir / "family.kforge").string()});
    std::map<std::string, size_t> per_archive;
    for (const auto& record : both)
        ++per_archive[record["archive"].get<std::string>()];
    CHECK(per_archive["sample.kforge"] == 7 + 1); // 7 candidates, the failed call alone
    CHECK(per_archive["family.kforge"] == 8 + 2);
    CHECK(both.front()["archive"] == "sample.kforge"); // archives in the order given
}

TEST_CASE("dataset record counts match inspect on every archive recorded on a GPU",
          "[e2e][dataset][recorded]")
{
    for (const auto& recorded : recorded_archives()) {
        TempDir dir;
        fs::copy_file(recorded, dir / recorded.filename()); // a fixture stays untouched
        check_counts_match_inspect(dir / recorded.filename());
        // A builtin run's candidates say so, with the variation the builtin proposer drew.
        for (const auto& record : dataset({(dir / recorded.filename()).string()}))
            if (record.value("origin", "") == "builtin") {
                CHECK(record["proposed_by"] == "builtin");
                CHECK(record["call"].is_null());
                CHECK(record["builtin"].contains("variation"));
            }
    }
}

TEST_CASE("dataset writes FILE only when every archive was read, and replaces it only with --force",
          "[e2e][dataset]")
{
    TempDir dir;
    auto archive = (dir / "run.kforge").string();
    build_sample_archive(archive);
    auto out = (dir / "out.jsonl").string();

    auto written = run_kforge({"dataset", archive, "-o", out});
    INFO(written.err);
    REQUIRE(written.exit_code == 0);
    CHECK(written.out.empty());
    CHECK_THAT(written.err, Catch::Contains("wrote 8 records to " + out));
    CHECK(parse_records(slurp_file(out)).size() == 8);

    auto again = run_kforge({"dataset", archive, "-o", out});
    CHECK(again.exit_code == 2);
    CHECK_THAT(again.err, Catch::Contains(out + " exists; pass --force to replace it"));
    auto forced = run_kforge({"dataset", archive, "--only", "correct", "-o", out, "--force"});
    CHECK(forced.exit_code == 0);
    CHECK(parse_records(slurp_file(out)).size() == 3);

    auto onto_archive = run_kforge({"dataset", archive, "-o", archive, "--force"});
    CHECK(onto_archive.exit_code == 2);
    CHECK_THAT(onto_archive.err, Catch::Contains("names one of the archives"));
    CHECK(Archive::open(archive, OpenMode::read_only).candidate_count() == 7);
}

TEST_CASE("dataset refuses a file that is not an archive and a damaged archive, leaving no output",
          "[e2e][dataset]")
{
    TempDir dir;
    auto good = (dir / "good.kforge").string();
    build_sample_archive(good);
    auto out = (dir / "out.jsonl").string();

    write_text(dir / "notes.txt", "SQLite format 3 is what this pretends to be, but it is not");
    auto garbage = run_kforge({"dataset", good, (dir / "notes.txt").string(), "-o", out});
    CHECK(garbage.exit_code == 3);
    CHECK_THAT(garbage.err, Catch::Contains("notes.txt: not a kforge archive"));
    CHECK_FALSE(fs::exists(out)); // checked before the good archive was written

    auto missing = run_kforge({"dataset", (dir / "nope.kforge").string(), "-o", out});
    CHECK(missing.exit_code == 3);
    CHECK_THAT(missing.err, Catch::Contains("nope.kforge: no such archive"));

    // A page in the middle of the candidate table overwritten: the archive opens, and the damage is
    // found while the candidates stream, after records were already written to the temporary file.
    auto damaged = dir / "damaged.kforge";
    {
        Database db(good, DbAccess::read_write); // everything into the main file, which is copied
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)");
    }
    std::string bytes = slurp_file(good);
    size_t page_size =
        (static_cast<unsigned char>(bytes[16]) << 8) | static_cast<unsigned char>(bytes[17]);
    size_t row = bytes.find("#define VARIANT_FAULT 1");
    REQUIRE(row != std::string::npos);
    size_t page = row / page_size * page_size;
    REQUIRE(page > 0);
    std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(page),
              bytes.begin() + static_cast<std::ptrdiff_t>(page + 64), '\xff');
    write_text(damaged, bytes);
    write_text(out, "an earlier dataset\n");
    auto broken = run_kforge({"dataset", good, damaged.string(), "-o", out, "--force"});
    CHECK(broken.exit_code == 3);
    CHECK_THAT(broken.err, Catch::Contains("damaged.kforge") && Catch::Contains("malformed") &&
                               Catch::Contains(out + " was not written"));
    CHECK(slurp_file(out) == "an earlier dataset\n"); // untouched
    for (const auto& entry : fs::directory_iterator(dir.path()))
        CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);
}

} // namespace kforge::test
