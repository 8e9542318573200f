// The session machinery shared by `kforge optimize` and `kforge resume`; see cmd_optimize_common.hpp.
#include "cli/cmd_optimize_common.hpp"
#include "cli/option_checks.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "agents/llm_proposer.hpp"
#include "agents/pricing.hpp"
#include "agents/provider.hpp"
#include "evaluator/gpu/remote.hpp"
#include "util/error.hpp"
#include "util/limits.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

std::chrono::milliseconds to_ms(double seconds)
{
    return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// The provider's or evaluator's stored settings (`key`), read with their defaults: a resumed run's
// come from its archive, so a member of the wrong type is an error naming the archive and field.
JsonReader stored_settings(const RunConfig& config, const Json& settings, const char* key)
{
    return JsonReader(settings, config.origin.empty() ? std::string("the run configuration") : config.origin, key);
}

} // namespace

std::filesystem::path default_knowledge_path()
{
    return data_dir() / "knowledge.sqlite";
}

double parse_amount(const std::string& text, const char* flag, double base, Amount kind)
{
    std::string body = trim(text);
    bool relative = !body.empty() && body[0] == '+';
    if (relative)
        body = body.substr(1);
    double bound = kind == Amount::count ? k_max_budget_count : k_max_budget_dollars;
    double value = -1;
    auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
    bool ok = !body.empty() && ec == std::errc() && end == body.data() + body.size() && std::isfinite(value) &&
              value >= 0 && value <= bound && (kind == Amount::dollars || std::floor(value) == value);
    if (!ok)
        fail(ErrorKind::usage, "{} '{}': expected {} from 0 to {:.0f}, or +N for N more than used so far", flag, text,
             kind == Amount::count ? "a whole number" : "a number", bound);
    double total = relative ? base + value : value;
    if (total > bound)
        fail(ErrorKind::usage, "{} '{}': {:.0f} in all, over the most allowed ({:.0f})", flag, text, total, bound);
    return total;
}

CLI::Option* add_parallel_option(CLI::App* cmd, std::optional<int>& parallel, const std::string& help)
{
    return cmd->add_option("--parallel", parallel, help)->check(whole_number(1, 64));
}

