// String and file helpers that the standard library lacks.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "util/limits.hpp"

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

// Reads a whole regular file of at most `max_bytes` (util/limits.hpp). Throws Error(bad_input)
// naming the path and `what` ("task spec", "kernel source") when it cannot be read, is a directory,
// a FIFO or a device (never opened for long: /dev/zero is refused, not read), or is too large.
std::string read_file(const std::filesystem::path& path, uint64_t max_bytes = k_max_read_bytes,
                      std::string_view what = "file");
// Where writing `path` may go: `path` itself when it is a regular file or does not exist, or the
// regular file a symbolic link at `path` leads to. Throws Error(usage) when it names a directory,
// a FIFO, a device or a socket (replacing one would destroy it, and writing into one is not
// writing a file) or a dangling link.
std::filesystem::path output_file_target(const std::filesystem::path& path);
// Writes via a temporary file beside the target and a rename, so a reader never sees half a file;
// the target is output_file_target(path) (a non-regular `path` is refused, never replaced).
// Throws Error(runtime) naming the path on failure.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

} // namespace kforge
