// The two-phase step's agents side: optimisation menus (agents/menu), reading plans
// (agents/plan_reply), the planner's and the coder's prompts and calls (agents/plan_code), and
// golden files of both prompts.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "agents/call_record_json.hpp"
#include "agents/menu.hpp"
#include "agents/plan_code.hpp"
#include "agents/plan_reply.hpp"
#include "agents/replay_provider.hpp"
#include "prompt_fixtures.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

const MenuSet& bundled_menus()
{
    static const MenuSet menus = MenuSet::load({source_dir() / "prompts" / "menus"});
    return menus;
}

// The whole rowwise menu (as a task sharing every item's tags would get it).
const Menu& rowwise()
{
    return *bundled_menus().find("rowwise");
}

std::string menu_error(const std::string& text, const std::string& name = "mine")
{
    TempDir dir;
    write_file_atomic(dir / (name + ".json"), text);
    try {
        load_menu(dir / (name + ".json"));
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

LlmCallRecord reply(CallPurpose purpose, const std::string& text, const std::string& status = "ok")
{
    LlmCallRecord record;
    record.provider = "openai";
    record.model = "recorded";
    record.purpose = purpose;
    record.reply = text;
    record.status = status;
    record.error = status == "ok" ? "" : "HTTP 503: overloaded";
    return record;
}

// A replay provider over `replies` that keeps the requests it was sent.
struct Recorded {
    std::vector<LlmCallRecord> seen;
    ReplayProvider provider;
    explicit Recorded(std::vector<LlmCallRecord> replies)
        : provider(parse_model_spec("replay:plans.jsonl"), std::move(replies),
                   [this](LlmCallRecord& record) { seen.push_back(record); })
    {
    }
};

PlanRequest sample_request()
{
    ProposalContext context{rowscale_task()};
    context.hardware = sample_hardware();
    context.parent = sample_parent();
    context.lessons = sample_lessons();
    context.strategy = "Prefer vectorised 128-bit memory access; keep register use low.";
    PlanRequest request{context, rowwise()};
    TechniqueTally vectorize;
    vectorize.add({"vectorize-16b", "axpy_f32", "memory", 3, true, true, 1.25, 1.3});
    vectorize.add({"vectorize-16b", "axpy_f32", "memory", 4, false, false, std::nullopt, 1.2});
    request.stats = {{"vectorize-16b", "", vectorize}, {"warp-per-row", "", {}}};
    request.stats_scope = "From 2 tries in earlier runs on this machine and 0 tries in this run.";
    Schedule schedule;
    schedule.task_name = "axpy_f32";
    schedule.speedup = 1.25;
    schedule.steps = {{1, "seed", {}, "seed seed_vec4.cu", std::nullopt}, {3, "llm", {"vectorize-16b"}, "", 1.25}};
    request.schedules = {schedule};
    request.focus = "vectorize-16b";
    request.focus_reason = "it has paid off: improved 1 of 2 tries, mean gain 1.25x on memory tasks";
    return request;
}

void check_golden(const std::string& name, const Prompt& prompt)
{
    std::string rendered = prompt.system + "\n===== user =====\n" + prompt.user;
    auto path = source_dir() / "tests" / "fixtures" / "prompts" / (name + ".txt");
    if (const char* update = std::getenv("KFORGE_UPDATE_GOLDEN"); update && std::string(update) == "1") {
        write_file_atomic(path, rendered);
        WARN("rewrote " << path.string());
        return;
    }
    bool same = read_file(path) == rendered;
    if (!same)
        write_file_atomic(path.string() + ".actual", rendered);
    INFO("the rendered prompt differs from " << path.string() << "; see " << path.string()
                                             << ".actual (run with KFORGE_UPDATE_GOLDEN=1 to accept)");
    CHECK(same);
}

} // namespace

TEST_CASE("every bundled menu loads and each bundled task gets the menu of its kind", "[agents][menu]")
{
    std::vector<std::string> names;
    for (const auto& menu : bundled_menus().menus())
        names.push_back(menu.name);
    CHECK(names == std::vector<std::string>{"attention", "convolution", "gemm", "general", "reduction-scan",
                                            "rowwise", "sparse", "stencil"});
    std::map<std::string, std::string> expected = {
        {"softmax_f32", "rowwise"},     {"layernorm_f32", "rowwise"},     {"rmsnorm_bf16", "rowwise"},
        {"axpy_f32", "rowwise"},        {"transpose_f32", "rowwise"},     {"reduce_sum_f32", "reduction-scan"},
        {"scan_u32", "reduction-scan"}, {"histogram_u8", "reduction-scan"}, {"sgemm_f32", "gemm"},
        {"hgemm_bf16", "gemm"},         {"spmv_csr_f32", "sparse"},       {"jacobi2d_f32", "stencil"}};
    for (const auto& [task, menu] : expected) {
        INFO(task);
        CHECK(bundled_menus().pick(load_task(source_dir() / "tasks" / (task + ".json"))).name == menu);
    }
    // Items with tags are for the tasks sharing one: axpy's menu has no row or transpose techniques.
    Menu axpy = bundled_menus().pick(load_task(source_dir() / "tasks" / "axpy_f32.json"));
    CHECK_FALSE(axpy.find("warp-per-row"));
    CHECK_FALSE(axpy.find("smem-tiled-transpose"));
    CHECK(axpy.find("vectorize-16b"));
    Menu softmax = bundled_menus().pick(load_task(source_dir() / "tasks" / "softmax_f32.json"));
    CHECK(softmax.find("online-softmax"));
    CHECK_FALSE(softmax.find("smem-tiled-transpose"));
    CHECK(bundled_menus().find("rowwise")->items.size() == 9);
    Task odd = rowscale_task();
    odd.tags = {"unheard-of"};
    odd.category = "memory";
    CHECK(bundled_menus().pick(odd).name == "general"); // a category alone is not enough
    CHECK(bundled_menus().pick(odd, "gemm").name == "gemm");
}

TEST_CASE("a user's menu folder replaces a bundled menu of the same name and adds new ones", "[agents][menu]")
{
    TempDir dir;
    write_file_atomic(dir / "rowwise.json", R"({"schema": "kforge.menu/1", "name": "rowwise", "title": "my rows",
        "applies_to": {"tags": ["row-wise"]},
        "items": [{"id": "my-trick", "title": "a trick", "when": "always", "signals": ["__trick"]}]})");
    write_file_atomic(dir / "fft.json", R"({"schema": "kforge.menu/1", "name": "fft", "title": "FFTs",
        "applies_to": {"categories": ["compute"], "tags": ["fft"]},
        "items": [{"id": "radix-4", "title": "radix-4 butterflies", "when": "power-of-four sizes"}]})");
    MenuSet menus = MenuSet::load({dir.path(), source_dir() / "prompts" / "menus"});
    CHECK(menus.menus().size() == 9);
    CHECK(menus.find("rowwise")->title == "my rows");
    CHECK(menus.find("rowwise")->items.size() == 1);
    CHECK(menus.find("fft")->items[0].id == "radix-4");
    CHECK(menus.find("gemm")->file.parent_path() == source_dir() / "prompts" / "menus");
    Task fft = rowscale_task();
    fft.category = "compute";
    fft.tags = {"fft", "fp32"};
    CHECK(menus.pick(fft).name == "fft");
    CHECK_THROWS_WITH(menus.pick(fft, "rowwsie"), Catch::Contains("no such menu (did you mean rowwise?)"));
}

