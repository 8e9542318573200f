// `kforge propose TASK --model M`: one proposal step, without a GPU.
//
// Builds the prompt a search would send (optionally from a parent kernel), asks the model once,
// parses the reply and writes the candidate, then reports tokens, cost and latency. It is how a
// user checks a model setup (key, base URL, context window, reply format) before a long run, and
// with --print-prompt how they read exactly what a model would be told. With --strategy plan it runs
// the two-phase step: the planner's prompt (--print-prompt), the plan, then the coder's prompt
// (--plan FILE --print-prompt) and the kernel. Exit codes: 0 a candidate
// was written, 1 the reply held no usable code (the verdict message says why), 2 usage (an option's
// value, such as --hardware JSON that does not parse), 3 bad input, 4 the model could not be
// reached or kept failing after retries.
#include <chrono>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "agents/call_record_json.hpp"
#include "agents/menu.hpp"
#include "agents/model_mix.hpp"
#include "agents/plan_code.hpp"
#include "agents/plan_reply.hpp"
#include "agents/prompt_builder.hpp"
#include "agents/proposer_factory.hpp"
#include "cli/app.hpp"
#include "cli/option_checks.hpp"
#include "core/task.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

struct ProposeOptions {
    std::string task_path;
    std::vector<std::string> models;
    std::string parent_path;
    std::string edit_form = "whole";
    bool print_prompt = false;
    std::string output_path;
    std::string record_path;
    bool json = false;
    std::optional<double> temperature;
    int64_t max_tokens = 8192;
    std::string pricing_path;
    std::string prompts_dir;
    std::string hardware;            // --hardware: inline JSON or a file
    std::string strategy_text;
    std::string target;
    double timeout_s = 600;
    double connect_timeout_s = 10;
    int retries = 5;
    double retry_backoff_s = 1;
    uint64_t seed = 0;
    std::string strategy = "direct";
    std::vector<std::string> planner_models;
    std::string plan_path;
    std::string menu;
    std::string menus_dir;
    std::string focus;
};

// The two-phase step's inputs for one proposal: the task's menu, the planner's request, and a plan
// read from --plan when given.
struct TwoPhase {
    std::optional<Menu> menu;
    std::optional<PlanRequest> request;
    std::optional<TechniquePlan> plan;
};

TwoPhase prepare_two_phase(const ProposeOptions& options, const Task& task, const ProposalContext& context)
{
    TwoPhase two;
    two.menu = MenuSet::load_default(options.menus_dir).pick(task, options.menu);
    two.request.emplace(PlanRequest{context, *two.menu});
    two.request->context.inspirations.clear();
    if (!options.focus.empty()) {
        if (!two.menu->find(options.focus)) {
            std::vector<std::string> ids;
            for (const auto& item : two.menu->items)
                ids.push_back(item.id);
            fail(ErrorKind::usage, "--focus {}: not a technique of menu {} for this task (techniques: {})",
                 options.focus, two.menu->name, join(ids, ", "));
        }
        two.request->focus = options.focus;
    }
    if (!options.plan_path.empty()) {
        PlanReading reading = read_plan_reply(read_file(options.plan_path), *two.menu);
        if (!reading.plan)
            fail_input("{}: not a plan kforge can read: {}", options.plan_path, reading.problem);
        two.plan = std::move(reading.plan);
    }
    return two;
}

ModelMix model_mix(const std::vector<ModelSpec>& specs, const ProviderSettings& settings)
{
    ModelMix mix;
    for (const auto& spec : specs)
        mix.add(std::shared_ptr<Provider>(make_provider(spec, settings)), spec.weight);
    return mix;
}

// Phase 1 (unless --plan gave the plan), then phase 2. The proposal carries both phases' calls; a
// plan that could not be read is a no_code proposal saying why.
Proposal propose_in_two_phases(TwoPhase& two, const ProposalContext& context, const ModelMix& coders,
                               const ModelMix& planners, const PromptLibrary& library, Rng& rng, Json& plan_json)
{
    std::vector<LlmCallRecord> plan_calls;
    if (!two.plan) {
        PlanOutcome outcome = request_plan(planners.pick(rng), library, *two.request);
        plan_calls = outcome.calls;
        plan_json = Json{{"status", plan_status_name(outcome.status)}, {"problem", outcome.problem},
                         {"plan", outcome.plan ? outcome.plan->to_json() : Json()}};
        if (!outcome.plan) {
            Proposal failed;
            failed.outcome = outcome.call_failed ? ProposalOutcome::call_failed : ProposalOutcome::no_code;
            failed.failure = {VerdictKind::no_code,
                              outcome.call_failed ? outcome.problem : "The plan could not be read: " + outcome.problem};
            failed.calls = plan_calls;
            return failed;
        }
        two.plan = outcome.plan;
        log_info("plan ({}): {}", plan_status_name(outcome.status), two.plan->to_json().dump());
    } else {
        plan_json = Json{{"status", "given"}, {"problem", ""}, {"plan", two.plan->to_json()}};
    }
    Proposal proposal = request_code(coders.pick(rng), library, context, *two.menu, *two.plan);
    proposal.calls.insert(proposal.calls.begin(), plan_calls.begin(), plan_calls.end());
    return proposal;
}

