// The measurement memo with a stand-in for the GPU worker: which asks it answers from earlier runs,
// which phases it still sends to the worker, what it marks as reused, and that two threads asking
// for one point measure it once.
#include "kf_catch.hpp"

#include <atomic>
#include <thread>

#include "evaluator/measurement_memo.hpp"

using namespace kforge;

namespace {

constexpr auto none = TimingStandard::none;
constexpr auto sweep = TimingStandard::sweep;
constexpr auto quick = TimingStandard::quick;
constexpr auto confirm = TimingStandard::confirm;

// A worker stand-in: records what it was asked and answers with `verdict`, one measurement per
// timed run whose median tells the runs apart, and notes and a profile for the phases it ran.
struct FakeWorker {
    VerdictKind verdict = VerdictKind::correct;
    bool pipeline_failure = false;
    std::vector<VariantAsk> asks;

    VariantResult operator()(const VariantAsk& ask)
    {
        asks.push_back(ask);
        VariantResult r;
        r.verdict = Verdict{verdict, verdict == VerdictKind::correct ? "" : "wrong"};
        r.from_worker = !pipeline_failure;
        r.gpu_seconds = 0.5;
        r.resources = Json{{"k", {{"registers", 32}}}};
        if (ask.timing != none) {
            Measurement m;
            m.shape_set = "bench";
            m.shape_label = "n=1";
            m.subject = "candidate";
            m.median_ns = 1000.0 + static_cast<double>(asks.size());
            m.confirmed = ask.timing == confirm;
            r.measurements.push_back(m);
        }
        if (ask.verify_tests)
            r.notes["verification_runs"] = 15;
        if (ask.held_out)
            r.notes["held_out_runs"] = 3;
        if (ask.profile)
            r.profile = Json{{"dram_throughput_pct", 80}};
        return r;
    }
};

VariantResult ask_memo(MeasurementMemo& memo, FakeWorker& worker, const VariantAsk& ask, uint64_t ticket,
                       const std::string& key = "point-a")
{
    return memo.run(key, ask, Json{{"ticket", ticket}}, [&](const VariantAsk& left) { return worker(left); });
}

bool same_ask(const VariantAsk& a, const VariantAsk& b)
{
    return a.verify_tests == b.verify_tests && a.timing == b.timing && a.held_out == b.held_out && a.profile == b.profile;
}

} // namespace

TEST_CASE("a point measured once is not measured again for an ask it covers", "[evaluator][memo]")
{
    MeasurementMemo memo;
    FakeWorker worker;
    VariantResult first = ask_memo(memo, worker, {true, sweep, false, false}, 3);
    CHECK(first.reused.is_null());
    CHECK(first.gpu_seconds == 0.5);
    VariantResult again = ask_memo(memo, worker, {true, sweep, false, false}, 7);
    CHECK(worker.asks.size() == 1);
    CHECK(again.gpu_seconds == 0);
    CHECK(again.verdict.is_correct());
    REQUIRE(again.measurements.size() == 1);
    CHECK(again.measurements[0].median_ns == first.measurements[0].median_ns);
    CHECK(again.reused["phases"] == Json::array({"tests", "timing"}));
    CHECK(again.reused["from"][0]["ticket"] == 3);
    CHECK(again.notes.value("verification_runs", 0) == 15);
    CHECK(again.resources == first.resources);
    // Another point is another matter.
    ask_memo(memo, worker, {true, sweep, false, false}, 8, "point-b");
    CHECK(worker.asks.size() == 2);
    CHECK(memo.stats().reused_whole == 1);
}

TEST_CASE("a quick result never stands in for a confirmation; verified tests do stand in", "[evaluator][memo]")
{
    MeasurementMemo memo;
    FakeWorker worker;
    ask_memo(memo, worker, {true, quick, false, false}, 1);
    VariantResult confirmed = ask_memo(memo, worker, {true, confirm, false, true}, 2);
    REQUIRE(worker.asks.size() == 2);
    CHECK(same_ask(worker.asks[1], {false, confirm, false, true})); // the tests were verified already
    CHECK(confirmed.gpu_seconds == 0.5);
    CHECK(confirmed.reused["phases"] == Json::array({"tests"}));
    CHECK(confirmed.measurements.at(0).confirmed);
    CHECK(confirmed.profile.contains("dram_throughput_pct"));
    // A confirmation stands in for the quick screen and the sweep that come after it.
    VariantResult screen = ask_memo(memo, worker, {true, quick, false, false}, 3);
    VariantResult swept = ask_memo(memo, worker, {true, sweep, false, false}, 4);
    CHECK(worker.asks.size() == 2);
    CHECK(screen.measurements.at(0).confirmed);
    CHECK(swept.measurements.at(0).median_ns == confirmed.measurements.at(0).median_ns);
}

