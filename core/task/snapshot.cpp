// A task's files as one JSON snapshot, and the snapshot written back to disk to be loaded again.
//
// Run archives keep a snapshot so that resume, inspect and export use the task the candidates were
// measured against; an MPI evaluation service on another host gets one so that its GPU workers load
// the controller's task without a shared file system. Loading always goes through files and
// load_task(), so there is exactly one task loader.
#include <fmt/format.h>

#include "core/task.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

void add_file(Json& files, const Task& task, const KernelFile& file)
{
    fs::path base = task.spec_path.empty() ? fs::path() : task.spec_path.parent_path();
    fs::path relative = base.empty() ? file.path : file.path.lexically_relative(base);
    if (relative.empty())
        relative = file.path.filename();
    files[relative.generic_string()] = file.source;
}

} // namespace

Json snapshot_task_files(const Task& task)
{
    Json files = Json::object();
    add_file(files, task, task.reference);
    for (const auto& seed : task.seeds)
        add_file(files, task, seed);
    return files;
}

fs::path write_task_snapshot(const std::string& spec_text, const Json& files, const fs::path& folder,
                             const std::string& label)
{
    if (!files.is_object())
        fail_input("{}: the task files are not an object", label);
    for (const auto& [name, source] : files.items()) {
        fs::path relative = fs::path(name).lexically_normal();
        if (relative.empty() || relative.is_absolute() || *relative.begin() == "..")
            fail_input("{}: task file '{}' leaves its folder", label, name);
        if (!source.is_string())
            fail_input("{}: task file '{}' is not text", label, name);
        fs::create_directories((folder / relative).parent_path());
        write_file_atomic(folder / relative, source.get<std::string>());
    }
    fs::path spec = folder / "task-spec.json";
    write_file_atomic(spec, spec_text);
    return spec;
}

} // namespace kforge
