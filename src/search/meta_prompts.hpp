// Island strategy texts (meta-prompts) and how they are scored (DESIGN.md §7, "Meta-prompts").
//
// Each island starts with a different strategy text, so the islands pull in different directions
// from the first proposal. A text's score is the share of its proposals that improved their
// island's best, with a prior of one success in two tries ((improvements + 1) / (uses + 2)), so a
// text is not judged on two attempts. Every few generations, when a model is available, the island
// whose text scores lowest (among texts tried often enough) gets a rewrite: the model sees the
// current text and every text's record, and the new text replaces the old one, which stays in the
// archive, inactive, for the record.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/records.hpp"
#include "util/json_reader.hpp"

namespace kforge {

// The starting strategy of island `island` (the texts rotate when there are more islands).
std::string initial_strategy(int island);

double meta_prompt_score(const MetaPrompt& prompt);

// The island whose active text scores lowest among those used at least `min_uses` times (the lower
// island number among equals), or nullopt.
std::optional<int> weakest_island(const std::vector<MetaPrompt>& active, int min_uses);

// A MetaPrompt as JSON and back (scheduled rewrites carry their prompts' records as they were,
// saved with the pending items a resume starts again). Reading, an absent or null field takes its
// default and a mistyped one is an Error(bad_input) naming it.
Json meta_prompt_to_json(const MetaPrompt& prompt);
MetaPrompt meta_prompt_from_json(const JsonReader& json);

} // namespace kforge