TEST_CASE("without the held-out check on record, only that check runs", "[evaluator][memo]")
{
    MeasurementMemo memo;
    FakeWorker worker;
    VariantResult confirmed = ask_memo(memo, worker, {true, confirm, false, true}, 1);
    VariantResult checked = ask_memo(memo, worker, {true, quick, true, false}, 2);
    REQUIRE(worker.asks.size() == 2);
    CHECK(same_ask(worker.asks[1], {false, none, true, false}));
    CHECK(checked.verdict.is_correct());
    CHECK(checked.measurements.at(0).median_ns == confirmed.measurements.at(0).median_ns);
    CHECK(checked.reused["phases"] == Json::array({"tests", "timing"}));
    CHECK(checked.notes.value("held_out_runs", 0) == 3);
    CHECK(checked.profile.empty()); // not asked for
    // Now the held-out check is on record too.
    ask_memo(memo, worker, {true, confirm, true, true}, 3);
    CHECK(worker.asks.size() == 2);
}

TEST_CASE("a failure stands in for asks that run every phase it ran, and no others", "[evaluator][memo]")
{
    MeasurementMemo memo;
    FakeWorker worker;
    worker.verdict = VerdictKind::incorrect;
    VariantResult failed = ask_memo(memo, worker, {true, sweep, false, false}, 1);
    VariantResult stricter = ask_memo(memo, worker, {true, quick, true, false}, 2);
    CHECK(worker.asks.size() == 1);
    CHECK(stricter.verdict.kind == VerdictKind::incorrect);
    CHECK(stricter.reused["phases"] == Json::array({"failure"}));
    CHECK(stricter.gpu_seconds == 0);
    // An ask that skips the tests might pass where the failing run did not get to: measured.
    ask_memo(memo, worker, {false, quick, false, false}, 3);
    CHECK(worker.asks.size() == 2);

    MeasurementMemo held_out_memo;
    FakeWorker held_out_worker;
    held_out_worker.verdict = VerdictKind::held_out_failed;
    ask_memo(held_out_memo, held_out_worker, {true, quick, true, false}, 1);
    ask_memo(held_out_memo, held_out_worker, {true, sweep, false, false}, 2); // no held-out check asked
    CHECK(held_out_worker.asks.size() == 2);
    CHECK(failure_stands_in({true, quick, true, false}, {true, confirm, true, true}));
    CHECK(!failure_stands_in({true, quick, true, false}, {true, confirm, false, true}));
}

TEST_CASE("failures of the pipeline itself are never reused", "[evaluator][memo]")
{
    MeasurementMemo memo;
    FakeWorker worker;
    worker.verdict = VerdictKind::runtime_error;
    worker.pipeline_failure = true; // e.g. the worker crashed: says nothing about the kernel
    ask_memo(memo, worker, {true, sweep, false, false}, 1);
    ask_memo(memo, worker, {true, sweep, false, false}, 2);
    CHECK(worker.asks.size() == 2);
}

TEST_CASE("a memo switched off measures every ask and still keys the results", "[evaluator][memo]")
{
    MeasurementMemo memo(false);
    FakeWorker worker;
    for (uint64_t i = 0; i < 3; ++i) {
        VariantResult r = ask_memo(memo, worker, {true, sweep, false, false}, i);
        CHECK(r.key == "point-a");
        CHECK(r.reused.is_null());
    }
    CHECK(worker.asks.size() == 3);
    CHECK(memo.stats().measured == 3);
}

TEST_CASE("two threads asking for one point measure it once", "[evaluator][memo]")
{
    MeasurementMemo memo;
    std::atomic<int> measured{0};
    std::atomic<bool> inside{false};
    auto measure = [&](const VariantAsk&) {
        inside = true;
        ++measured;
        std::this_thread::sleep_for(std::chrono::milliseconds(100)); // the other thread arrives meanwhile
        VariantResult r;
        r.verdict = Verdict{VerdictKind::correct, ""};
        return r;
    };
    VariantResult a, b;
    std::thread first([&] { a = memo.run("p", {true, sweep, false, false}, Json{{"ticket", 1}}, measure); });
    while (!inside)
        std::this_thread::yield();
    std::thread second([&] { b = memo.run("p", {true, sweep, false, false}, Json{{"ticket", 2}}, measure); });
    first.join();
    second.join();
    CHECK(measured == 1);
    CHECK(a.reused.is_null());
    CHECK(b.reused["from"][0]["ticket"] == 1);
}