std::string_view outcome_name(ProposalOutcome outcome)
{
    switch (outcome) {
    case ProposalOutcome::source: return "source";
    case ProposalOutcome::no_code: return "no_code";
    case ProposalOutcome::call_failed: return "call_failed";
    }
    return "no_code";
}

std::string describe_call(const LlmCallRecord& call)
{
    std::string label = call.provider == call.model ? call.provider : call.provider + ":" + call.model;
    std::string cost = call.cost_known ? fmt::format("${:.4f}", call.cost_usd) : std::string("cost unknown");
    std::string retries = call.retries ? fmt::format(", {} retr{}", call.retries, call.retries == 1 ? "y" : "ies") : "";
    return fmt::format("{}: {} input tokens ({} cached), {} output tokens, {}, {:.2f} s{} [{}]", label, call.input_tokens,
                       call.cached_input_tokens, call.output_tokens, cost, call.latency_s, retries, call.status);
}

Json call_summary(const LlmCallRecord& call)
{
    return Json{{"provider", call.provider},       {"model", call.model},
                {"base_url", call.base_url},       {"status", call.status},
                {"error", call.error},             {"input_tokens", call.input_tokens},
                {"cached_input_tokens", call.cached_input_tokens}, {"output_tokens", call.output_tokens},
                {"cost_usd", call.cost_usd},       {"cost_known", call.cost_known},
                {"latency_s", call.latency_s},     {"retries", call.retries}};
}

// --model (or --planner-model) texts as specs with the call settings of the command line.
std::vector<ModelSpec> model_specs(const std::vector<std::string>& texts, const ProposeOptions& options)
{
    std::vector<ModelSpec> specs;
    for (const auto& text : texts) {
        ModelSpec spec = parse_model_spec(text);
        spec.temperature = options.temperature;
        spec.max_output_tokens = options.max_tokens;
        specs.push_back(spec);
    }
    return specs;
}

// --hardware: a JSON object written inline (the value starts with '{', after any blanks), else the
// path of a file holding one. Inline JSON that does not parse is a usage error; a file's, bad input.
Json read_hardware_facts(const std::string& value)
{
    std::string text = trim(value);
    if (text.empty())
        return Json::object();
    if (text.front() == '{') {
        JsonParseFailure failure;
        std::optional<Json> json = try_parse_json(text, failure);
        if (!json)
            fail(ErrorKind::usage, "--hardware: not a valid JSON object{}: {}",
                 failure.path.empty() ? "" : " (at " + failure.path + ")", failure.message);
        return std::move(*json);
    }
    std::error_code ec;
    if (!std::filesystem::exists(value, ec))
        fail(ErrorKind::usage, "--hardware '{}': neither a JSON object (which starts with '{{') nor an existing file",
             truncate_text(value, 200));
    Json json = parse_json_file(value);
    if (!json.is_object())
        fail_input("{}: hardware facts must be a JSON object, found {}", value, json_type_name(json));
    return json;
}

