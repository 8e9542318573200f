// Choosing, importing and filtering lessons; see knowledge.hpp.
#include "search/knowledge.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "util/error.hpp"

namespace kforge {
namespace {

constexpr const char* k_imported_key = "knowledge_base";

} // namespace

int lesson_relevance(const Lesson& lesson, const Task& task)
{
    int score = 0;
    if (!lesson.task_name.empty() && lesson.task_name == task.name)
        score += 4;
    if (!lesson.category.empty() && lesson.category == task.category)
        score += 2;
    for (const auto& tag : lesson.tags)
        if (std::find(task.tags.begin(), task.tags.end(), tag) != task.tags.end())
            ++score;
    return score;
}

std::vector<int64_t> choose_lessons(const std::vector<Lesson>& lessons, const Task& task, size_t max)
{
    std::vector<std::pair<int, const Lesson*>> ranked;
    for (const auto& lesson : lessons)
        if (int score = lesson_relevance(lesson, task); score > 0)
            ranked.emplace_back(score, &lesson);
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second->id > b.second->id;
    });
    std::vector<int64_t> ids;
    for (size_t i = 0; i < ranked.size() && ids.size() < max; ++i)
        ids.push_back(ranked[i].second->id);
    return ids;
}

size_t import_knowledge(Archive& archive, const KnowledgeBase& knowledge, const Task& task, size_t max)
{
    std::set<std::pair<std::string, std::string>> held;
    for (const auto& lesson : archive.lessons())
        held.emplace(lesson.task_name, lesson.text);
    std::vector<std::pair<int, const KnowledgeLesson*>> ranked;
    std::vector<KnowledgeLesson> all = knowledge.lessons();
    for (const auto& item : all)
        if (int score = lesson_relevance(item.lesson, task);
            score > 0 && !held.count({item.lesson.task_name, item.lesson.text}))
            ranked.emplace_back(score, &item);
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second->lesson.id > b.second->lesson.id;
    });
    size_t imported = 0;
    archive.atomically([&] {
        for (size_t i = 0; i < ranked.size() && imported < max; ++i) {
            Lesson lesson = ranked[i].second->lesson;
            Json evidence = lesson.evidence.is_object() ? lesson.evidence : Json::object();
            evidence[k_imported_key] = Json{{"id", lesson.id},
                                            {"run_id", ranked[i].second->run_id},
                                            {"candidate_id", lesson.candidate_id ? Json(*lesson.candidate_id) : Json()},
                                            {"file", knowledge.path().string()}};
            lesson.evidence = evidence;
            lesson.candidate_id.reset();
            archive.insert_lesson(lesson);
            ++imported;
        }
    });
    return imported;
}

bool is_imported_lesson(const Lesson& lesson)
{
    return lesson.evidence.is_object() && lesson.evidence.contains(k_imported_key);
}

bool lesson_matches(const Lesson& lesson, const LessonFilter& filter)
{
    if (!filter.task.empty() && lesson.task_name != filter.task)
        return false;
    if (!filter.category.empty() && lesson.category != filter.category)
        return false;
    if (!filter.tag.empty() && std::find(lesson.tags.begin(), lesson.tags.end(), filter.tag) == lesson.tags.end())
        return false;
    return true;
}

Json lesson_to_json(const Lesson& lesson, const std::string& run_id)
{
    return Json{{"schema", "kforge.lesson/1"},
                {"id", lesson.id},
                {"task", lesson.task_name},
                {"category", lesson.category},
                {"tags", lesson.tags},
                {"text", lesson.text},
                {"evidence", lesson.evidence},
                {"run_id", run_id},
                {"candidate_id", lesson.candidate_id ? Json(*lesson.candidate_id) : Json()},
                {"created_at", lesson.created_at}};
}

Lesson lesson_from_json(const Json& json, const std::string& what, std::string& run_id)
{
    JsonReader reader(json, what);
    if (!reader.is_object())
        reader.fail("expected a lesson object");
    Lesson lesson;
    lesson.task_name = reader.at("task").as_string();
    lesson.category = reader.get_string("category", "");
    if (reader.has("tags"))
        for (const auto& tag : reader.at("tags").items())
            lesson.tags.push_back(tag.as_string());
    lesson.text = reader.at("text").as_string();
    if (lesson.text.empty())
        reader.at("text").fail("a lesson needs text");
    if (reader.has("evidence"))
        lesson.evidence = reader.at("evidence").json();
    if (reader.has("candidate_id") && !reader.at("candidate_id").json().is_null())
        lesson.candidate_id = reader.at("candidate_id").as_int();
    lesson.created_at = reader.get_number("created_at", 0);
    run_id = reader.get_string("run_id", "");
    return lesson;
}

} // namespace kforge
