// From `suite run`'s PATH arguments to the suite's problems; see problems.hpp.
//
// A folder scan must not turn helper files into problems (a fixture folder holds expected results
// and shared formulas beside its programs), so it looks inside each candidate file: a program
// must define `class Model` and `get_inputs`, a spec must say it is kforge.task/1. A file named
// on the command line is taken at its word instead, so a mistake there is an error the user sees.
#include "suite/problems.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "core/task.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

bool has_extension(const fs::path& path, std::string_view ext)
{
    return to_lower(path.extension().string()) == ext;
}

// The spec's JSON when `path` holds a kforge.task/1 spec; null otherwise.
Json task_spec_json(const fs::path& path)
{
    std::string text;
    try {
        text = read_file(path);
    } catch (const Error&) {
        return Json();
    }
    Json json = Json::parse(text, nullptr, false);
    if (!json.is_object() || json.value("schema", std::string()) != std::string(k_task_schema))
        return Json();
    return json;
}

bool looks_like_program(const fs::path& path)
{
    std::string text;
    try {
        text = read_file(path);
    } catch (const Error&) {
        return false;
    }
    return text.find("class Model") != std::string::npos && text.find("def get_inputs") != std::string::npos;
}

// The program a spec's {"torch": FILE} reference names, absolute; empty for other specs.
fs::path torch_program_of(const fs::path& spec_path, const Json& spec)
{
    if (!spec.contains("reference") || !spec["reference"].is_object() || !spec["reference"].contains("torch") ||
        !spec["reference"]["torch"].is_string())
        return {};
    return (spec_path.parent_path() / spec["reference"]["torch"].get<std::string>()).lexically_normal();
}

void scan_folder(const fs::path& folder, std::vector<FoundProblem>& out)
{
    std::error_code ec;
    if (fs::exists(folder / "suite.json", ec)) {
        log_debug("{}: a suite folder, not scanned for problems", folder.string());
        return;
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(folder, ec))
        if (entry.is_regular_file(ec))
            files.push_back(fs::absolute(entry.path()).lexically_normal());
    if (ec)
        fail_input("{}: cannot list the folder: {}", folder.string(), ec.message());
    std::sort(files.begin(), files.end());
    std::vector<FoundProblem> specs, programs;
    std::set<fs::path> imported; // programs that a spec in this folder stands for
    for (const auto& file : files) {
        if (has_extension(file, ".json")) {
            Json spec = task_spec_json(file);
            if (spec.is_null()) {
                log_debug("{}: not a kforge.task/1 spec, left out", file.string());
                continue;
            }
            specs.push_back({file, ProblemKind::spec});
            if (fs::path program = torch_program_of(file, spec); !program.empty())
                imported.insert(program);
        } else if (has_extension(file, ".py")) {
            if (looks_like_program(file))
                programs.push_back({file, ProblemKind::python});
            else
                log_debug("{}: defines no class Model and get_inputs, left out", file.string());
        }
    }
    size_t before = out.size();
    for (const auto& program : programs) {
        if (imported.count(program.source))
            log_debug("{}: its imported spec in the same folder stands for it", program.source.string());
        else
            out.push_back(program);
    }
    out.insert(out.end(), specs.begin(), specs.end());
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(before), out.end(),
              [](const FoundProblem& a, const FoundProblem& b) { return a.source < b.source; });
    if (out.size() == before)
        fail_input("{}: no problem files in this folder (PyTorch programs with class Model and get_inputs, or "
                   "kforge.task/1 specs)",
                   folder.string());
}

// `source` from the suite folder `root`, both absolute and normalised: "../regions/x.py".
std::string relative_source(const fs::path& source, const fs::path& root)
{
    return fs::path(source).lexically_relative(root).generic_string();
}

// Points `problem` at `source`, its file at a new place. A spec is used where it is, so it moves
// with its source; an imported program's spec is the suite's own copy.
void move_source(SuiteProblem& problem, const fs::path& source)
{
    problem.source = source.string();
    if (problem.kind == ProblemKind::spec)
        problem.spec = problem.source;
}

// The id a source asks for: its stem, with anything but letters, digits, '_', '-' and '.' made '_'.
std::string base_id(const fs::path& source)
{
    std::string id = source.stem().string();
    for (char& c : id)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
            c = '_';
    if (id.empty() || id[0] == '.')
        id = "problem" + id;
    return id;
}

} // namespace

