// Ctrl-C handling: the one process-wide flag besides the log level.
//
// The first SIGINT/SIGTERM asks long work to stop at the next safe point (finish or mark in-flight
// candidates, keep the archive consistent); a second one means "now": the handler exits at once
// with status 130. SQLite's WAL keeps the archive consistent even then.
//
// A SIGTERM or SIGINT that follows the first SIGTERM within k_duplicate_term_window is the same
// request told twice, not a second one: SLURM ends a job step (time limit, scancel) by having
// slurmstepd send SIGTERM to every process of the step while srun forwards its own SIGTERM to the
// tasks, and a parent kforge (`suite run`) passes the stop on to its children as SIGINT, so one
// process gets two within milliseconds; only the SIGKILL after KillWait means "now".
#pragma once

#include <chrono>

namespace kforge {

inline constexpr std::chrono::milliseconds k_duplicate_term_window{1000};

void install_interrupt_handler();
// For kforge's worker processes: SIGINT and SIGTERM ignored (inherited by what they exec). Ctrl-C
// reaches the whole process group and SLURM signals every process of a job step, but stopping is
// the controller's decision: it finishes or marks the work in flight, then ends its workers.
void leave_interrupts_to_controller();
bool interrupt_requested();
// For tests and for the search loop's own stop conditions.
void request_interrupt();
void clear_interrupt();

} // namespace kforge
