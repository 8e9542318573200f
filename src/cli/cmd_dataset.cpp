// `kforge dataset ARCHIVE... -o FILE.jsonl`: runs as training data, one JSON line per candidate and
// per model call that left no candidate (kforge.dataset/1, docs/dataset.md).
//
// Records stream: candidates and calls are read one at a time in id order and written as they come,
// so a long run never sits in memory; what is kept per archive is a number per correct candidate
// (for its children's improvement) and the ids of the calls candidates named. Each archive is read
// in one read transaction, so a run that is still writing gives one consistent snapshot. Every
// archive is opened before anything is written, and a file is written beside FILE and renamed into
// place only when every archive has been read: a bad archive, a damaged page found halfway or
// Ctrl-C leave no partial FILE.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include <unistd.h>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "cli/app.hpp"
#include "cli/dataset_record.hpp"
#include "search/budget.hpp"
#include "util/error.hpp"
#include "util/text.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

enum class DatasetFilter
{
    all,      // every candidate and every model call without a candidate
    correct,  // candidates whose verdict is correct
    improving // Improvement::improving (dataset_record.hpp)
};

struct DatasetOptions
{
    std::vector<std::string> archives;
    std::string output;
    DatasetFilter only = DatasetFilter::all;
    bool force = false;
};

struct DatasetCounts
{
    int64_t candidates = 0;
    int64_t with_call = 0; // candidate records carrying their model call
    int64_t calls = 0;     // records of model calls without a candidate
    int64_t plan_calls = 0; // planner calls inside candidate records (two-phase proposals)
};

// Where records go: stdout, or a file beside the output that becomes it in finish(). Destroyed
// unfinished, it removes that file.
class RecordSink
{
public:
    explicit RecordSink(const std::string& output) : m_output(output)
    {
        if (output == "-") {
            m_file = stdout;
            return;
        }
        // A FIFO or a device at `output` is refused, never replaced; a link leads to its file.
        m_output = output_file_target(output).string();
        m_temporary = m_output + fmt::format(".tmp{}", ::getpid());
        m_file = std::fopen(m_temporary.c_str(), "wbx");
        if (!m_file)
            fail_runtime("{}: cannot write {}: {}", output, m_temporary, std::strerror(errno));
    }
    RecordSink(const RecordSink&) = delete;
    RecordSink& operator=(const RecordSink&) = delete;
    ~RecordSink()
    {
        if (m_file && m_file != stdout) {
            std::fclose(m_file);
            ::unlink(m_temporary.c_str());
        }
    }

    void write(const Json& record)
    {
        std::string line = record.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
        if (std::fwrite(line.data(), 1, line.size(), m_file) != line.size())
            fail_runtime("{}: write failed: {}", where(), std::strerror(errno));
        ++m_records;
    }

    // Flushes, and puts the file in place.
    void finish()
    {
        if (std::fflush(m_file) != 0)
            fail_runtime("{}: write failed: {}", where(), std::strerror(errno));
        if (m_file == stdout)
            return;
        ::fsync(::fileno(m_file));
        bool closed = std::fclose(m_file) == 0;
        m_file = nullptr;
        if (!closed || std::rename(m_temporary.c_str(), m_output.c_str()) != 0) {
            int saved = errno;
            ::unlink(m_temporary.c_str());
            fail_runtime("{}: cannot put the records in place: {}", m_output, std::strerror(saved));
        }
    }

    int64_t records() const { return m_records; }

private:
    std::string where() const { return m_output == "-" ? "stdout" : m_temporary; }

    std::string m_output;
    std::string m_temporary;
    FILE* m_file = nullptr;
    int64_t m_records = 0;
};

void stop_if_interrupted()
{
    if (interrupt_requested())
        fail(ErrorKind::interrupted, "interrupted");
}

bool keep(DatasetFilter only, const Candidate& candidate, const Improvement& improvement)
{
    switch (only) {
    case DatasetFilter::all:
        return true;
    case DatasetFilter::correct:
        return candidate.evaluation.verdict.is_correct();
    case DatasetFilter::improving:
        return improvement.improving;
    }
    return true;
}

