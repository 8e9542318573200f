// The suite manifest (suite.json) and its folder; see manifest.hpp for the layout and the
// locking rules. The JSON is written with the fields in a fixed order and read back strictly (an
// unknown state or kind is an error naming the field), so a hand-edited manifest that kforge
// would misread is refused rather than guessed at.
#include "suite/manifest.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <set>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/file_lock.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

constexpr ProblemState k_all_states[] = {ProblemState::waiting, ProblemState::running, ProblemState::finished,
                                          ProblemState::failed, ProblemState::skipped};

Json optional_number(const std::optional<double>& value)
{
    return value ? Json(*value) : Json();
}

std::optional<double> read_optional_number(const JsonReader& reader, std::string_view key)
{
    if (!reader.has(key) || reader.at(key).json().is_null())
        return std::nullopt;
    return reader.at(key).as_number();
}

std::optional<std::string> read_optional_string(const JsonReader& reader, std::string_view key)
{
    if (!reader.has(key) || reader.at(key).json().is_null())
        return std::nullopt;
    return reader.at(key).as_string();
}

// An optional whole number in [lo, hi] (a double cast to an integer would be undefined past its
// range: a hand-edited 1e300 must be refused, not converted).
std::optional<int64_t> read_optional_count(const JsonReader& reader, std::string_view key, int64_t lo, int64_t hi)
{
    if (!reader.has(key) || reader.at(key).json().is_null())
        return std::nullopt;
    int64_t value = reader.at(key).as_int();
    if (value < lo || value > hi)
        reader.at(key).fail(fmt::format("expected a whole number from {} to {}, found {}", lo, hi, value));
    return value;
}

// A path kforge stores for a file it writes (archives, logs, imported specs): relative to the suite
// folder and inside it. A manifest edited to name /etc/passwd or ../../elsewhere would otherwise
// have a run write there.
std::string read_inside_path(const JsonReader& reader, std::string_view key)
{
    std::string stored = reader.at(key).as_string();
    fs::path path(stored);
    bool inside = !stored.empty() && path.is_relative();
    for (const auto& part : path)
        inside = inside && part != ".." && part != ".";
    if (!inside)
        reader.at(key).fail(fmt::format("expected a path inside the suite folder (relative, without '..'), found \"{}\"",
                                        stored));
    return stored;
}

// A problem id names files (runs/ID.kforge, logs/ID.log): a file stem of letters, digits, '_', '-'
// and '.', not starting with '.'.
bool valid_problem_id(const std::string& id)
{
    return !id.empty() && id.size() <= 255 && id[0] != '.' &&
           std::all_of(id.begin(), id.end(), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
           });
}

std::vector<std::string> read_strings(const JsonReader& reader, std::string_view key)
{
    std::vector<std::string> out;
    if (reader.has(key))
        for (const auto& item : reader.at(key).items())
            out.push_back(item.as_string());
    return out;
}

} // namespace

std::string_view problem_kind_name(ProblemKind kind)
{
    return kind == ProblemKind::python ? "python" : "spec";
}

std::string_view problem_state_name(ProblemState state)
{
    switch (state) {
    case ProblemState::waiting: return "waiting";
    case ProblemState::running: return "running";
    case ProblemState::finished: return "finished";
    case ProblemState::failed: return "failed";
    case ProblemState::skipped: return "skipped";
    }
    return "waiting";
}

