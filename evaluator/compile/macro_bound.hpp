// A cheap bound on preprocessing, checked by the screen before NVRTC runs (macro_bound.cpp says how).
#pragma once

#include <cstdint>
#include <string>

#include "evaluator/compile/screen.hpp"
#include "util/limits.hpp"

namespace kforge {

// "" when the macros the source defines expand (with its other lines) to at most `max_tokens`
// tokens, counting every intermediate expansion; otherwise why not. Costs at most `max_tokens`
// steps and memory in proportion. Returns "" early when an interrupt is requested.
std::string check_macro_expansion(const LexedSource& lexed, uint64_t max_tokens = k_max_macro_tokens);

} // namespace kforge