TEST_CASE("a menu file that is wrong is refused with the file and field named", "[agents][menu]")
{
    std::string head = R"({"schema": "kforge.menu/1", "name": "mine", "title": "t", "items": [)";
    CHECK_THAT(menu_error(head + R"({"id": "Vectorize", "title": "v", "when": "w"}]})"),
               Catch::Contains("mine.json: items[0].id: 'Vectorize' is not a technique id"));
    CHECK_THAT(menu_error(head + R"({"id": "new-thing", "title": "v", "when": "w"}]})"),
               Catch::Contains("kept for techniques a planner invents"));
    CHECK_THAT(menu_error(head + R"({"id": "a", "title": "v", "when": "w"}, {"id": "a", "title": "x", "when": "w"}]})"),
               Catch::Contains("items[1].id: technique 'a' is listed twice"));
    CHECK_THAT(menu_error(head + "]}"), Catch::Contains("items: a menu lists 1 to 24 techniques"));
    CHECK_THAT(menu_error(head + R"({"id": "a", "title": "v", "when": "w", "signal": ["x"]}]})"),
               Catch::Contains("unknown field 'signal' (did you mean 'signals'?)"));
    CHECK_THAT(menu_error(R"({"schema": "kforge.menu/1", "name": "other", "title": "t", "items": []})"),
               Catch::Contains("mine.json: name: the name must be the file's name without .json ('mine')"));
    CHECK_THAT(menu_error(R"({"schema": "kforge.menu/2"})"), Catch::Contains("schema: expected \"kforge.menu/1\""));
}