void add_session_options(CLI::App* cmd, SessionOptions& o, bool resume)
{
    std::string more = resume ? " (+N: N more than used so far)" : "";
    cmd->add_option("-m,--model", o.models,
                    resume ? "replace the run's models (provider:model[@base_url][*weight] or builtin)"
                           : "provider:model[@base_url][*weight], repeatable for a weighted mix: openai:gpt-5, "
                             "anthropic:claude-sonnet-4-5, openai:qwen@http://localhost:8000/v1, replay:calls.jsonl; "
                             "builtin (the default) needs no key");
    // Empty texts are refused here: apply_session_options reads an empty one as "not given".
    cmd->add_option("--budget", o.budget, "candidates to try, seeds, repairs and duplicates included" +
                                              (resume ? more : std::string(" (default 100)")))
        ->check(non_empty());
    cmd->add_option("--max-calls", o.max_calls, "language-model calls at most" + more)->check(non_empty());
    cmd->add_option("--max-cost", o.max_cost, "US dollars of model calls at most; calls in flight count at an "
                                              "upper estimate" + more)
        ->check(non_empty());
    cmd->add_option("--time", o.time, "wall time of this session, e.g. 90m, 2h, 1h30m; in-flight work finishes")
        ->check(non_empty());
    cmd->add_option("--patience", o.patience, "stop after this many generations without a better kernel")
        ->check(whole_number(1, 1000000));
    add_parallel_option(cmd, o.parallel, "model calls in flight (default 4)");
    cmd->add_option("--knowledge", o.knowledge_path,
                    "knowledge base of lessons (default: $XDG_DATA_HOME/kforge/knowledge.sqlite)");
    cmd->add_flag("--no-knowledge", o.no_knowledge, "neither read nor write the user-level knowledge base");
    cmd->add_flag("--json", o.json, "print the final summary as JSON on stdout");
    cmd->add_option("--progress", o.progress, "auto (a live line on a terminal, [k/N] lines otherwise), live, lines, "
                                              "quiet")
        ->check(CLI::IsMember({"auto", "live", "lines", "quiet"}));
    cmd->add_option("--temperature", o.temperature, "sampling temperature (default: the server's)")
        ->check(real_number(0, 2));
    cmd->add_option("--max-tokens", o.max_tokens, "output token limit per call (default 8192)")
        ->check(whole_number(1, 10000000));
    cmd->add_option("--pricing", o.pricing_path, "price table merged over prompts/pricing.json");
    cmd->add_option("--prompts", o.prompts_dir, "folder of prompt templates overriding prompts/");
    cmd->add_option("--timeout", o.timeout_s, "seconds allowed for one model call (default 600)")
        ->check(real_number(0, 86400, true));
    cmd->add_option("--connect-timeout", o.connect_timeout_s, "seconds allowed to connect (default 10)")
        ->check(real_number(0, 3600, true));
    cmd->add_option("--retries", o.retries, "retries after a transient failure (default 5)")->check(whole_number(0, 100));
    cmd->add_option("--retry-backoff", o.retry_backoff_s, "seconds before the first retry; doubles (default 1)")
        ->check(real_number(0, 3600));
    cmd->add_option("--strategy", o.strategy,
                    "direct: one model call per proposal (default); plan: a planner picks techniques from the task's "
                    "optimisation menu, then a coder writes the kernel; mix: a share of each (--plan-share)")
        ->check(CLI::IsMember({"direct", "plan", "mix"}));
    // parse_strategy checks it (0 < share < 1, NaN refused), with advice a range check could not give.
    cmd->add_option("--plan-share", o.plan_share, "with --strategy mix: the share of proposals made in two phases "
                                                  "(default 0.5)");
    cmd->add_option("--plan-explore", o.plan_explore, "the share of plans pointed at a technique drawn for exploration "
                                                      "(an untried one first) rather than by its results (default 0.25)")
        ->check(real_number(0, 1));
    cmd->add_option("--planner-model", o.planner_models,
                    "model(s) for the planning phase, like --model (default: the --model mix plans too)");
    cmd->add_option("--menu", o.menu, "the optimisation menu by name (default: picked by the task's category and tags)");
    cmd->add_option("--menus", o.menus_dir, "folder of optimisation menus (*.json) added to and overriding "
                                            "prompts/menus (also $KFORGE_MENUS)");
    cmd->add_option("--gpus", o.gpus,
                    resume ? "GPUs to use: all, N (the first N) or indices such as 0,2,5 (one device: 2,) (default: the run's)"
                           : "GPUs to use, one worker each: all (default), N (the first N) or indices such as 0,2,5 "
                             "(one device: 2,); under mpirun, per host")
        ->check(non_empty());
    CLI::Option* share = cmd->add_option("--gpu-share", o.gpu_share,
                    "share the run's one GPU (--gpus I,) with other runs through the locks in this folder (what "
                    "`kforge suite run` passes): measure only holding its measuring lock");
    cmd->add_option("--gpu-searches", o.gpu_searches,
                    "with --gpu-share: at most N runs sharing the GPU search at once, each in a turn held from its "
                    "baselines to its end (suite run's --searches-per-gpu; default: no turns, every run searches)")
        ->check(whole_number(1, 64))
        ->needs(share);
}

