// Lessons: which ones a prompt shows, which ones a run draws from the user's knowledge base, and
// which ones `kforge lessons` lists.
//
// A run draws on the knowledge base once, when it starts (and again on resume, for lessons other
// runs wrote meanwhile): the relevant lessons are copied into the run archive, marked with where
// they came from, and prompts then pick from the archive's lessons only. So what a prompt showed is
// always in the run's own record, and the lessons this run writes to the knowledge base cannot leak
// back into its own prompts by another door.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "archive/archive.hpp"
#include "archive/knowledge_base.hpp"
#include "core/records.hpp"
#include "core/task.hpp"

namespace kforge {

// How relevant a lesson is to a task: 4 for the same task, 2 for the same category, 1 per shared
// tag; 0 means unrelated.
int lesson_relevance(const Lesson& lesson, const Task& task);

// Up to `max` lesson ids for a prompt: the most relevant first, the newest first among equals;
// unrelated lessons never.
std::vector<int64_t> choose_lessons(const std::vector<Lesson>& lessons, const Task& task, size_t max);

// Copies up to `max` relevant knowledge-base lessons the archive does not hold yet (same task and
// text) into the run archive; returns how many. Their evidence records the knowledge base's id and
// the run that learnt them; their candidate id is dropped (it names another run's candidate).
size_t import_knowledge(Archive& archive, const KnowledgeBase& knowledge, const Task& task, size_t max);

// Whether the archive's lesson came from the knowledge base (rather than this run's analyst).
bool is_imported_lesson(const Lesson& lesson);

// A filter of `kforge lessons`: empty fields match everything.
struct LessonFilter {
    std::string task;
    std::string category;
    std::string tag;
};
bool lesson_matches(const Lesson& lesson, const LessonFilter& filter);

// One lesson as JSON (`kforge lessons --json` and --export, one object per line).
Json lesson_to_json(const Lesson& lesson, const std::string& run_id);
// Reads lesson_to_json()'s form (for --import). Throws Error(bad_input) naming `what`.
Lesson lesson_from_json(const Json& json, const std::string& what, std::string& run_id);

} // namespace kforge
