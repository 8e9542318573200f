// What a suite is made of: the PATH arguments of `kforge suite run` turned into problems with ids.
//
// A `.py` file is a PyTorch program (imported into the suite folder before its run), a `.json`
// file a kforge.task/1 spec (used where it is), and a folder stands for the problem files at its
// top level, in sorted order: `.py` files that define `class Model` and `get_inputs`, and `.json`
// files whose schema is kforge.task/1. Everything else in a folder is left out (said at debug
// level), and so is a program whose imported spec sits in the same folder (the spec, which the
// user may have edited, stands for it), and the folder of a suite itself.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "suite/manifest.hpp"

namespace kforge {

struct FoundProblem {
    std::filesystem::path source; // absolute, normalised
    ProblemKind kind = ProblemKind::spec;
};

// The problems the PATH arguments name, sources in order of appearance with duplicates removed.
// Throws Error(bad_input) for a path that does not exist, a file that is neither .py nor .json, a
// .json given by name that is not a task spec, and for a folder without any problem file.
std::vector<FoundProblem> find_problem_sources(const std::vector<std::string>& paths);

// Adds the problems `manifest` does not have yet with fresh, unique ids: the source's stem made
// file-name safe, with -2, -3, ... when taken. Existing problems keep their ids, so a re-run names
// every problem as before. A found source is the problem whose stored source it is, else the one
// whose source sits at the same place relative to the suite folder `root` (absolute, normalised):
// a suite folder moved or copied together with its sources (a model folder) resumes its own
// problems, which then point at the sources beside them. A problem whose stored source is gone
// while the one at its relative place exists is pointed there too, named on the command line or
// not. Problems of older manifests, which lack the relative path, get it while their source is
// where they say. Returns how many were added.
size_t add_new_problems(SuiteManifest& manifest, const std::vector<FoundProblem>& found,
                        const std::filesystem::path& root);

// The stem of a problem's source file ("quick_gelu" for .../quick_gelu.py): what `--model
// replay:DIR/` looks for as DIR/<stem>.jsonl.
std::string source_stem(const SuiteProblem& problem);

// True when the problem's spec exists (an imported problem before its import: false).
bool problem_spec_ready(const SuiteFolder& folder, const SuiteProblem& problem);

} // namespace kforge
