// Reading facts off a candidate's CUDA source without compiling it: kernel names, includes,
// forbidden patterns, and the normalised hash used to reject duplicates before compiling.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge {

// The source with comments replaced by spaces and string/char literal contents blanked (newlines
// kept, so line numbers still match). Preprocessor lines stay.
std::string strip_comments_and_strings(std::string_view source);

// The source with only comments blanked: inline PTX lives in string literals, so facts about the
// instructions a kernel uses (cp.async, mma.sync, wgmma) must be read from this form.
std::string strip_comments(std::string_view source);

// Names of `__global__` functions, in order of appearance.
std::vector<std::string> find_kernel_names(std::string_view source);

struct IncludeDirective {
    std::string path;   // as written between <> or ""
    bool angled = false;
    int line = 0;
};
std::vector<IncludeDirective> find_includes(std::string_view source);

// The names among `names` that the code (comments and strings left out) mentions as an identifier:
// the params that can change what NVRTC compiles. A param only the launch plan reads (a library
// step's ALGO, a grid size) is not among them, so its values share one compile.
std::vector<std::string> identifiers_used(std::string_view source, const std::vector<std::string>& names);

// Hash of the source with comments removed and whitespace runs collapsed, so two candidates that
// differ only in comments or formatting count as duplicates. The plan block is part of the
// comments, so the plan is hashed separately by the caller where it matters.
std::string normalized_source_hash(std::string_view source);

} // namespace kforge
