// Screening a candidate's source before NVRTC sees it (the rules behind screen_source()).
//
// Rules, each with why it exists (hack numbers refer to research/kernel-agents.md §3):
//
//  1. Includes. Only CUDA toolkit headers (files that exist under <cuda>/include/cccl or
//     <cuda>/include) and kforge's shims (prelude.hpp) may be included, by a literal name: no
//     absolute path, no `.` or `..` component, no macro-expanded name, no #include_next, #import
//     or #embed, and __has_include only of an allowed name. NVRTC opens absolute and relative
//     paths on the host and echoes the file's lines in its errors, so without this rule a
//     candidate could read any host file into the log the model sees. The scan follows the
//     preprocessor exactly as NVRTC's front end does (measured on 13.0): backslash-newline
//     splices, `%:` digraphs, comments anywhere in a directive (even across lines), raw strings.
//     As a second line of defence every physical line that looks like an include directive is
//     checked too, even inside a comment or string, so a lexer disagreement cannot open a hole.
//  2. Forbidden patterns (Task::forbid): regexes over the source with comments removed and
//     literal contents blanked, e.g. reduced-precision types in an fp32 task (hack 12).
//     A macro can assemble a forbidden name from pieces; verification tolerances remain the real
//     defence, this rule only tells the model early.
//  3. Missing kernels: every kernel the plan launches must be a __global__ function of the source
//     (a plan_error; stops decoy plans naming nothing, hack 16).
//  4. Device-side launches: `<<<...>>>` and the device runtime's launch, graph-launch and stream
//     APIs. kforge launches every kernel itself from the plan and counts the launches; work
//     started from the device hides from that count and from the timed range (hacks 3 and 8;
//     research/evaluator.md §6.4). NVRTC without -rdc rejects most of these anyway, with a
//     message that does not say why.
//  5. Clock reads: %globaltimer, %clock/%clock64 in inline PTX, clock()/clock64(), and the
//     cuda::ptx sreg getters. A kernel's outputs must be a pure function of its inputs; a clock is
//     how a kernel can tell a verification launch from a timed one and behave differently in each
//     (hack 11, drift after the check; re-verification sees only the last timed launch).
//
// Not screenable, left to the worker: infinite loops (the launch deadline kills them), state kept
// in __device__ globals (hack 7; defeated by fresh inputs and re-verification), out-of-bounds
// writes (hack 21; canaries).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

// The source as the preprocessor's tokenizer sees it. `text` has backslash-newline splices
// removed and each comment replaced by one space; `code` is the same with the contents of string
// and character literals (raw ones included) blanked. Both have one entry in `line` (1-based
// physical line) and `offset` (byte offset in the original) per character.
struct LexedSource {
    std::string text;
    std::string code;
    std::vector<int> line;
    std::vector<size_t> offset;
};

LexedSource lex_source(std::string_view source);

// A preprocessing directive: `name` is the identifier after `#` (or `%:`), empty for a null
// directive or when something else follows; [args_begin, args_end) is the rest of its logical
// line in LexedSource::text.
struct Directive {
    std::string name;
    size_t hash_at = 0;
    size_t args_begin = 0;
    size_t args_end = 0;
    int line = 0;
};

std::vector<Directive> find_directives(const LexedSource& lexed);

// One #include (or __has_include) that the screen found.
struct ScreenedInclude {
    int line = 0;
    std::string name;          // as written between the delimiters; empty when not a literal
    bool angled = false;
    std::string form;          // "#include", "#include_next", "__has_include", ...
    size_t open_offset = 0;    // original offset of the opening delimiter (`"` or `<`)
    size_t close_offset = 0;   // original offset of the closing delimiter
};

// Every include-like construct of the source, by the exact lexer and by the line-based backstop.
std::vector<ScreenedInclude> scan_includes(std::string_view source);

// "" when `name` may be included, otherwise why not (without the line).
std::string check_include_name(std::string_view name);

// Problems with the source's includes, one message per offending line; empty when all are fine.
std::vector<std::string> screen_includes(std::string_view source);

// The source with each allowed quoted include rewritten to angle brackets (same length, so lines
// and columns stay), so NVRTC never looks for it next to the (nameless) candidate file, i.e. in
// the compiling process's working directory.
std::string angle_quoted_includes(std::string_view source);

} // namespace kforge
