// String and file helpers that the standard library lacks.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

std::string trim(std::string_view text);
std::vector<std::string> split(std::string_view text, char separator);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
std::string replace_all(std::string text, std::string_view from, std::string_view to);
std::string to_lower(std::string_view text);
// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);
// The candidate closest to `word` within a small distance, or "" when none is close.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);
// At most `max_chars`, cut at a line boundary where possible, with a note of what was dropped.
std::string truncate_text(std::string_view text, size_t max_chars);
// "1.23 ms", "456 us", "7.8 s" from nanoseconds.
std::string format_duration_ns(double ns);
// "1.5 GiB" from bytes.
std::string format_bytes(double bytes);

// Reads a whole file; throws Error(bad_input) naming the path when it cannot be read.
std::string read_file(const std::filesystem::path& path);
// Writes via a temporary file and rename, so a reader never sees half a file.
// Throws Error(runtime) naming the path on failure.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

} // namespace kforge