std::vector<FoundProblem> find_problem_sources(const std::vector<std::string>& paths)
{
    std::vector<FoundProblem> found;
    for (const auto& text : paths) {
        fs::path path = fs::absolute(text).lexically_normal();
        std::error_code ec;
        if (fs::is_directory(path, ec)) {
            scan_folder(path, found);
        } else if (!fs::exists(path, ec)) {
            fail_input("{}: no such file or folder", text);
        } else if (has_extension(path, ".py")) {
            found.push_back({path, ProblemKind::python});
        } else if (has_extension(path, ".json")) {
            if (task_spec_json(path).is_null())
                fail_input("{}: not a kforge.task/1 task spec (a problem is a PyTorch program .py or a task spec "
                           ".json)",
                           text);
            found.push_back({path, ProblemKind::spec});
        } else {
            fail_input("{}: not a problem file: give PyTorch programs (.py), task specs (.json) or folders of them",
                       text);
        }
    }
    std::vector<FoundProblem> unique;
    std::set<fs::path> seen;
    for (auto& problem : found)
        if (seen.insert(problem.source).second)
            unique.push_back(std::move(problem));
    return unique;
}

size_t add_new_problems(SuiteManifest& manifest, const std::vector<FoundProblem>& found, const fs::path& root)
{
    std::error_code ec;
    for (auto& p : manifest.problems) {
        if (p.source_relative.empty() && fs::exists(p.source, ec))
            p.source_relative = relative_source(p.source, root);
        else if (!p.source_relative.empty() && !fs::exists(p.source, ec) &&
                 fs::exists((root / p.source_relative).lexically_normal(), ec))
            move_source(p, (root / p.source_relative).lexically_normal());
    }
    // Stored sources first, so that a source named both as itself and beside a copy keeps its
    // problem; then places relative to the suite folder, each problem taken once.
    std::set<std::string> ids, taken;
    std::vector<const FoundProblem*> unmatched;
    for (const auto& p : manifest.problems)
        ids.insert(p.id);
    for (const auto& problem : found) {
        auto same = std::find_if(manifest.problems.begin(), manifest.problems.end(),
                                 [&](const SuiteProblem& p) { return p.source == problem.source.string(); });
        if (same != manifest.problems.end())
            taken.insert(same->id);
        else
            unmatched.push_back(&problem);
    }
    size_t added = 0;
    for (const FoundProblem* found_problem : unmatched) {
        const FoundProblem& problem = *found_problem;
        std::string relative = relative_source(problem.source, root);
        auto moved = std::find_if(manifest.problems.begin(), manifest.problems.end(), [&](const SuiteProblem& p) {
            return !p.source_relative.empty() && p.source_relative == relative && !taken.count(p.id);
        });
        if (moved != manifest.problems.end()) {
            log_info("{}: its source is now {} (the same place in the suite's moved or copied folder)", moved->id,
                     problem.source.string());
            move_source(*moved, problem.source);
            taken.insert(moved->id);
            continue;
        }
        std::string base = base_id(problem.source);
        std::string id = base;
        for (int n = 2; ids.count(id); ++n)
            id = fmt::format("{}-{}", base, n);
        SuiteProblem p;
        p.id = id;
        p.source = problem.source.string();
        p.source_relative = relative;
        p.kind = problem.kind;
        p.spec = problem.kind == ProblemKind::python
                     ? (fs::path("problems") / id / (problem.source.stem().string() + ".json")).string()
                     : problem.source.string();
        p.archive = (fs::path("runs") / (id + ".kforge")).string();
        p.log = (fs::path("logs") / (id + ".log")).string();
        try {
            p.source_hash = hash_hex(read_file(problem.source));
        } catch (const Error&) {
            p.source_hash.clear(); // unreadable now; its import or run will say why
        }
        manifest.problems.push_back(std::move(p));
        taken.insert(id);
        ids.insert(id);
        ++added;
    }
    std::sort(manifest.problems.begin(), manifest.problems.end(),
              [](const SuiteProblem& a, const SuiteProblem& b) { return a.id < b.id; });
    return added;
}

std::string source_stem(const SuiteProblem& problem)
{
    return fs::path(problem.source).stem().string();
}

bool problem_spec_ready(const SuiteFolder& folder, const SuiteProblem& problem)
{
    std::error_code ec;
    return fs::is_regular_file(folder.resolve(problem.spec), ec);
}

} // namespace kforge
