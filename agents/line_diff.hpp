// A unified diff of two texts, line by line, for showing a model what changed between two kernels.
#pragma once

#include <string>
#include <string_view>

namespace kforge {

// "@@ -a,b +c,d @@" hunks with `context` unchanged lines around each change; "" when the texts
// are equal. Past `max_lines` changed lines (or inputs too large to compare), it says so instead
// of listing them. Never throws for any input.
std::string unified_diff(std::string_view before, std::string_view after, size_t context = 3,
                         size_t max_lines = 400);

} // namespace kforge
