// A lessons file: what `kforge lessons --export` writes and `--import` reads, one
// `kforge.lesson/1` object (knowledge.hpp's lesson_to_json) per line.
//
// The file comes from another machine or another person, so it is read like any text kforge did
// not write: a regular file only (never a directory, a device or a FIFO, which would read as empty
// or forever), at most k_max_lessons_file_bytes, each lesson at most k_max_lesson_bytes, and every
// line checked before anything is stored, so an import is all or nothing (knowledge_base.hpp's
// add_lessons stores them in one transaction).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "archive/knowledge_base.hpp"

namespace kforge {

// The lessons of `text`, in order; blank lines are skipped. `label` names the text in errors
// ("FILE:LINE: what is wrong"). Throws Error(bad_input) for a line that is not a lesson or is
// longer than k_max_lesson_bytes, and Error(interrupted) when interrupt_requested() (checked at
// every line, so Ctrl-C stops a long file at once). Lesson ids are left 0.
std::vector<KnowledgeLesson> parse_lessons_jsonl(std::string_view text, std::string_view label);

// Reads the lessons file at `path` (util/text's read_file: a regular file of at most
// k_max_lessons_file_bytes) and parses it as above.
std::vector<KnowledgeLesson> read_lessons_file(const std::filesystem::path& path);

} // namespace kforge