// Writes the records of one archive, read in one snapshot.
void write_archive(Archive& archive, const DatasetOptions& options, RecordSink& sink,
                   DatasetCounts& counts)
{
    archive.atomically([&] {
        DatasetRun run{archive.path().filename().string(), archive.run_info(), archive.baselines()};
        std::unordered_map<int64_t, double> fitness_of; // correct candidates with a fitness
        std::unordered_set<int64_t> named_calls;        // calls some candidate came from
        std::optional<double> best;
        archive.for_each_candidate([&](const Candidate& candidate) {
            stop_if_interrupted();
            std::optional<double> parent_fitness;
            if (candidate.parent_id)
                if (auto it = fitness_of.find(*candidate.parent_id); it != fitness_of.end())
                    parent_fitness = it->second;
            Improvement improvement = judge_improvement(candidate, parent_fitness, best);
            if (const auto& fitness = candidate.evaluation.fitness;
                fitness && candidate.evaluation.verdict.is_correct()) {
                fitness_of[candidate.id] = *fitness;
                best = std::max(best.value_or(*fitness), *fitness);
            }
            if (candidate.llm_call_id)
                named_calls.insert(*candidate.llm_call_id);
            std::optional<CandidatePlan> plan = archive.candidate_plan(candidate.id);
            if (plan)
                named_calls.insert(plan->call_ids.begin(), plan->call_ids.end());
            if (!keep(options.only, candidate, improvement))
                return;
            std::optional<LlmCallRecord> call;
            if (candidate.llm_call_id)
                call = archive.llm_call(*candidate.llm_call_id);
            Json plan_json;
            if (plan) {
                std::vector<LlmCallRecord> plan_calls; // the planner's, but for the record's own call
                for (int64_t id : plan->call_ids)
                    if (id != candidate.llm_call_id.value_or(0))
                        if (auto planner_call = archive.llm_call(id))
                            plan_calls.push_back(std::move(*planner_call));
                counts.plan_calls += static_cast<int64_t>(plan_calls.size());
                plan_json = plan_record(*plan, plan_calls);
            }
            sink.write(candidate_record(run, candidate, call ? &*call : nullptr, improvement, plan_json));
            ++counts.candidates;
            counts.with_call += call && is_model_call(*call) ? 1 : 0;
        });
        if (options.only != DatasetFilter::all)
            return;
        // Listed without their text; only the calls written are read in full.
        archive.for_each_llm_call(CallText::omit, [&](const LlmCallRecord& listed) {
            stop_if_interrupted();
            if (!is_model_call(listed) || named_calls.contains(listed.id))
                return;
            if (auto call = archive.llm_call(listed.id)) {
                sink.write(call_record(run, *call));
                ++counts.calls;
            }
        });
    });
}

bool same_file(const fs::path& a, const fs::path& b)
{
    std::error_code ec;
    return fs::equivalent(a, b, ec);
}

int run_dataset(const DatasetOptions& options)
{
    if (options.output != "-") {
        std::error_code ec;
        for (const auto& archive : options.archives)
            if (same_file(archive, options.output))
                fail(ErrorKind::usage, "-o {} names one of the archives; choose another file",
                     options.output);
        output_file_target(options.output); // refuses a directory, a FIFO or a device before any work
        if (fs::exists(options.output, ec) && !options.force)
            fail(ErrorKind::usage, "{} exists; pass --force to replace it", options.output);
    }
    // Every archive is checked before anything is written.
    for (const auto& path : options.archives)
        Archive::open(path, OpenMode::read_only);

    RecordSink sink(options.output);
    DatasetCounts counts;
    try {
        for (const auto& path : options.archives) {
            Archive archive = Archive::open(path, OpenMode::read_only);
            write_archive(archive, options, sink, counts);
            // A table the records need fails above; one they do not need (elite, search_state) is said.
            for (const auto& table : archive.missing_tables())
                log_warn("{}: damaged archive: table '{}' is missing (the dataset's records do not need it)", path,
                         table);
        }
        sink.finish();
    } catch (const Error& e) {
        if (options.output == "-")
            throw;
        throw Error(e.kind(), fmt::format("{}; {} was not written", e.what(), options.output));
    }
    std::string planners = counts.plan_calls > 0 ? fmt::format(" and {} planner calls", counts.plan_calls) : "";
    log_info("wrote {} record{} to {}: {} candidates ({} with their model call{}), {} model calls "
             "without a candidate, from {} archive{}",
             sink.records(), sink.records() == 1 ? "" : "s",
             options.output == "-" ? "stdout" : options.output, counts.candidates, counts.with_call, planners,
             counts.calls, options.archives.size(), options.archives.size() == 1 ? "" : "s");
    return k_exit_ok;
}

} // namespace

void add_dataset_command(CLI::App& app, CommandSlot& slot)
{
    auto options = std::make_shared<DatasetOptions>();
    auto* cmd = app.add_subcommand(
        "dataset", "write run archives as JSONL training data: one record per candidate (source, "
                   "verdict, times, the model call behind it) and per model call without one");
    cmd->add_option("ARCHIVE", options->archives, "run archives (.kforge)")->required();
    cmd->add_option("-o,--output", options->output, "file to write ('-' for stdout)")->required();
    cmd->add_option("--only", options->only,
                    "only candidates that are 'correct', or 'improving' (correct and faster than "
                    "their parent, or the archive's best so far)")
        ->transform(CLI::CheckedTransformer(std::map<std::string, DatasetFilter>{
            {"correct", DatasetFilter::correct}, {"improving", DatasetFilter::improving}}));
    cmd->add_flag("--force", options->force, "replace FILE if it exists");
    cmd->callback([options, &slot] { slot = [options] { return run_dataset(*options); }; });
}

} // namespace kforge
