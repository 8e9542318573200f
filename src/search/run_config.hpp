// The run configuration (RunInfo::config): what a resumed run needs to continue the same run.
//
// {"search": SearchConfig, "models": [{"spec", "weight", "temperature", "max_output_tokens"}],
//  "planner_models": [same; empty: the models plan too], "knowledge": path or null,
//  "provider": {timeouts, retries, pricing, prompts, menus},
//  "evaluator": {"arch", "compile_workers", "deadline_s", "gpus"}}. It never holds a key or the run
// secret.
//
// `kforge optimize` and `resume` make it from their flags (src/cli/cmd_optimize_common.hpp); it sits
// here, beside the search settings it holds, because `suite run` reads it too: what an interrupted
// problem's earlier sessions used and left of their budgets (src/suite/plan.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "search/search_config.hpp"
#include "util/json_reader.hpp"

namespace kforge {

// The parts of the run configuration besides the search settings.
struct ModelEntry {
    std::string spec;              // as parse_model_spec reads it
    double weight = 1;
    std::optional<double> temperature;
    int64_t max_output_tokens = 8192;
};
struct RunConfig {
    SearchConfig search;
    std::vector<ModelEntry> models; // empty: the builtin proposer
    std::vector<ModelEntry> planner_models; // two-phase proposals' planners; empty: `models`
    std::optional<std::string> knowledge; // null: --no-knowledge
    Json provider = Json::object();  // read where it is used (src/cli), through a JsonReader labelled
    Json evaluator = Json::object(); // with `origin`; a null member reads as absent
    std::string origin;              // where it was read from ("ARCHIVE: run config"); "" for a new run

    Json to_json() const;
    // Throws Error(bad_input) naming `what` and the field for a configuration kforge cannot use.
    static RunConfig from_json(const Json& json, const std::string& what);
};

// "90m", "2h", "1h30m", "45s", "3600" -> seconds. Throws Error(usage).
double parse_duration(const std::string& text);

} // namespace kforge
