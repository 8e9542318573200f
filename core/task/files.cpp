// The files a task spec names (kernel sources, a PyTorch program), confined to the spec's folder: a
// spec someone hands you must not be able to read any other file of yours, since kernel sources go
// into prompts that are sent to remote models.
#include <filesystem>

#include <fmt/format.h>

#include "core/plan.hpp"
#include "core/source.hpp"
#include "core/task/parse.hpp"
#include "util/error.hpp"
#include "util/limits.hpp"
#include "util/text.hpp"

namespace kforge::task_parse {
namespace {

// The file a spec names at `field`, which must lie inside the spec's folder: a relative path without
// '..', whose real location (symbolic links resolved) is inside the folder's. A spec someone hands
// you must not be able to read any other file of yours: kernel sources go into prompts that are
// sent to remote models.
std::filesystem::path confined_path(const JsonReader& field, const std::filesystem::path& base_dir)
{
    namespace fs = std::filesystem;
    std::string name = field.as_string();
    if (name.empty())
        field.fail("expected a file name, found an empty string");
    fs::path relative(name);
    if (relative.is_absolute())
        field.fail(fmt::format("'{}' is an absolute path; a spec's files must lie in the spec's folder", name));
    for (const auto& part : relative)
        if (part == "..")
            field.fail(fmt::format("'{}' climbs out with '..'; a spec's files must lie in the spec's folder", name));
    fs::path folder = base_dir.empty() ? fs::path(".") : base_dir;
    fs::path path = folder / relative;
    std::error_code ec;
    fs::file_status status = fs::status(path, ec);
    if (status.type() == fs::file_type::not_found)
        field.fail(fmt::format("cannot read {}: no such file", path.string()));
    if (status.type() == fs::file_type::directory)
        field.fail(fmt::format("cannot read {}: it is a directory, not a kernel source", path.string()));
    fs::path real_folder = fs::canonical(folder, ec);
    fs::path real_file = ec ? fs::path() : fs::canonical(path, ec);
    if (ec)
        field.fail(fmt::format("cannot read {}: {}", path.string(), ec.message()));
    fs::path inside = real_file.lexically_relative(real_folder);
    if (inside.empty() || *inside.begin() == "..")
        field.fail(fmt::format("{} leads outside the spec's folder (to {}) through a symbolic link; a spec's files "
                               "must lie in the spec's folder",
                               path.string(), real_file.string()));
    return path;
}

} // namespace

// A file the spec names at `field` (confined_path), read within the source bound: its path and text.
KernelFile read_spec_file(const JsonReader& field, const std::filesystem::path& base_dir, const char* what)
{
    std::filesystem::path path = confined_path(field, base_dir);
    std::string source;
    try {
        source = read_file(path, k_max_source_bytes, what);
    } catch (const Error& e) {
        field.fail(e.what());
    }
    return KernelFile{path, std::move(source), {}};
}

KernelFile load_kernel_file(const JsonReader& field, const std::filesystem::path& base_dir,
                            const std::optional<Plan>& default_plan, const std::string& label)
{
    KernelFile file = read_spec_file(field, base_dir, "kernel source");
    const std::filesystem::path& path = file.path;
    try {
        if (auto json = extract_plan_json(file.source))
            file.plan = parse_plan(*json, fmt::format("{}: plan", path.string()));
        else if (default_plan)
            file.plan = *default_plan;
        else
            field.fail(fmt::format("{} has no kforge:plan block and the task has no default_plan",
                                   path.string()));
    } catch (const PlanError& e) {
        field.fail(fmt::format("{} ({})", e.what(), label));
    }
    return file;
}

} // namespace kforge::task_parse
