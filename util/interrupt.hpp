// Ctrl-C handling: the one process-wide flag besides the log level.
//
// The first SIGINT/SIGTERM asks long work to stop at the next safe point (finish or mark in-flight
// candidates, keep the archive consistent); a second one means "now": the handler exits at once
// with status 130. SQLite's WAL keeps the archive consistent even then.
#pragma once

namespace kforge {

void install_interrupt_handler();
bool interrupt_requested();
// For tests and for the search loop's own stop conditions.
void request_interrupt();
void clear_interrupt();

} // namespace kforge
