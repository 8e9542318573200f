// A fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) in a helper process prints where it
// happened before the process dies, so a crash seen on a remote GPU machine can be located later.
#pragma once

namespace kforge {

// Installs the handlers for this process. On a fatal signal the handler writes to stderr one line
// naming `process` and the signal, then the return addresses as "binary(+offset)" (resolve them with
// `addr2line -f -C -e <unstripped binary> offset` against the same build), then lets the signal kill
// the process as before, so the parent still sees the signal in the exit status. Idempotent.
void install_crash_trace(const char* process);

} // namespace kforge
