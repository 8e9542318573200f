// Turning an NVRTC program log into what kforge stores and what a model reads.
//
// An NVRTC log is a sequence of paragraphs separated by blank lines: front-end diagnostics
// ("candidate.cu(12): error: ..." with the source line, a caret and instantiation context),
// ptxas lines ("ptxas info    : Used 48 registers, ..."), and a summary ("2 errors detected in
// the compilation of ..."). parse_ptxas_report() (compile.hpp) reads the ptxas part.
#pragma once

#include <string>
#include <string_view>

namespace kforge {

// The most a compile message for a model may hold, and the most errors it lists.
inline constexpr size_t k_max_compile_message_chars = 3000;
inline constexpr size_t k_max_compile_message_errors = 8;

// The log without host paths and without diagnostics about kforge's own prelude:
//  - toolkit include folders become "<cuda>/include/...", any other absolute path its last
//    component, so no host path reaches a model, an archive or an export;
//  - the "incompatible redefinition of INFINITY/NAN" warnings that appear when a candidate pulls
//    in <cuda/std/cmath> after the prelude are dropped (they are about kforge's text).
std::string sanitize_nvrtc_log(std::string_view log);

// The first errors of a (sanitized) log, with their source lines and context, at most
// k_max_compile_message_errors of them and about k_max_compile_message_chars in all, plus the
// summary line and a note of how many were left out. Line numbers are the candidate's own.
std::string trim_log_for_model(std::string_view sanitized_log);

} // namespace kforge
