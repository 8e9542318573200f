// Maps error kinds to the exit codes documented in `kforge --help`.
#include "util/error.hpp"

namespace kforge {

int exit_code_of(ErrorKind kind)
{
    switch (kind) {
    case ErrorKind::usage: return k_exit_usage;
    case ErrorKind::bad_input: return k_exit_bad_input;
    case ErrorKind::runtime: return k_exit_runtime;
    case ErrorKind::interrupted: return k_exit_interrupted;
    }
    return k_exit_runtime;
}

} // namespace kforge