int run_propose(const ProposeOptions& options)
{
    Task task = load_task(options.task_path);
    std::vector<ModelSpec> specs = model_specs(options.models, options);
    if (specs.empty())
        log_info("no --model given: using the built-in offline proposer");
    PromptLibrary library = PromptLibrary::load_default(options.prompts_dir);
    ProposalContext context{task};
    context.hardware = read_hardware_facts(options.hardware);
    if (!options.parent_path.empty()) {
        CandidateView parent;
        parent.source = read_file(options.parent_path, k_max_source_bytes, "kernel source");
        context.parent = parent;
    }
    context.strategy = options.strategy_text;
    context.target_hint = options.target;
    context.edit_form = options.edit_form == "diff" ? EditForm::search_replace : EditForm::whole_file;

    bool planned = options.strategy == "plan" || !options.plan_path.empty();
    std::optional<TwoPhase> two;
    if (planned)
        two.emplace(prepare_two_phase(options, task, context));
    if (options.print_prompt) {
        Prompt prompt = !planned    ? build_proposal_prompt(library, context, PromptTrim::full)
                        : two->plan ? build_code_prompt(library, context, *two->menu, *two->plan)
                                    : build_plan_prompt(library, *two->request, PromptTrim::full);
        if (options.json)
            fmt::print("{}\n", Json{{"system", prompt.system}, {"user", prompt.user}}.dump(2, ' ', false, Json::error_handler_t::replace));
        else
            fmt::print("===== system =====\n{}\n===== user =====\n{}\n", prompt.system, prompt.user);
        return k_exit_ok;
    }

    ProviderSettings settings;
    auto ms = [](double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)); };
    settings.timeouts = {ms(options.connect_timeout_s), ms(options.timeout_s)};
    settings.retry.max_retries = options.retries;
    settings.retry.base_delay_s = options.retry_backoff_s;
    settings.prices = std::make_shared<const PriceTable>(PriceTable::load_default(options.pricing_path));
    if (!options.record_path.empty()) {
        std::filesystem::path record_path = options.record_path;
        settings.recorder = [record_path](LlmCallRecord& record) { append_call_record(record_path, record); };
    }
    Rng rng(options.seed);
    Proposal proposal;
    Json plan_json;
    if (planned) {
        if (specs.empty())
            fail(ErrorKind::usage, "--strategy plan needs --model: the builtin proposer does not plan");
        std::vector<ModelSpec> planner_specs = model_specs(options.planner_models, options);
        ModelMix coders = model_mix(specs, settings);
        ModelMix planners = planner_specs.empty() ? coders : model_mix(planner_specs, settings);
        proposal = propose_in_two_phases(*two, context, coders, planners, library, rng, plan_json);
    } else {
        std::unique_ptr<Proposer> proposer = make_proposer(specs, settings, library);
        proposal = proposer->propose(context, rng);
    }
    if (interrupt_requested())
        fail(ErrorKind::interrupted, "interrupted");

    for (const auto& call : proposal.calls)
        log_info("{}", describe_call(call));
    if (proposal.source && !options.output_path.empty()) {
        write_file_atomic(options.output_path, *proposal.source);
        log_info("wrote {} ({} bytes): {}", options.output_path, proposal.source->size(), proposal.note);
    }
    if (options.json) {
        Json calls = Json::array();
        Json total = {{"input_tokens", 0}, {"cached_input_tokens", 0}, {"output_tokens", 0}, {"cost_usd", 0.0},
                      {"cost_known", true}, {"latency_s", 0.0}};
        for (const auto& call : proposal.calls) {
            calls.push_back(call_summary(call));
            total["input_tokens"] = total["input_tokens"].get<int64_t>() + call.input_tokens;
            total["cached_input_tokens"] = total["cached_input_tokens"].get<int64_t>() + call.cached_input_tokens;
            total["output_tokens"] = total["output_tokens"].get<int64_t>() + call.output_tokens;
            total["cost_usd"] = total["cost_usd"].get<double>() + call.cost_usd;
            total["cost_known"] = total["cost_known"].get<bool>() && call.cost_known;
            total["latency_s"] = total["latency_s"].get<double>() + call.latency_s;
        }
        Json out = {{"task", task.name},
                    {"outcome", outcome_name(proposal.outcome)},
                    {"note", proposal.note},
                    {"message", proposal.outcome == ProposalOutcome::source ? "" : proposal.failure.message},
                    {"output", options.output_path.empty() || !proposal.source ? Json(nullptr) : Json(options.output_path)},
                    {"calls", calls},
                    {"total", total},
                    {"plan", plan_json}};
        if (proposal.source && options.output_path.empty())
            out["source"] = *proposal.source;
        fmt::print("{}\n", out.dump(2, ' ', false, Json::error_handler_t::replace));
    } else if (proposal.source && options.output_path.empty()) {
        fmt::print("{}", *proposal.source);
        if (!proposal.source->empty() && proposal.source->back() != '\n')
            fmt::print("\n");
    }
    switch (proposal.outcome) {
    case ProposalOutcome::source: return k_exit_ok;
    case ProposalOutcome::no_code:
        log_error("no usable code: {}", proposal.failure.message);
        return k_exit_negative;
    case ProposalOutcome::call_failed:
        log_error("{}", proposal.failure.message);
        return k_exit_runtime;
    }
    return k_exit_runtime;
}

} // namespace

