// Validation of CSR generators (core/task.hpp, CsrSpec), used by the task parser only.
#pragma once

#include <string>

#include "core/task.hpp"
#include "util/json_reader.hpp"

namespace kforge {

// Cross-argument rules, after every argument is parsed: each `csr_cols` names a `csr` argument,
// each `csr` argument has exactly one `csr_cols` partner, both are one-dimensional inputs. Throws
// Error(bad_input) at the offending `args[i]` path.
void check_csr_links(const JsonReader& args, const Task& task);

// Per-shape requirements of every CSR generator (window wide enough for the densest row, sigma in
// range, sizes that fit the integer types). Returns "" or the problem.
std::string check_csr_shape(const Task& task, const Shape& shape);

} // namespace kforge