TEST_CASE("a plan is read from a json block, bare JSON or JSON in prose, and its techniques matched to the menu",
          "[agents][plan]")
{
    PlanReading fenced = read_plan_reply("Here is my plan.\n```json\n{\"techniques\": [\"warp-per-row\"], "
                                         "\"expected_speedup\": 1.3, \"steps\": [\"a warp per row\"], \"why\": "
                                         "\"barriers\"}\n```\n",
                                         rowwise());
    REQUIRE(fenced.plan);
    CHECK(fenced.fixed.empty());
    CHECK(fenced.plan->techniques == std::vector<TechniqueChoice>{
                                         {"warp-per-row", rowwise().find("warp-per-row")->title, true}});
    CHECK(fenced.plan->expected_speedup == Approx(1.3));
    CHECK(fenced.plan->rationale == "barriers");
    CHECK(fenced.plan->warnings.empty());

    PlanReading bare = read_plan_reply("I'd go with {\"techniques\": [\"Vectorise 16B\", \"vectorize_16b\", \"new: "
                                       "two rows per warp\", \"register cache\", \"cache-hints\"], "
                                       "\"expected_speedup\": \"1.2x\", \"steps\": \"use float4\"} as the plan.",
                                       rowwise());
    REQUIRE(bare.plan);
    std::vector<std::string> ids;
    for (const auto& choice : bare.plan->techniques)
        ids.push_back(choice.id);
    // Two spellings of one menu item count once; a fourth and fifth technique are dropped.
    CHECK(ids == std::vector<std::string>{"vectorize-16b", "new:two-rows-per-warp"});
    CHECK(bare.plan->expected_speedup == Approx(1.2));
    CHECK(bare.plan->steps == std::vector<std::string>{"use float4"});
    CHECK_THAT(join(bare.plan->warnings, "|"), Catch::Contains("5 techniques named; kept the first 3") &&
                                                   Catch::Contains("'Vectorise 16B' read as the menu's 'vectorize-16b'"));

    PlanReading unknown = read_plan_reply(R"({"techniques": ["warp-specialised rows"], "steps": ["x"]})", rowwise());
    REQUIRE(unknown.plan);
    CHECK(unknown.plan->techniques[0] == TechniqueChoice{"new:warp-specialised-rows", "warp-specialised rows", false});
    CHECK_THAT(join(unknown.plan->warnings, "|"),
               Catch::Contains("'warp-specialised rows' is not on the menu: kept as a new technique "
                               "'new:warp-specialised-rows'") &&
                   Catch::Contains("no expected_speedup given"));
}

TEST_CASE("a plan with comments or trailing commas is fixed locally and says so; what cannot be read is named",
          "[agents][plan]")
{
    PlanReading fixed = read_plan_reply("```json\n{\"techniques\": [\"cache-hints\"], // streaming\n \"steps\": "
                                        "[\"__ldcs\",],\n}\n```",
                                        rowwise());
    REQUIRE(fixed.plan);
    CHECK(fixed.fixed == "removed comments, trailing commas to read the JSON");

    CHECK(read_plan_reply("I would vectorise.", rowwise()).problem == "the reply holds no JSON object");
    CHECK_THAT(read_plan_reply("{techniques: ['x']}", rowwise()).problem, Catch::StartsWith("the JSON does not parse"));
    CHECK_THAT(read_plan_reply(R"({"steps": ["a"]})", rowwise()).problem,
               Catch::Contains("\"techniques\" must list one to three technique ids"));
    CHECK_THAT(read_plan_reply(R"({"techniques": ["cache-hints"], "steps": []})", rowwise()).problem,
               Catch::Contains("\"steps\" must list what to change"));
    PlanReading odd = read_plan_reply(R"({"techniques": ["cache-hints"], "steps": ["a"], "expected_speedup": -2})",
                                      rowwise());
    REQUIRE(odd.plan);
    CHECK_FALSE(odd.plan->expected_speedup);
    CHECK_THAT(join(odd.plan->warnings, "|"), Catch::Contains("expected_speedup -2 is not a speedup"));
    CHECK(technique_slug("  Warp-Specialised ROWS!! ") == "warp-specialised-rows");
    CHECK(technique_slug("!!") == "");
}

TEST_CASE("a planner's reply with a number past a double or JSON nested past the limit is a problem, not a throw",
          "[agents][plan][hostile]")
{
    // nlohmann's own parser throws out_of_range for 1e400; the bounded reader names it instead.
    PlanReading huge = read_plan_reply(R"({"techniques": ["cache-hints"], "steps": ["a"], "expected_speedup": 1e400})",
                                       rowwise());
    CHECK_FALSE(huge.plan);
    CHECK_THAT(huge.problem, Catch::StartsWith("the JSON does not parse: at expected_speedup"));
    std::string deep = R"({"techniques": ["cache-hints"], "steps": ["a"], "why": )" + std::string(100000, '[') +
                       std::string(100000, ']') + "}";
    PlanReading nested = read_plan_reply(deep, rowwise());
    CHECK_FALSE(nested.plan);
    CHECK_THAT(nested.problem, Catch::Contains("the JSON does not parse"));
}