TEST_CASE("a measurement that throws leaves the point free for the next ask", "[evaluator][memo]")
{
    MeasurementMemo memo;
    auto throwing = [](const VariantAsk&) -> VariantResult { throw std::runtime_error("lost"); };
    CHECK_THROWS(memo.run("p", {true, sweep, false, false}, Json(), throwing));
    FakeWorker worker;
    ask_memo(memo, worker, {true, sweep, false, false}, 2, "p");
    CHECK(worker.asks.size() == 1);
}

TEST_CASE("the key is the binary, the plan less its param lists, and the point", "[evaluator][memo]")
{
    Json plan = Json::parse(R"({"params": {"B": [128, 256]}, "launches": [{"kernel": "k", "grid": ["n"], "block": ["B"]}]})");
    Json other_lists = plan;
    other_lists["params"]["B"] = Json::array({256, 512});
    Json other_grid = plan;
    other_grid["launches"][0]["grid"] = Json::array({"ceil_div(n, B)"});
    std::string key = MeasurementMemo::key_for("cubin", plan, {{"B", 256}});
    CHECK(MeasurementMemo::key_for("cubin", other_lists, {{"B", 256}}) == key);
    CHECK(MeasurementMemo::key_for("cubin", other_grid, {{"B", 256}}) != key);
    CHECK(MeasurementMemo::key_for("cubin", plan, {{"B", 128}}) != key);
    CHECK(MeasurementMemo::key_for("other cubin", plan, {{"B", 256}}) != key);
}

TEST_CASE("a full memo forgets its least recently used points and goes on answering", "[evaluator][memo]")
{
    MeasurementMemo memo(true, 16);
    FakeWorker worker;
    for (int i = 0; i < 40; ++i)
        ask_memo(memo, worker, {true, sweep, false, false}, static_cast<uint64_t>(i), "p" + std::to_string(i));
    ask_memo(memo, worker, {true, sweep, false, false}, 100, "p39"); // recent: still there
    CHECK(worker.asks.size() == 40);
    ask_memo(memo, worker, {true, sweep, false, false}, 101, "p0"); // long gone: measured again
    CHECK(worker.asks.size() == 41);
}

TEST_CASE("runs are archived with their ask, GPU seconds, a short key and what was reused", "[evaluator][memo]")
{
    MeasurementMemo memo;
    FakeWorker worker;
    std::vector<VariantResult> results{ask_memo(memo, worker, {true, sweep, false, false}, 1, std::string(32, 'a')),
                                       ask_memo(memo, worker, {true, sweep, false, false}, 2, std::string(32, 'a'))};
    results[0].params = {{"B", 128}};
    Json runs = variant_runs_to_json(results);
    REQUIRE(runs.size() == 2);
    CHECK(runs[0]["params"]["B"] == 128);
    CHECK(runs[0]["timing"] == "sweep");
    CHECK(runs[0]["tests"] == true);
    CHECK(runs[0]["gpu_s"] == 0.5);
    CHECK(runs[0]["key"] == std::string(16, 'a'));
    CHECK(!runs[0].contains("reused"));
    CHECK(runs[1]["reused"]["from"][0]["ticket"] == 2 - 1);
}

TEST_CASE("the reference's baseline timing stands in for its timing as a candidate, not for its checks", "[evaluator][memo]")
{
    MeasurementMemo memo;
    Measurement baseline;
    baseline.shape_set = "bench";
    baseline.shape_label = "n=1";
    baseline.subject = "reference";
    baseline.median_ns = 500;
    baseline.confirmed = true;
    Measurement vendor = baseline;
    vendor.subject = "cublas_saxpy";
    memo.record_reference_timing("reference-point", {baseline, vendor});
    FakeWorker worker;
    VariantResult screen = ask_memo(memo, worker, {true, quick, false, false}, 0, "reference-point");
    REQUIRE(worker.asks.size() == 1);
    CHECK(same_ask(worker.asks[0], {true, none, false, false})); // verified, not timed again
    REQUIRE(screen.measurements.size() == 2);                     // itself as candidate and as reference
    CHECK(screen.measurements[0].subject == "candidate");
    CHECK(screen.measurements[0].median_ns == 500);
    CHECK(screen.measurements[1].subject == "reference");
    CHECK(screen.reused["from"][0]["baselines"] == true);
    VariantResult confirmed = ask_memo(memo, worker, {true, confirm, false, true}, 1, "reference-point");
    REQUIRE(worker.asks.size() == 2);
    CHECK(same_ask(worker.asks[1], {false, none, false, true})); // only the profile was missing
    CHECK(confirmed.measurements.size() == 2);
}
