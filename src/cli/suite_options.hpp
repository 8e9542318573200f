// The options of `kforge suite run` that set how a suite runs (budgets, models, GPUs, shards,
// imports, progress), shared by `suite run` and `model optimize`, which runs a suite over a model's
// regions; and the suite room's request made from them, with optimize's own checks of what the suite
// stores (each problem runs as `kforge optimize`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "suite/suite.hpp"

namespace kforge {

struct SuiteRunOptions {
    std::vector<std::string> paths;
    std::string output;
    std::string budget, time, max_cost;
    std::vector<std::string> models;
    std::string optimize_args;
    std::string gpus = "all";
    std::string per_gpu = "auto";   // --per-gpu: auto or 1..16
    int searches_per_gpu = 0;       // --searches-per-gpu: 0 = every run searches
    std::string shard;
    bool retry_failed = false;
    std::optional<int> parallel;
    std::string knowledge;
    bool no_knowledge = false;
    std::string progress = "auto";
    bool json = false;
    std::optional<size_t> import_jobs;
    double import_time_limit_s = 600;
};

// Adds every suite flag but PATH and -o to `cmd`.
void add_suite_run_options(CLI::App* cmd, SuiteRunOptions& o);

// The suite room's request: --shard is parsed now (usage error), the settings when the suite runs.
SuiteRunRequest suite_run_request(const SuiteRunOptions& o);

} // namespace kforge
