// LlmCallRecord as JSON, and JSONL files of them.
//
// One format serves `kforge propose --record FILE.jsonl`, the replay provider and anyone reading
// calls with jq: one JSON object per line, `"schema": "kforge.llm_call/1"`, the record's fields
// under their own names. A recorded session replays exactly: the replay provider reads the same
// file. Records never contain API keys (providers scrub them before a record exists).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/records.hpp"
#include "util/json_reader.hpp"

namespace kforge {

Json call_record_to_json(const LlmCallRecord& record);
// Throws Error(bad_input) "FILE: PATH: problem" naming the offending field.
LlmCallRecord call_record_from_json(const JsonReader& json);

// Reads a JSONL file of records; blank lines are skipped. Throws Error(bad_input) "FILE:LINE: ...".
std::vector<LlmCallRecord> load_call_records(const std::filesystem::path& file);
// Appends one record as one line and flushes. Throws Error(runtime) when the file cannot be written.
void append_call_record(const std::filesystem::path& file, const LlmCallRecord& record);

// The system and user prompt of a recorded call, read from its request as the provider sent it
// (openai messages, anthropic system + messages, or replay's own {system, user}).
struct RecordedPrompt {
    std::string system;
    std::string user;
};
std::optional<RecordedPrompt> recorded_prompt(const LlmCallRecord& record);

} // namespace kforge