void add_propose_command(CLI::App& app, CommandSlot& slot)
{
    auto options = std::make_shared<ProposeOptions>();
    auto* cmd = app.add_subcommand("propose", "one proposal step without a GPU: build the prompt, ask the model, "
                                              "parse the reply, write the candidate");
    cmd->footer("Exit codes: 0 a candidate was written, 1 the reply held no usable code, 3 bad input, "
                "4 the model could not be reached after retries.\n"
                "API keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY; a custom base URL works without one.");
    cmd->add_option("TASK", options->task_path, "task spec (JSON)")->required();
    cmd->add_option("-m,--model", options->models,
                    "provider:model[@base_url][*weight], e.g. openai:gpt-5-mini, anthropic:claude-sonnet-4-5, "
                    "openai:qwen@http://localhost:8000/v1, replay:calls.jsonl, builtin (default)");
    cmd->add_option("--parent", options->parent_path, "a kernel to improve (CUDA source file)");
    cmd->add_option("--edit-form", options->edit_form, "whole: the reply is a whole file; diff: SEARCH/REPLACE edits "
                                                       "of the parent")
        ->check(CLI::IsMember({"whole", "diff"}))
        ->capture_default_str();
    cmd->add_flag("--print-prompt", options->print_prompt, "print the prompt and exit without calling any model");
    cmd->add_option("-o,--output", options->output_path, "write the candidate here (default: stdout)");
    cmd->add_option("--record", options->record_path, "append every call record to this JSONL file (replayable "
                                                      "with --model replay:FILE)");
    cmd->add_flag("--json", options->json, "print the outcome, calls, tokens and costs as JSON on stdout");
    cmd->add_option("--temperature", options->temperature, "sampling temperature (default: the server's)")
        ->check(real_number(0, 2));
    cmd->add_option("--max-tokens", options->max_tokens, "output token limit per call")
        ->check(whole_number(1, 10000000))
        ->capture_default_str();
    cmd->add_option("--pricing", options->pricing_path, "price table merged over prompts/pricing.json "
                                                        "(also $KFORGE_PRICING)");
    cmd->add_option("--prompts", options->prompts_dir, "folder of prompt templates overriding prompts/ (also "
                                                       "$KFORGE_PROMPTS)");
    cmd->add_option("--hardware", options->hardware, "GPU facts for the prompt: a JSON object, inline (a value "
                                                     "starting with '{', e.g. '{\"name\": \"H100\", "
                                                     "\"memory_bandwidth_gbps\": 3350}') or in the file named")
        ->check(non_empty());
    cmd->add_option("--strategy-text", options->strategy_text, "strategy text (as an island's meta-prompt)");
    cmd->add_option("--target", options->target, "the kind of kernel wanted (as a MAP-Elites target cell)");
    cmd->add_option("--timeout", options->timeout_s, "seconds allowed for one HTTP exchange")
        ->check(real_number(0, 86400, true))
        ->capture_default_str();
    cmd->add_option("--connect-timeout", options->connect_timeout_s, "seconds allowed to connect")
        ->check(real_number(0, 3600, true))
        ->capture_default_str();
    cmd->add_option("--retries", options->retries, "retries after a transient failure (429, 5xx, timeout, reset)")
        ->check(whole_number(0, 100))
        ->capture_default_str();
    cmd->add_option("--retry-backoff", options->retry_backoff_s, "seconds before the first retry; doubles each time")
        ->check(real_number(0, 3600))
        ->capture_default_str();
    cmd->add_option("--seed", options->seed, "seed for the choice of model and the builtin proposer")
        ->check(unsigned_number())
        ->capture_default_str();
    cmd->add_option("--strategy", options->strategy, "direct: one call; plan: a planner picks techniques from the task's "
                                                     "optimisation menu, then a coder writes the kernel")
        ->check(CLI::IsMember({"direct", "plan"}))
        ->capture_default_str();
    cmd->add_option("--planner-model", options->planner_models, "model(s) for the planning phase (default: --model)");
    cmd->add_option("--plan", options->plan_path, "a plan (the planner's JSON reply) to implement: skips the planning "
                                                  "phase; with --print-prompt, prints the coder's prompt");
    cmd->add_option("--menu", options->menu, "the optimisation menu by name (default: by the task's category and tags)");
    cmd->add_option("--menus", options->menus_dir, "folder of optimisation menus overriding prompts/menus");
    cmd->add_option("--focus", options->focus, "a technique of the menu to suggest to the planner");
    cmd->callback([options, &slot] { slot = [options] { return run_propose(*options); }; });
}

} // namespace kforge
