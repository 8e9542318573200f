// The headers kforge gives NVRTC itself: the candidate prelude and the standard-library shims.
//
// NVRTC has no C++ standard library, yet LLM-written CUDA includes <cstdint>, <cmath> or
// <cfloat> in nearly every file. Each shim is a short text of kforge's own, handed to NVRTC as an
// in-memory header under the standard name, so such an include resolves to the prelude's
// definitions and never to a host file. candidate_prelude() (compile.hpp) is the text pre-included
// before the candidate's first line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge {

// The name NVRTC knows the prelude by (in `-include` and in diagnostics).
inline constexpr std::string_view k_prelude_header_name = "kforge_prelude.h";

struct ShimHeader {
    std::string name;   // as written in an #include, e.g. "cstdint"
    std::string text;
};

// Every shim, in a fixed order (the cache key hashes them).
const std::vector<ShimHeader>& shim_headers();

// True when `name` is one of the shims.
bool is_shim_header(std::string_view name);

// "<cassert> <cfloat> ..." for messages.
std::string describe_shim_headers();

} // namespace kforge
