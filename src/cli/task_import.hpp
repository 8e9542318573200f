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