TEST_CASE("the planner is asked once more when its plan cannot be read, and a plan read neither time fails",
          "[agents][plan]")
{
    PlanRequest request = sample_request();
    std::string good = R"({"techniques": ["vectorize-16b"], "expected_speedup": 1.1, "steps": ["float4"]})";

    Recorded first({reply(CallPurpose::plan, good)});
    PlanOutcome parsed = request_plan(first.provider, shipped_prompts(), request);
    CHECK(parsed.status == PlanStatus::parsed);
    CHECK(parsed.calls.size() == 1);
    CHECK(parsed.calls[0].purpose == CallPurpose::plan);

    Recorded again({reply(CallPurpose::plan, "I would use float4."), reply(CallPurpose::plan, good)});
    PlanOutcome repaired = request_plan(again.provider, shipped_prompts(), request);
    CHECK(repaired.status == PlanStatus::repaired);
    CHECK(repaired.problem == "the first reply could not be read: the reply holds no JSON object");
    REQUIRE(again.seen.size() == 2);
    std::string repair_prompt = recorded_prompt(again.seen[1])->user;
    CHECK_THAT(repair_prompt, Catch::Contains("kforge could not read your reply:\nthe reply holds no JSON object"));
    CHECK_THAT(repair_prompt, Catch::Contains("I would use float4.") && Catch::Contains("vectorize-16b, warp-per-row"));

    Recorded never({reply(CallPurpose::plan, "float4"), reply(CallPurpose::plan, "{oops")});
    PlanOutcome failed = request_plan(never.provider, shipped_prompts(), request);
    CHECK(failed.status == PlanStatus::failed);
    CHECK_FALSE(failed.plan);
    CHECK_FALSE(failed.call_failed);
    CHECK_THAT(failed.problem, Catch::StartsWith("the reply holds no JSON object (asked once more: the JSON does "
                                                 "not parse"));

    Recorded down({reply(CallPurpose::plan, "", "http_error")});
    PlanOutcome unreachable = request_plan(down.provider, shipped_prompts(), request);
    CHECK(unreachable.call_failed);
    CHECK_THAT(unreachable.problem, Catch::StartsWith("The planner call failed: HTTP 503"));
}

TEST_CASE("the coder's reply is read like a proposal, with the call's purpose code", "[agents][plan]")
{
    ProposalContext context{rowscale_task()};
    context.parent = sample_parent();
    TechniquePlan plan;
    plan.techniques = {{"vectorize-16b", "v", true}};
    plan.steps = {"float4"};
    Recorded coder({reply(CallPurpose::code, "CHANGE: float4\n```cuda\nextern \"C\" __global__ void k() {}\n```")});
    Proposal proposal = request_code(coder.provider, shipped_prompts(), context, rowwise(), plan);
    CHECK(proposal.outcome == ProposalOutcome::source);
    CHECK(proposal.note == "float4");
    CHECK(proposal.origin == Origin::llm);
    REQUIRE(proposal.calls.size() == 1);
    CHECK(proposal.calls[0].purpose == CallPurpose::code);
    Recorded empty({reply(CallPurpose::code, "I could not write it.")});
    CHECK(request_code(empty.provider, shipped_prompts(), context, rowwise(), plan).outcome == ProposalOutcome::no_code);
}

TEST_CASE("golden: the planner's prompt with statistics, a schedule and a suggested technique", "[agents][golden]")
{
    check_golden("plan", build_plan_prompt(shipped_prompts(), sample_request(), PromptTrim::full));
}

TEST_CASE("golden: the coder's prompt for a plan", "[agents][golden]")
{
    ProposalContext context{rowscale_task()};
    context.hardware = sample_hardware();
    context.parent = sample_parent();
    PlanReading reading = read_plan_reply(R"({"techniques": ["vectorize-16b", "new: two rows per warp"],
        "expected_speedup": 1.3, "steps": ["Load rows as float4.", "Give each warp two rows."],
        "why": "dram_throughput_pct is 61."})",
                                          rowwise());
    REQUIRE(reading.plan);
    check_golden("code", build_code_prompt(shipped_prompts(), context, rowwise(), *reading.plan));
}
