// The two model calls of the search besides proposals: rewriting an island's strategy text
// (meta-prompt) from its score history, and distilling a lesson from a parent/child pair.
//
// Both take the provider to use (the search picks it from its ModelMix with its own Rng), render
// their templates, and parse the reply leniently. Like proposals, they never throw for a failed
// call or an unusable reply: the result has no text and a problem saying why, plus the call's
// record (already handed to the provider's recorder).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agents/prompt_library.hpp"
#include "agents/provider.hpp"
#include "core/records.hpp"
#include "core/task.hpp"

namespace kforge {

struct MetaPromptRequest {
    const Task& task;
    MetaPrompt current;               // the island's note in use
    std::vector<MetaPrompt> history;  // earlier and other islands' notes with their scores
    size_t max_chars = 1500;
};

struct MetaPromptResult {
    std::optional<std::string> text;  // the new note, at most max_chars
    std::string problem;
    LlmCallRecord call;
};

MetaPromptResult rewrite_meta_prompt(Provider& provider, const PromptLibrary& library, const MetaPromptRequest& request);

struct LessonRequest {
    const Task& task;
    CandidateView parent;
    CandidateView child;
};

struct LessonResult {
    std::optional<Lesson> lesson;     // text and tags from the model; task, category, evidence and
                                      // candidate id filled by kforge from the request
    std::string problem;
    LlmCallRecord call;
};

LessonResult distil_lesson(Provider& provider, const PromptLibrary& library, const LessonRequest& request);

// The measured effect of a change, as the analyst prompt shows it and Lesson::evidence stores it:
// fitness and per-shape times before and after, and the metrics that changed.
std::string describe_effect(const CandidateView& before, const CandidateView& after);
Json effect_evidence(const CandidateView& before, const CandidateView& after);

} // namespace kforge
