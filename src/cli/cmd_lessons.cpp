// `kforge lessons`: what the analyst has learnt, from the user-level knowledge base (default) or
// one run archive (--archive); filtered by task, category and tag; printed, exported as JSONL
// (one `kforge.lesson/1` object per line, the format --import reads), or imported from such a file
// into the knowledge base (how lessons move between machines; all of a file's lessons or none).
// With --techniques it shows instead what two-phase runs stored there: per task category, each
// technique's tries (tried, correct, improved, mean gain, predicted against measured) and the best
// schedules.
#include <map>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/knowledge_base.hpp"
#include "cli/app.hpp"
#include "cli/cmd_optimize_common.hpp"
#include "search/knowledge.hpp"
#include "search/lesson_file.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/limits.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

namespace kforge {
namespace {

struct LessonsOptions {
    LessonFilter filter;
    std::string archive_path;
    std::string knowledge_path;
    std::string export_path;
    std::string import_path;
    bool json = false;
    bool techniques = false;
};

struct Listed {
    Lesson lesson;
    std::string run_id;
};

std::filesystem::path knowledge_path(const LessonsOptions& options)
{
    return options.knowledge_path.empty() ? default_knowledge_path() : std::filesystem::path(options.knowledge_path);
}

// All or nothing: every line is read and checked before the knowledge base is opened, and the
// lessons go in as one transaction, so a bad line, Ctrl-C or kill -9 leaves it as it was.
int import_lessons(const LessonsOptions& options)
{
    std::vector<KnowledgeLesson> lessons = read_lessons_file(options.import_path);
    KnowledgeBase knowledge = KnowledgeBase::open(knowledge_path(options), KnowledgeAccess::read_write);
    log_info("importing {} lesson{} from {} into {}", lessons.size(), lessons.size() == 1 ? "" : "s",
             options.import_path, knowledge.path().string());
    LessonImport done = knowledge.add_lessons(lessons, [] { return interrupt_requested(); });
    if (done.stopped)
        fail(ErrorKind::interrupted, "import of {} stopped at your request: nothing was imported ({} is as it was)",
             options.import_path, knowledge.path().string());
    fmt::print("imported {} lesson{} into {} ({} already there)\n", done.added, done.added == 1 ? "" : "s",
               knowledge.path().string(), done.known);
    return k_exit_ok;
}

std::vector<Listed> gather(const LessonsOptions& options, std::string& source)
{
    std::vector<Listed> listed;
    if (!options.archive_path.empty()) {
        Archive archive = Archive::open(options.archive_path, OpenMode::read_only);
        std::string run_id = archive.run_info().run_id;
        source = options.archive_path;
        for (auto& lesson : archive.lessons())
            listed.push_back({std::move(lesson), run_id});
    } else {
        KnowledgeBase knowledge = KnowledgeBase::open(knowledge_path(options), KnowledgeAccess::read_only);
        source = knowledge.path().string();
        for (auto& item : knowledge.lessons())
            listed.push_back({std::move(item.lesson), std::move(item.run_id)});
    }
    std::erase_if(listed, [&](const Listed& l) { return !lesson_matches(l.lesson, options.filter); });
    return listed;
}

std::string ratio_text(const std::optional<double>& value)
{
    return value ? fmt::format("{:.2f}x", *value) : "-";
}

int list_techniques(const LessonsOptions& options)
{
    KnowledgeBase knowledge = KnowledgeBase::open(knowledge_path(options), KnowledgeAccess::read_only);
    std::map<std::string, std::map<std::string, TechniqueTally>> by_category;
    for (const auto& [run, one] : knowledge.technique_tries())
        if (options.filter.category.empty() || one.category == options.filter.category)
            by_category[one.category][one.technique].add(one);
    Json out = Json::array();
    std::string text;
    for (const auto& [category, tallies] : by_category) {
        Json rows = Json::array();
        const auto right = TextTable::Align::right;
        TextTable table({{"technique"}, {"tried", right}, {"correct", right}, {"improved", right},
                         {"mean gain", right}, {"predicted", right}, {"measured", right}});
        for (const auto& [id, t] : tallies) {
            Json row = t.to_json();
            row["technique"] = id;
            rows.push_back(row);
            table.add_row({id, std::to_string(t.tried), std::to_string(t.correct), std::to_string(t.improved),
                           ratio_text(t.mean_gain()), ratio_text(t.mean_predicted()), ratio_text(t.mean_measured())});
        }
        Json schedules = Json::array();
        std::string schedule_lines;
        for (const auto& schedule : knowledge.schedules(category, "", 5)) {
            schedules.push_back({{"run_id", schedule.run_id}, {"task", schedule.task_name},
                                 {"speedup", schedule.speedup}, {"steps", schedule.steps_json()}});
            schedule_lines += fmt::format("  {} ({}, {:.2f}x): {}\n", schedule.task_name, schedule.run_id,
                                          schedule.speedup, schedule.describe());
        }
        out.push_back({{"category", category}, {"techniques", rows}, {"schedules", schedules}});
        text += fmt::format("\n{} tasks\n{}", category.empty() ? "(no category)" : category, table.render());
        if (!schedule_lines.empty())
            text += "best schedules\n" + schedule_lines;
    }
    if (options.json)
        fmt::print("{}\n", out.dump(2));
    else if (by_category.empty())
        fmt::print("no technique results in {}\n", knowledge.path().string());
    else
        fmt::print("technique results in {}\n{}", knowledge.path().string(), text);
    return k_exit_ok;
}

int run_lessons(const LessonsOptions& options)
{
    if (options.techniques)
        return list_techniques(options);
    if (!options.import_path.empty())
        return import_lessons(options);
    std::string source;
    std::vector<Listed> listed = gather(options, source);
    if (!options.export_path.empty()) {
        std::string text;
        for (const auto& l : listed)
            text += lesson_to_json(l.lesson, l.run_id).dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
        write_file_atomic(options.export_path, text);
        log_info("wrote {} lesson{} to {}", listed.size(), listed.size() == 1 ? "" : "s", options.export_path);
        return k_exit_ok;
    }
    if (options.json) {
        Json out = Json::array();
        for (const auto& l : listed)
            out.push_back(lesson_to_json(l.lesson, l.run_id));
        fmt::print("{}\n", out.dump(2, ' ', false, Json::error_handler_t::replace));
        return k_exit_ok;
    }
    if (listed.empty()) {
        fmt::print("no lessons{} in {}\n", options.filter.task.empty() && options.filter.category.empty() &&
                                                   options.filter.tag.empty()
                                               ? ""
                                               : " matching the filter",
                   source);
        return k_exit_ok;
    }
    fmt::print("{} lesson{} in {}\n", listed.size(), listed.size() == 1 ? "" : "s", source);
    for (const auto& l : listed) {
        const Lesson& lesson = l.lesson;
        fmt::print("\n#{}  {}{}  {}{}{}\n", lesson.id, lesson.task_name,
                   lesson.category.empty() ? "" : " (" + lesson.category + ")", format_local_time(lesson.created_at),
                   l.run_id.empty() ? "" : "  run " + l.run_id,
                   lesson.candidate_id ? fmt::format("  candidate #{}", *lesson.candidate_id) : "");
        if (!lesson.tags.empty())
            fmt::print("    tags: {}\n", join(lesson.tags, ", "));
        fmt::print("    {}\n", replace_all(trim(lesson.text), "\n", "\n    "));
    }
    return k_exit_ok;
}

} // namespace

void add_lessons_command(CLI::App& app, CommandSlot& slot)
{
    auto o = std::make_shared<LessonsOptions>();
    auto* cmd = app.add_subcommand("lessons", "list, export or import the lessons learnt by runs (the user-level "
                                              "knowledge base, or one run archive)");
    cmd->footer(fmt::format("--import reads a regular file of at most {}, each lesson at most {}, and stores all "
                            "its lessons in one transaction or none.\nExit codes: 0 done, 3 bad input (a file that "
                            "is not a regular file or is too large, a malformed line), 4 runtime failure, 130 "
                            "interrupted (an import stores nothing).",
                            format_bytes(static_cast<double>(k_max_lessons_file_bytes)),
                            format_bytes(static_cast<double>(k_max_lesson_bytes))));
    cmd->add_option("--task", o->filter.task, "only lessons about this task");
    cmd->add_option("--category", o->filter.category, "only lessons of this task category (memory, compute, "
                                                      "irregular)");
    cmd->add_option("--tag", o->filter.tag, "only lessons with this tag");
    cmd->add_option("--archive", o->archive_path, "read the lessons of this run archive instead");
    cmd->add_option("--knowledge", o->knowledge_path, "knowledge base (default: $XDG_DATA_HOME/kforge/knowledge.sqlite)");
    cmd->add_flag("--json", o->json, "print the lessons as a JSON array");
    cmd->add_option("--export", o->export_path, "write the lessons to this file as JSONL");
    cmd->add_option("--import", o->import_path, "add the lessons of this JSONL file to the knowledge base, all or "
                                                 "nothing: a malformed line (named by its number), Ctrl-C or a kill "
                                                 "leaves the knowledge base as it was");
    cmd->add_flag("--techniques", o->techniques, "show the knowledge base's technique results instead: per task "
                                                 "category (--category), each technique's tries and the best "
                                                 "schedules of two-phase runs");
    cmd->callback([o, &slot] { slot = [o] { return run_lessons(*o); }; });
}

} // namespace kforge