double epoch_now()
{
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Json ProblemSession::to_json() const
{
    return Json{{"command", command},
                {"host", host},
                {"gpu", gpu},
                {"started_at", started_at},
                {"ended_at", optional_number(ended_at)},
                {"exit_code", exit_code ? Json(*exit_code) : Json()},
                {"exit", exit},
                {"busy_s", busy_s},
                {"search_s", search_s},
                {"cost_cap", optional_number(cost_cap)}};
}

ProblemSession ProblemSession::from_json(const JsonReader& reader)
{
    ProblemSession session;
    session.command = reader.get_string("command", "optimize");
    session.host = reader.get_string("host", "");
    session.gpu = static_cast<int>(read_optional_count(reader, "gpu", -1, 1 << 20).value_or(-1));
    session.started_at = reader.get_number("started_at", 0);
    session.ended_at = read_optional_number(reader, "ended_at");
    if (auto code = read_optional_count(reader, "exit_code", 0, 128 + 64))
        session.exit_code = static_cast<int>(*code);
    session.exit = reader.get_string("exit", "");
    session.busy_s = reader.get_number("busy_s", 0);
    session.search_s = reader.get_number("search_s", 0);
    session.cost_cap = read_optional_number(reader, "cost_cap");
    return session;
}

Json SuiteProblem::to_json() const
{
    Json list = Json::array();
    for (const auto& session : sessions)
        list.push_back(session.to_json());
    return Json{{"id", id},
                {"source", source},
                {"source_relative", source_relative},
                {"kind", problem_kind_name(kind)},
                {"spec", spec},
                {"archive", archive},
                {"log", log},
                {"state", problem_state_name(state)},
                {"reason", reason},
                {"model", model},
                {"cost_usd", cost_usd},
                {"source_hash", source_hash},
                {"sessions", list}};
}

SuiteProblem SuiteProblem::from_json(const JsonReader& reader)
{
    SuiteProblem p;
    p.id = reader.at("id").as_string();
    if (!valid_problem_id(p.id))
        reader.at("id").fail("expected a problem id: a file stem of letters, digits, '_', '-' and '.'");
    p.source = reader.at("source").as_string();
    p.source_relative = reader.get_string("source_relative", "");
    std::string kind = reader.at("kind").as_string();
    if (kind != "python" && kind != "spec")
        reader.at("kind").fail(fmt::format("expected \"python\" or \"spec\", found \"{}\"", kind));
    p.kind = kind == "python" ? ProblemKind::python : ProblemKind::spec;
    // A task spec given as it is may be anywhere (it is only read); what the suite writes is inside.
    p.spec = p.kind == ProblemKind::python ? read_inside_path(reader, "spec") : reader.at("spec").as_string();
    p.archive = read_inside_path(reader, "archive");
    p.log = read_inside_path(reader, "log");
    std::string state = reader.at("state").as_string();
    auto known = std::find_if(std::begin(k_all_states), std::end(k_all_states),
                              [&](ProblemState s) { return problem_state_name(s) == state; });
    if (known == std::end(k_all_states))
        reader.at("state").fail(fmt::format("expected waiting, running, finished, failed or skipped, found \"{}\"", state));
    p.state = *known;
    p.reason = reader.get_string("reason", "");
    p.model = reader.get_string("model", "");
    p.cost_usd = reader.get_number("cost_usd", 0);
    p.source_hash = reader.get_string("source_hash", "");
    if (reader.has("sessions"))
        for (const auto& item : reader.at("sessions").items())
            p.sessions.push_back(ProblemSession::from_json(item));
    return p;
}

Json SuiteSettings::to_json() const
{
    return Json{{"budget", budget ? Json(*budget) : Json()},
                {"time", time ? Json(*time) : Json()},
                {"max_cost", optional_number(max_cost)},
                {"models", models},
                {"optimize_args", optimize_args},
                {"parallel", parallel ? Json(*parallel) : Json()},
                {"knowledge", knowledge ? Json(*knowledge) : Json()},
                {"no_knowledge", no_knowledge}};
}

SuiteSettings SuiteSettings::from_json(const JsonReader& reader)
{
    SuiteSettings s;
    s.budget = read_optional_count(reader, "budget", 1, INT64_MAX);
    s.time = read_optional_string(reader, "time");
    s.max_cost = read_optional_number(reader, "max_cost");
    s.models = read_strings(reader, "models");
    s.optimize_args = read_strings(reader, "optimize_args");
    if (auto parallel = read_optional_count(reader, "parallel", 1, 1 << 16))
        s.parallel = static_cast<int>(*parallel);
    s.knowledge = read_optional_string(reader, "knowledge");
    s.no_knowledge = reader.get_bool("no_knowledge", false);
    return s;
}

SuiteProblem* SuiteManifest::find(const std::string& id)
{
    auto it = std::find_if(problems.begin(), problems.end(), [&](const SuiteProblem& p) { return p.id == id; });
    return it == problems.end() ? nullptr : &*it;
}

const SuiteProblem* SuiteManifest::find(const std::string& id) const
{
    return const_cast<SuiteManifest*>(this)->find(id);
}

int SuiteManifest::index_of(const std::string& id) const
{
    for (size_t i = 0; i < problems.size(); ++i)
        if (problems[i].id == id)
            return static_cast<int>(i);
    return -1;
}

Json SuiteManifest::to_json() const
{
    Json list = Json::array();
    for (const auto& p : problems)
        list.push_back(p.to_json());
    return Json{{"schema", k_suite_schema},
                {"created_at", created_at},
                {"updated_at", updated_at},
                {"settings", settings.to_json()},
                {"problems", list},
                {"runs", runs}};
}

SuiteManifest SuiteManifest::from_json(const Json& json, const std::string& what)
{
    JsonReader reader(json, what);
    if (!reader.is_object() || !reader.has("schema"))
        reader.fail(fmt::format("not a kforge suite manifest (no \"schema\": \"{}\")", k_suite_schema));
    std::string schema = reader.at("schema").as_string();
    if (schema != k_suite_schema)
        reader.at("schema").fail(fmt::format("expected \"{}\", found \"{}\" (written by another kforge version?)",
                                             k_suite_schema, schema));
    SuiteManifest m;
    m.created_at = reader.get_number("created_at", 0);
    m.updated_at = reader.get_number("updated_at", 0);
    if (reader.has("settings"))
        m.settings = SuiteSettings::from_json(reader.at("settings"));
    if (reader.has("problems"))
        for (const auto& item : reader.at("problems").items())
            m.problems.push_back(SuiteProblem::from_json(item));
    // kforge writes them sorted (--shard counts in that order); a hand-edited list is sorted again.
    std::sort(m.problems.begin(), m.problems.end(),
              [](const SuiteProblem& a, const SuiteProblem& b) { return a.id < b.id; });
    std::set<std::string> ids;
    for (const auto& p : m.problems)
        if (!ids.insert(p.id).second)
            reader.fail(fmt::format("problem id '{}' appears twice", p.id));
    // The records are read field by field where they are shown, each field's absence or null taken
    // as unknown (a process killed before it wrote its end leaves some); each must be an object.
    if (auto runs = reader.find("runs")) {
        for (const auto& run : runs->items())
            if (!run.is_object())
                run.fail(fmt::format("expected the record of a `suite run` process (an object), found {}",
                                     json_type_name(run.json())));
        m.runs = runs->json();
    }
    return m;
}

SuiteFolder::SuiteFolder(fs::path root, bool create) : m_root(std::move(root))
{
    std::error_code ec;
    if (create) {
        for (const char* sub : {"problems", "runs", "logs"}) {
            fs::create_directories(m_root / sub, ec);
            if (ec)
                fail_runtime("cannot create {}: {}", (m_root / sub).string(), ec.message());
        }
        return;
    }
    if (!fs::is_regular_file(manifest_path(), ec))
        fail_input("{}: not a kforge suite folder (it has no suite.json; `kforge suite run ... -o {}` makes one)",
                   m_root.string(), m_root.string());
}

fs::path SuiteFolder::resolve(const std::string& stored) const
{
    fs::path path(stored);
    return path.is_absolute() ? path : m_root / path;
}

fs::path SuiteFolder::claim_path(const std::string& id) const
{
    return m_root / "runs" / (id + ".claim");
}

std::optional<SuiteManifest> SuiteFolder::read() const
{
    std::error_code ec;
    if (!fs::exists(manifest_path(), ec))
        return std::nullopt;
    std::string label = manifest_path().string();
    return SuiteManifest::from_json(parse_json_text(read_file(manifest_path()), label), label);
}

SuiteManifest SuiteFolder::update(const std::function<void(SuiteManifest&)>& change) const
{
    FileLock lock = FileLock::acquire(m_root / "suite.json.lock", LockWait::block);
    std::optional<SuiteManifest> current = read();
    SuiteManifest manifest = current ? std::move(*current) : SuiteManifest{};
    if (manifest.created_at == 0)
        manifest.created_at = epoch_now();
    change(manifest);
    std::sort(manifest.problems.begin(), manifest.problems.end(),
              [](const SuiteProblem& a, const SuiteProblem& b) { return a.id < b.id; });
    manifest.updated_at = epoch_now();
    write_file_atomic(manifest_path(), manifest.to_json().dump(2) + "\n");
    return manifest;
}

} // namespace kforge
