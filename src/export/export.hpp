// The export room's entry: one candidate of a run archive as files nvcc (and PyTorch) build as they
// are, for `kforge export` and any other front end.
//
// What the files hold and how they are made: export.cpp (the .cu and its provenance comment),
// source.hpp (the device code made fit for nvcc), host_code.hpp (the launcher, its header and the
// PyTorch operator and loader, generated from the candidate's launch plan).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kforge {

// What the export holds beside the device code.
enum class HostCode
{
    none,     // the device code alone; kforge's launch plan is described in the comment
    launcher, // kforge_<task>() and FILE.h
    torch     // the launcher and the PyTorch operator kforge::<task>, and FILE_load.py
};

struct ExportOptions
{
    std::string archive_path;
    bool best = false;                   // the best correct candidate, else candidate_id
    std::optional<int64_t> candidate_id;
    std::string output;                  // the .cu to write, or "-" for stdout (the .cu alone)
    HostCode host = HostCode::none;      // with host code, `output` names a .cu file
};

// Writes the export of the chosen candidate: FILE.cu, and beside it FILE.h (launcher) or
// FILE_load.py with the imported program (torch). Every file it would write is checked to be a
// regular file (or new) before the archive is read; each is written atomically. Returns the exit
// code (0); throws Error(bad_input) for a candidate the archive lacks or a plan host code cannot
// run, Error(runtime) for I/O.
int run_export(const ExportOptions& options);

} // namespace kforge
