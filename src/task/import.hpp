// From the importer's facts about a PyTorch program to a kforge.task/1 spec (docs/torch-tasks.md).
//
// python/kforge_torch/importer.py studies the program (sizes, tensors, shapes, tolerances, FLOPs)
// and prints what it found as JSON; everything that makes those facts a spec lives here, in C++,
// beside the spec's own parser, so the format has one owner. The spec it writes is an ordinary
// spec: `task check`, `eval`, `optimize`, `export` and `report` take it like any other, and users
// may edit it (shapes, tolerances, seeds).
#pragma once

#include <string>
#include <vector>

#include "util/json_reader.hpp"

namespace kforge {

// `kforge task import`: runs the importer on `problem` (under the python3 that has torch, in a
// process group of its own, killed at the time limit), writes the spec (default: beside the program
// with .json; the program is copied beside a spec written elsewhere), loads it back and prints its
// path. Returns the exit code (0); throws Error(usage) for an existing spec without `force` or a
// name that is not an identifier, Error(bad_input) for what the program or the importer refuses,
// Error(interrupted) at Ctrl-C, Error(runtime) without a python3 that has torch.
struct TaskImportOptions {
    std::string problem;
    std::string output;
    std::string name;
    std::string symbols;
    double time_limit_s = 600;
    std::string device = "cpu";
    bool force = false;
};
int run_task_import(const TaskImportOptions& options);

struct SpecFromFacts {
    std::string name;                 // the task's name (an identifier)
    std::string reference_file;       // the program, relative to the spec's folder
};

// The spec as JSON, its fields in the order a person writes them. Throws Error(bad_input) when the
// facts lack what a spec needs.
nlohmann::ordered_json spec_from_facts(const Json& facts, const SpecFromFacts& options);

// What the import found, for the user: symbols and the rule that chose them, shapes, arguments,
// checks with what they were measured from, the roofline, notes. Lines without a trailing newline.
std::vector<std::string> describe_facts(const Json& facts);

// A task name from a file stem: invalid characters become '_', and a leading digit gets "p_".
std::string task_name_from_stem(const std::string& stem);

} // namespace kforge
