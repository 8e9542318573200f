// The search test harness; see search_harness.hpp.
#include "search/search_harness.hpp"

#include <optional>
#include <thread>

#include <fmt/format.h>

#include "agents/builtin_proposer.hpp"
#include "agents/llm_proposer.hpp"
#include "agents/model_mix.hpp"
#include "agents/prompt_library.hpp"
#include "agents/replay_provider.hpp"
#include "core/task.hpp"
#include "evaluator/describe.hpp"
#include "search/loop_state.hpp"
#include "search/run_record.hpp"
#include "test_support.hpp"
#include "util/hash.hpp"
#include "util/interrupt.hpp"

namespace kforge::test {
namespace {

namespace fs = std::filesystem;

ModelSpec scripted_spec()
{
    ModelSpec spec;
    spec.provider = "openai";
    spec.model = "scripted";
    spec.base_url = "http://scripted.invalid";
    return spec;
}

std::string join_ids(const std::vector<int64_t>& ids)
{
    std::string out;
    for (int64_t id : ids)
        out += (out.empty() ? "" : ",") + std::to_string(id);
    return out;
}

} // namespace

std::string scripted_kernel_reply(const std::string& prompt, const ScriptedSettings& settings)
{
    uint64_t variant = hash64(prompt) % static_cast<uint64_t>(std::max(1, settings.variants));
    uint64_t k = hash64(std::to_string(variant), 3);
    if (static_cast<int>(k % 100) < settings.no_code_percent)
        return "CHANGE: nothing this time\nI could not think of an improvement.";
    int speed = 50 + static_cast<int>((k >> 8) % 300);
    int cell = static_cast<int>((k >> 20) % 16);
    int verdict = static_cast<int>(VerdictKind::correct);
    if (static_cast<int>((k >> 28) % 100) < settings.incorrect_percent) {
        const VerdictKind failures[] = {VerdictKind::compile_error, VerdictKind::incorrect, VerdictKind::runtime_error};
        verdict = static_cast<int>(failures[(k >> 36) % 3]);
    }
    int suspicious = static_cast<int>((k >> 40) % 100) < settings.suspicious_percent ? 1 : 0;
    int held_out = static_cast<int>((k >> 48) % 100) < settings.held_out_fail_percent ? 0 : 1;
    return fmt::format("CHANGE: variant {}\n"
                       "```cuda\n"
                       "/* kforge:plan\n"
                       "{{ \"launches\": [{{\"kernel\": \"softmax\", \"grid\": [\"M\"], \"block\": [256], "
                       "\"args\": [\"x\", \"y\", \"M\", \"N\"]}}] }}\n"
                       "*/\n"
                       "#define KF_SPEED {}\n#define KF_CELL {}\n#define KF_VERDICT {}\n#define KF_SUSPICIOUS {}\n"
                       "#define KF_HELD_OUT {}\n"
                       "extern \"C\" __global__ void softmax(const float* x, float* y, int M, int N) {{ }}\n"
                       "```\n",
                       variant, speed, cell, verdict, suspicious, held_out);
}

std::string scripted_plan_reply(const std::string& prompt)
{
    static const char* const k_techniques[] = {"vectorize-16b", "warp-per-row", "online-softmax", "single-pass-rows",
                                               "cache-hints", "new: two rows per warp"};
    uint64_t h = hash64(prompt, 11);
    if (prompt.find("could not be read") == std::string::npos && h % 9 == 0)
        return "I would vectorise the loads; the plan is {techniques: [vectorize-16b], steps: none yet"; // unreadable
    const char* technique = k_techniques[(h >> 8) % std::size(k_techniques)];
    return fmt::format("```json\n{{\"techniques\": [\"{}\"], \"expected_speedup\": {:.2f}, "
                       "\"steps\": [\"apply {} to the row loop\"], \"why\": \"scripted plan {}\"}}\n```\n",
                       technique, 1.0 + static_cast<double>((h >> 16) % 50) / 100.0, technique, h % 13);
}

ScriptedProvider::ScriptedProvider(ScriptedSettings settings) : Provider(scripted_spec(), {}), m_settings(settings) {}

ChatResult ScriptedProvider::exchange(const ChatRequest& request)
{
    int running = ++m_running;
    int seen = m_max_concurrent.load();
    while (running > seen && !m_max_concurrent.compare_exchange_weak(seen, running)) {
    }
    ++m_calls;
    std::string prompt = request.system + "\n" + request.user;
    bool proposal = request.purpose == CallPurpose::propose || request.purpose == CallPurpose::code;
    if (m_settings.release_newest_first > 0 && proposal)
        wait_for_release();
    if (m_settings.max_delay.count() > 0)
        std::this_thread::sleep_for(
            std::chrono::milliseconds(hash64(prompt, 5) % static_cast<uint64_t>(m_settings.max_delay.count() + 1)));
    ChatResult result;
    LlmCallRecord& record = result.record;
    record.provider = spec().provider;
    record.model = spec().model;
    record.base_url = spec().base_url;
    record.purpose = request.purpose;
    record.request = Json{{"system", request.system}, {"user", request.user}};
    uint64_t h = hash64(prompt);
    switch (request.purpose) {
    case CallPurpose::propose:
    case CallPurpose::repair:
    case CallPurpose::code: record.reply = scripted_kernel_reply(prompt, m_settings); break;
    case CallPurpose::plan: record.reply = scripted_plan_reply(prompt); break;
    case CallPurpose::analyst:
        record.reply = fmt::format("LESSON: variant {} taught that scripted kernels get faster.\nTAGS: scripted, t{}",
                                   h % 7, h % 3);
        break;
    case CallPurpose::meta_prompt: record.reply = fmt::format("```text\nStrategy note {}: try harder.\n```", h % 11); break;
    }
    record.input_tokens = static_cast<int64_t>(prompt.size() / 4);
    record.output_tokens = static_cast<int64_t>(record.reply.size() / 4);
    record.cost_usd = m_settings.cost_per_call;
    record.cost_known = true;
    --m_running;
    return result;
}

void ScriptedProvider::wait_for_release()
{
    using namespace std::chrono_literals;
    std::unique_lock lock(m_gate_mutex);
    uint64_t me = m_arrivals++;
    m_held.push_back(me);
    m_gate.notify_all();
    m_gate.wait_until(lock, std::chrono::steady_clock::now() + 10s,
                      [&] { return m_held.size() >= static_cast<size_t>(m_settings.release_newest_first); });
    // A full batch (or what came within 10 s) goes newest first, 20 ms apart.
    for (;;) {
        if (m_held.back() != me) {
            m_gate.wait(lock);
            continue;
        }
        auto ready_at = m_last_release + 20ms;
        if (std::chrono::steady_clock::now() >= ready_at)
            break;
        m_gate.wait_until(lock, ready_at);
    }
    m_held.pop_back();
    m_last_release = std::chrono::steady_clock::now();
    m_gate.notify_all();
}

void run_interrupted_builtin(const std::filesystem::path& path, int recorded)
{
    clear_interrupt();
    HarnessOptions options;
    options.builtin = true;
    options.config.islands = 2;
    options.config.budgets.candidates = 20;
    int so_far = 0;
    options.on_recorded = [&](const Candidate&) {
        if (++so_far == recorded)
            request_interrupt();
    };
    run_session(path, options);
    clear_interrupt();
}

const Task& softmax_task()
{
    static const Task task = load_task(source_dir() / "tasks" / "softmax_f32.json");
    return task;
}

const Menu& softmax_menu()
{
    static const Menu menu = MenuSet::load_default().pick(softmax_task());
    return menu;
}

SearchOutcome run_session(const fs::path& path, const HarnessOptions& options)
{
    return run_session(path, options, softmax_task());
}

SearchOutcome run_session(const fs::path& path, const HarnessOptions& options, const Task& task)
{
    SearchConfig config = options.config;
    config.progress = ProgressMode::quiet;
    std::optional<Archive> archive;
    if (!fs::exists(path)) {
        RunInfo run = new_run_record(task, path.stem().string(), Json{{"search", config.to_json()}}, config.seed);
        archive.emplace(Archive::create(path, run));
        store_run_secret(*archive, 42);
    } else {
        archive.emplace(Archive::open(path, OpenMode::write));
    }
    FakeEvaluator evaluator(task, options.fake);
    std::unique_ptr<Proposer> proposer;
    BuiltinProposer* builtin = nullptr;
    ModelMix models;
    std::unique_ptr<PromptLibrary> library;
    if (options.builtin) {
        auto owned = std::make_unique<BuiltinProposer>();
        builtin = owned.get();
        proposer = std::move(owned);
    } else {
        library = std::make_unique<PromptLibrary>(PromptLibrary::load_default());
        std::shared_ptr<Provider> provider;
        if (options.replay.empty())
            provider = std::make_shared<ScriptedProvider>(options.scripted);
        else
            provider = std::make_shared<ReplayProvider>(ModelSpec{"replay", "recorded", "", 1, std::nullopt, 8192},
                                                        options.replay, CallRecorder{});
        models.add(provider, 1);
        proposer = std::make_unique<LlmProposer>(models, *library);
    }
    ModelMix planners;
    if (!options.planner_replay.empty())
        planners.add(std::make_shared<ReplayProvider>(ModelSpec{"replay", "planner", "", 1, std::nullopt, 8192},
                                                      options.planner_replay, CallRecorder{}),
                     1);
    static const MenuSet menus = MenuSet::load_default();
    const Menu menu = menus.pick(task, config.menu);
    SearchServices services{evaluator, *proposer};
    services.builtin = builtin;
    services.models = builtin ? nullptr : &models;
    services.library = library.get();
    services.knowledge = options.knowledge;
    services.cost = options.cost;
    services.cost.models = !builtin;
    services.hooks.on_recorded = options.on_recorded;
    services.hooks.on_plan_stored = options.on_plan_stored;
    services.planner = planners.size() > 0 ? &planners : nullptr;
    services.menu = &menu;
    SearchOutcome outcome = run_search(*archive, task, config, services);
    if (options.inspect_evaluator)
        options.inspect_evaluator(evaluator);
    return outcome;
}

std::vector<std::string> run_fingerprint(const fs::path& path)
{
    Archive archive = Archive::open(path, OpenMode::read_only);
    std::vector<std::string> lines;
    for (const auto& point : archive.fitness_series()) {
        auto c = archive.candidate(point.candidate_id);
        const Evaluation& e = c->evaluation;
        lines.push_back(fmt::format("candidate #{} hash={} parent={} inspirations=[{}] island={} generation={} origin={} "
                                    "verdict={} fitness={} cell={} params={} note={} measurements={}",
                                    c->id, c->source_hash, c->parent_id ? std::to_string(*c->parent_id) : "-",
                                    join_ids(c->inspiration_ids), c->island, c->generation, origin_name(c->origin),
                                    verdict_name(e.verdict.kind), e.fitness ? fmt::format("{:.9f}", *e.fitness) : "-",
                                    descriptor_cell(e.descriptors), describe_param_point(e.best_params), c->note,
                                    e.measurements.size()));
    }
    for (const auto& placement : archive.elite_history())
        lines.push_back(fmt::format("elite island={} cell={} candidate=#{} fitness={:.9f} replaced={}",
                                    placement.elite.island, placement.elite.cell, placement.elite.candidate_id,
                                    placement.elite.fitness, placement.replaced_at.has_value()));
    for (const auto& prompt : archive.meta_prompts(MetaPromptFilter::all))
        lines.push_back(fmt::format("strategy island={} generation={} uses={} improvements={} active={} text={}",
                                    prompt.island, prompt.generation, prompt.uses, prompt.improvements, prompt.active,
                                    hash_hex(prompt.text)));
    for (const auto& lesson : archive.lessons())
        lines.push_back(fmt::format("lesson task={} candidate={} text={}", lesson.task_name,
                                    lesson.candidate_id.value_or(0), lesson.text));
    for (const auto& plan : archive.candidate_plans()) {
        std::string techniques;
        for (const auto& claimed : plan.techniques)
            techniques += fmt::format("{}{}:{}", techniques.empty() ? "" : ",", claimed.choice.id,
                                      applied_name(claimed.applied));
        lines.push_back(fmt::format("plan candidate=#{} menu={} status={} problem={} focus={} techniques=[{}] "
                                    "predicted={} measured={} followed={} calls={} plan={}",
                                    plan.candidate_id, plan.menu, plan_status_name(plan.status), plan.problem,
                                    plan.focus, techniques,
                                    plan.predicted_speedup ? fmt::format("{:.4f}", *plan.predicted_speedup) : "-",
                                    plan.measured_speedup ? fmt::format("{:.6f}", *plan.measured_speedup) : "-",
                                    plan.followed ? (*plan.followed ? "yes" : "no") : "-", plan.call_ids.size(),
                                    plan.plan ? plan.plan->to_json().dump() : "null"));
    }
    if (auto state = archive.search_state(k_loop_state_key))
        lines.push_back(fmt::format("rng={} next_seq={} generation={}", (*state)["rng"].get<std::string>(),
                                    (*state)["next_seq"].dump(), (*state)["generation"].dump()));
    return lines;
}

std::string first_difference(const std::vector<std::string>& a, const std::vector<std::string>& b)
{
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        if (a[i] != b[i])
            return fmt::format("line {}:\n  expected: {}\n  actual:   {}", i, a[i], b[i]);
    if (a.size() != b.size())
        return fmt::format("lengths differ: expected {} lines, actual {}", a.size(), b.size());
    return "none";
}

} // namespace kforge::test