void apply_session_options(const SessionOptions& o, const BudgetBase& base, RunConfig& config)
{
    Budgets& b = config.search.budgets;
    if (!o.budget.empty())
        b.candidates =
            static_cast<int64_t>(parse_amount(o.budget, "--budget", static_cast<double>(base.candidates), Amount::count));
    if (!o.max_calls.empty())
        b.max_calls =
            static_cast<int64_t>(parse_amount(o.max_calls, "--max-calls", static_cast<double>(base.calls), Amount::count));
    if (!o.max_cost.empty())
        b.max_cost_usd = parse_amount(o.max_cost, "--max-cost", base.cost_usd, Amount::dollars);
    if (!o.time.empty())
        b.max_seconds = parse_duration(o.time);
    if (o.patience)
        b.patience = *o.patience;
    if (o.parallel)
        config.search.parallel = *o.parallel;
    if (!o.progress.empty())
        config.search.progress = o.progress == "live"    ? ProgressMode::live
                                 : o.progress == "lines" ? ProgressMode::lines
                                 : o.progress == "quiet" ? ProgressMode::quiet
                                                         : ProgressMode::automatic;
    if (o.no_knowledge)
        config.knowledge.reset();
    else if (!o.knowledge_path.empty())
        config.knowledge = std::filesystem::absolute(o.knowledge_path).string();
    if (!o.models.empty()) {
        config.models.clear();
        for (const auto& text : o.models) {
            ModelSpec spec = parse_model_spec(text);
            if (spec.is_builtin())
                continue;
            config.models.push_back({spec.label(), spec.weight, spec.temperature, spec.max_output_tokens});
        }
        if (config.models.size() != o.models.size() && !config.models.empty())
            fail(ErrorKind::usage, "--model builtin cannot be mixed with language models");
    }
    if (!o.planner_models.empty()) {
        config.planner_models.clear();
        for (const auto& text : o.planner_models) {
            ModelSpec spec = parse_model_spec(text);
            if (spec.is_builtin())
                fail(ErrorKind::usage, "--planner-model builtin: the builtin proposer does not plan; name a model");
            config.planner_models.push_back({spec.label(), spec.weight, spec.temperature, spec.max_output_tokens});
        }
    }
    for (auto* list : {&config.models, &config.planner_models})
        for (auto& m : *list) {
            if (o.temperature)
                m.temperature = o.temperature;
            if (o.max_tokens)
                m.max_output_tokens = *o.max_tokens;
        }
    if (!o.strategy.empty() || o.plan_share)
        config.search.plan_share = parse_strategy(o.strategy.empty() ? "mix" : o.strategy, o.plan_share);
    if (o.plan_explore)
        config.search.plan_explore = *o.plan_explore;
    if (!o.menu.empty())
        config.search.menu = o.menu;
    if (!o.menus_dir.empty())
        config.provider["menus"] = std::filesystem::absolute(o.menus_dir).string();
    Json& p = config.provider;
    if (o.timeout_s)
        p["timeout_s"] = *o.timeout_s;
    if (o.connect_timeout_s)
        p["connect_timeout_s"] = *o.connect_timeout_s;
    if (o.retries)
        p["retries"] = *o.retries;
    if (o.retry_backoff_s)
        p["retry_backoff_s"] = *o.retry_backoff_s;
    if (!o.pricing_path.empty())
        p["pricing"] = std::filesystem::absolute(o.pricing_path).string();
    if (!o.prompts_dir.empty())
        p["prompts"] = std::filesystem::absolute(o.prompts_dir).string();
    if (!o.gpus.empty())
        config.evaluator["gpus"] = parse_gpu_selection(o.gpus).text;
    config.search.validate();
}

Session::Session(const Task& task, const RunConfig& config) : m_task(task)
{
    if (config.models.empty()) {
        if (config.search.plan_share > 0)
            log_warn("--strategy {} needs a model (--model): the builtin proposer proposes in one step",
                     describe_strategy(config.search.plan_share));
        // The builtin proposer explores the task's seed kernels; without any it has nothing to do.
        if (task.seeds.empty())
            fail(ErrorKind::usage,
                 "task '{}' has no seed kernels, so the builtin offline proposer has nothing to start from: name a "
                 "model (--model openai:MODEL, anthropic:MODEL, replay:FILE) or add seed kernels (\"seeds\") to {}",
                 task.name, task.spec_path.empty() ? "the spec" : task.spec_path.string());
        auto builtin = std::make_unique<BuiltinProposer>();
        m_builtin = builtin.get();
        m_proposer = std::move(builtin);
        m_proposer_label = "the builtin offline proposer (no model)";
    } else {
        JsonReader p = stored_settings(config, config.provider, "provider");
        m_library = std::make_unique<PromptLibrary>(PromptLibrary::load_default(p.get_string("prompts", "")));
        auto prices = std::make_shared<const PriceTable>(PriceTable::load_default(p.get_string("pricing", "")));
        ProviderSettings settings;
        settings.timeouts = {to_ms(p.get_number("connect_timeout_s", 10.0)), to_ms(p.get_number("timeout_s", 600.0))};
        settings.retry.max_retries = static_cast<int>(p.get_int("retries", 5));
        settings.retry.base_delay_s = p.get_number("retry_backoff_s", 1.0);
        settings.prices = prices;
        settings.seed = config.search.seed; // replay latency draws: the same per reply in every run of this seed
        std::vector<std::string> labels;
        m_cost.models = true;
        auto add_model = [&](const ModelEntry& entry, ModelMix& mix) {
            ModelSpec spec = parse_model_spec(entry.spec);
            spec.weight = entry.weight;
            spec.temperature = entry.temperature;
            spec.max_output_tokens = entry.max_output_tokens;
            mix.add(std::shared_ptr<Provider>(make_provider(spec, settings)), spec.weight);
            m_cost.max_output_tokens = std::max(m_cost.max_output_tokens, spec.max_output_tokens);
            if (spec.provider == k_provider_replay)
                return spec.label(); // replayed calls cost nothing
            if (const ModelPrice* price = prices->find(spec.provider, spec.model)) {
                m_cost.input_usd_per_token = std::max(m_cost.input_usd_per_token, price->input / 1e6);
                m_cost.output_usd_per_token = std::max(m_cost.output_usd_per_token, price->output / 1e6);
            } else {
                log_warn("{} is not in the price table: its calls are counted but cost nothing, so --max-cost "
                         "cannot limit them (add it with --pricing FILE)", spec.label());
            }
            return spec.label();
        };
        for (const auto& entry : config.models)
            labels.push_back(add_model(entry, m_models));
        if (config.search.plan_share > 0) {
            std::vector<std::string> planners;
            for (const auto& entry : config.planner_models)
                planners.push_back(add_model(entry, m_planners));
            MenuSet menus = MenuSet::load_default(p.get_string("menus", ""));
            m_menu = std::make_unique<Menu>(menus.pick(task, config.search.menu));
            log_info("{} proposals in two phases (a plan, then the code): menu {} ({} techniques), planner {}",
                     config.search.plan_share >= 1 ? "all" : fmt::format("{:.0f}% of", 100 * config.search.plan_share),
                     m_menu->name, m_menu->items.size(), planners.empty() ? "the same models" : join(planners, ", "));
        }
        if (config.search.plan_share <= 0 && !config.planner_models.empty())
            log_warn("--planner-model has no effect with --strategy direct (one call per proposal)");
        m_proposer = std::make_unique<LlmProposer>(m_models, *m_library);
        m_proposer_label = join(labels, ", ");
    }
    if (config.knowledge) {
        try {
            m_knowledge = std::make_unique<KnowledgeBase>(KnowledgeBase::open(*config.knowledge, KnowledgeAccess::read_write));
        } catch (const Error& e) {
            log_warn("running without the knowledge base: {}", e.what());
        }
    }
}

