// Snapshots of a task's files and the task rebuilt from them. The rebuild goes through files on
// disk rather than a second in-memory parser so there is exactly one task loader (core/task.cpp).
#include "archive/run_task.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "util/error.hpp"
#include "util/log.hpp"
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

ScratchFolder::ScratchFolder()
{
    std::string pattern = (fs::temp_directory_path() / "kforge-task-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
        fail_runtime("cannot create a temporary folder in {}: {}",
                     fs::temp_directory_path().string(), std::strerror(errno));
    m_path = pattern;
}

ScratchFolder::~ScratchFolder()
{
    std::error_code ec;
    fs::remove_all(m_path, ec);
}

Json snapshot_task_files(const Task& task)
{
    Json files = Json::object();
    add_file(files, task, task.reference);
    for (const auto& seed : task.seeds)
        add_file(files, task, seed);
    return files;
}

Task materialize_run_task(const RunInfo& run, std::string_view archive_label, const fs::path& folder)
{
    if (run.task_spec.empty())
        fail_input("{}: the run record holds no task spec snapshot", archive_label);
    if (!run.task_files.is_object())
        fail_input("{}: the run's task_files snapshot is not an object", archive_label);
    for (const auto& [name, source] : run.task_files.items()) {
        fs::path relative = fs::path(name).lexically_normal();
        if (relative.empty() || relative.is_absolute() || *relative.begin() == "..")
            fail_input("{}: task file '{}' in the run's snapshot leaves its folder", archive_label,
                       name);
        if (!source.is_string())
            fail_input("{}: task file '{}' in the run's snapshot is not text", archive_label, name);
        fs::create_directories((folder / relative).parent_path());
        write_file_atomic(folder / relative, source.get<std::string>());
    }
    fs::path spec = folder / "task-spec.json";
    write_file_atomic(spec, run.task_spec);
    Task task;
    try {
        task = load_task(spec);
    } catch (const Error& e) {
        // Messages name the temporary copy; say where the spec really came from.
        fail_input("{}: the run's task snapshot does not load: {}", archive_label,
                   replace_all(e.what(), folder.string() + "/", ""));
    }
    if (!run.task_hash.empty() && task.spec_hash != run.task_hash)
        log_warn("{}: the task rebuilt from the run's snapshot hashes to {}, the run recorded {}",
                 archive_label, task.spec_hash, run.task_hash);
    return task;
}

Task load_run_task(const RunInfo& run, std::string_view archive_label)
{
    ScratchFolder scratch;
    Task task = materialize_run_task(run, archive_label, scratch.path());
    // Paths relative to the (vanished) scratch folder, as the spec names them.
    task.spec_path = task.spec_path.filename();
    task.reference.path = task.reference.path.lexically_relative(scratch.path());
    for (auto& seed : task.seeds)
        seed.path = seed.path.lexically_relative(scratch.path());
    return task;
}

} // namespace kforge
