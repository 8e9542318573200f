// The model room's entry: `kforge model profile | extract | optimize | assemble | report` as
// functions, for the command line (src/cli/cmd_model.cpp) and any other front end.
//
// A model folder (DIR) holds, as the steps write them:
//   profile.json   the model's regions and where its time goes (profile)
//   model.json     the same, with the selected regions written as problems (extract)
//   regions/       one KernelBench-form problem per selected region (extract)
//   suite/         the suite over regions/ (optimize; any `suite run` flag)
//   kernels/       the export of each region whose best beat torch eager and torch.compile
//   winners.json   those regions, their speedups and tolerances (assemble)
//   MODEL_kforge.py, model/, kforge_runtime/   the assembled model (assemble)
//   assembled.json the assembled model checked against the original, and the four times (assemble)
// docs/model.md is the contract.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "suite/suite.hpp"

namespace kforge {

struct ModelCutOptions {
    std::string model;            // the model file (KernelBench form, or any file with model_class)
    std::string model_class;      // an ordinary file's model class; then `inputs` makes its inputs
    std::string inputs;           // a Python expression (its int literals become size variables)
    std::string init_inputs = "[]"; // the class's constructor arguments, a Python expression
    std::string sizes;            // "batch_size=2,seq_len=64": module variables rebound before the capture
    std::string folder;           // DIR
    std::string device = "auto";  // auto (cuda where torch sees one), cpu, cuda
    std::optional<int> top;       // at most this many regions (the most time first)
    double min_share = 0.02;      // regions under this share of the time are left out
    bool measure = true;          // time the regions on the GPU (when the device is cuda)
    double time_limit_s = 1800;   // the PyTorch child's wall-time limit
    bool force = false;           // extract into a folder that holds another model's extraction (folder.hpp)
};

// profile: the model's regions and times (or estimates without a GPU), DIR/profile.json, a table.
int run_model_profile(const ModelCutOptions& options);
// extract: as profile, and the selected regions written as problems; DIR/model.json, a table.
int run_model_extract(const ModelCutOptions& options);

struct ModelAssembleOptions {
    std::string folder;
    std::string device = "auto";  // where the assembled model is checked and timed
    double time_limit_s = 1800;
};

// assemble: exports each winning region, writes MODEL_kforge.py, checks it against the model
// (on CUDA also times eager, torch.compile, assembled, assembled + torch.compile). Returns 0, or 1
// when the assembled model does not match the original.
int run_model_assemble(const ModelAssembleOptions& options);

// optimize: extract, then `suite run` over DIR/regions into DIR/suite (`suite` carries every suite
// flag; its paths and output are set here), then assemble, then the report.
int run_model_optimize(const ModelCutOptions& cut, SuiteRunRequest suite, const ModelAssembleOptions& assemble);

struct ModelReportOptions {
    std::string folder;
    bool json = false;
    std::string output; // an HTML page; empty: text on stdout
};

int run_model_report(const ModelReportOptions& options);

} // namespace kforge