Session::~Session() = default;

void Session::start_evaluator(const RunConfig& config, uint64_t run_secret, MpiWorld* mpi,
                              const std::string& gpu_share_dir, int gpu_searches)
{
    EvaluatorConfig evaluator;
    JsonReader stored = stored_settings(config, config.evaluator, "evaluator");
    evaluator.arch = stored.get_string("arch", "");
    evaluator.compile_workers = static_cast<size_t>(std::max<int64_t>(0, stored.get_int("compile_workers", 0)));
    evaluator.launch_deadline = to_ms(stored.get_number("deadline_s", 10.0));
    evaluator.cache_dir = cache_dir() / "cubin";
    evaluator.run_secret = run_secret;
    evaluator.gpus = parse_gpu_selection(stored.get_string("gpus", "all"));
    evaluator.mpi = mpi;
    evaluator.reuse_measurements = stored.get_bool("reuse", true); // absent in runs from before the flag
    evaluator.prefetch_task_kernels = true;
    if (!gpu_share_dir.empty())
        evaluator.gpu_share_dir = std::filesystem::absolute(gpu_share_dir);
    evaluator.gpu_searches = gpu_searches;
    m_evaluator = make_gpu_evaluator(m_task, evaluator);
}

SearchServices Session::services()
{
    SearchServices services{*m_evaluator, *m_proposer};
    services.builtin = m_builtin;
    services.models = m_builtin ? nullptr : &m_models;
    services.library = m_library.get();
    services.knowledge = m_knowledge.get();
    services.planner = m_planners.size() > 0 ? &m_planners : nullptr;
    services.menu = m_menu.get();
    services.cost = m_cost;
    return services;
}

std::unique_ptr<MpiWorld> join_mpi_launch()
{
    MpiLaunch launch = detect_mpi_launch();
    if (!launch.detected)
        return nullptr;
    std::unique_ptr<MpiWorld> world = MpiWorld::join(launch);
    if (world->size() == 1 && launch.expected_size > 1)
        fail_runtime("{} started kforge as one of {} tasks, but MPI sees a single process, so every task would run a "
                     "search of its own: with srun, pass --mpi=pmix (or --mpi=pmi2)",
                     launch.launcher, launch.expected_size);
    if (world->rank() == 0 && world->size() > 1) {
        log_info("MPI: {} ranks ({}); rank 0 runs the search, ranks 1 to {} serve the GPUs of their hosts",
                 world->size(), world->library(), world->size() - 1);
        if (!launch.survives_rank_loss)
            log_warn("{}", launch.rank_loss_warning);
    }
    return world;
}

MpiController::MpiController(std::unique_ptr<MpiWorld> world) : m_world(std::move(world)) {}

MpiController::~MpiController()
{
    if (m_world)
        stop_gpu_services(*m_world);
}

uint64_t random_u64()
{
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
}

} // namespace kforge
