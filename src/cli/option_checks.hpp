// Checks on numeric and named command-line values, applied by CLI11 before a command runs.
//
// CLI11 converts "-1" into an unsigned option by wrapping it, accepts "nan" and "inf" for doubles
// and 1e99 for what becomes an integer; each option here states the range it accepts instead, and
// a value outside it is a usage error (exit 2) naming the option, the range and the value.
#pragma once

#include <cstdint>

#include <CLI/CLI.hpp>

namespace kforge {

// A whole number (decimal digits with an optional leading '-') in [low, high].
CLI::Validator whole_number(int64_t low, int64_t high);
// A whole number without a sign in [0, UINT64_MAX], for seeds and secrets.
CLI::Validator unsigned_number();
// A finite number in [low, high]; with `exclusive_low`, greater than `low`.
CLI::Validator real_number(double low, double high, bool exclusive_low = false);
// Any text but an empty or blank one: for text options whose empty value would read as "not given".
CLI::Validator non_empty();
// A GPU architecture NVRTC can compile for (sm_90a, sm_80, ...).
CLI::Validator gpu_arch();

} // namespace kforge
