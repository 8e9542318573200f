// Meta-prompt rewriting and lesson distillation; see llm_ops.hpp.
#include "agents/llm_ops.hpp"

#include <chrono>
#include <map>

#include <fmt/format.h>

#include "agents/line_diff.hpp"
#include "agents/prompt_sections.hpp"
#include "agents/reply_parser.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

// Numeric leaves of a metrics object under dotted names.
void numeric_leaves(const Json& value, const std::string& prefix, std::map<std::string, double>& out)
{
    if (value.is_object()) {
        for (const auto& [key, item] : value.items())
            numeric_leaves(item, prefix.empty() ? key : prefix + "." + key, out);
    } else if (value.is_number() && !prefix.empty()) {
        out[prefix] = value.get<double>();
    }
}

// At most `max_chars`, cut at a word boundary.
std::string cut_at_word(std::string text, size_t max_chars)
{
    if (text.size() <= max_chars)
        return text;
    size_t cut = text.find_last_of(" \n", max_chars);
    return trim(text.substr(0, cut == std::string::npos || cut < max_chars / 2 ? max_chars : cut));
}

// The text after `key` (case-insensitive, markdown emphasis ignored) on the first line having it,
// plus the lines that follow up to a blank line or the next "WORD:" line.
std::optional<std::string> field_after(std::string_view reply, std::string_view key)
{
    std::vector<std::string> lines = split(reply.substr(0, 1 << 20), '\n');
    for (size_t i = 0; i < lines.size(); ++i) {
        std::string line = trim(lines[i]);
        size_t start = line.find_first_not_of("*_#> -");
        if (start == std::string::npos || to_lower(line.substr(start, key.size())) != key)
            continue;
        std::string text = trim(std::string_view(line).substr(start + key.size()));
        text = trim(text.substr(std::min(text.size(), text.find_first_not_of("*_ "))));
        for (size_t j = i + 1; j < lines.size(); ++j) {
            std::string next = trim(lines[j]);
            if (next.empty() || next.find(':') < 12)
                break;
            text += " " + next;
        }
        return text;
    }
    return std::nullopt;
}

} // namespace

std::string describe_effect(const CandidateView& before, const CandidateView& after)
{
    std::vector<std::string> lines;
    if (before.fitness || after.fitness)
        lines.push_back(fmt::format("Speed over the baseline (geometric mean): {} -> {}",
                                    before.fitness ? fmt::format("{:.3g}x", *before.fitness) : "none",
                                    after.fitness ? fmt::format("{:.3g}x", *after.fitness) : "none"));
    if (before.verdict && after.verdict && before.verdict->kind != after.verdict->kind)
        lines.push_back(fmt::format("Verdict: {} -> {}", verdict_name(before.verdict->kind), verdict_name(after.verdict->kind)));
    for (const auto& t : after.times) {
        for (const auto& old : before.times) {
            if (old.shape_label != t.shape_label || old.candidate_ns <= 0 || t.candidate_ns <= 0)
                continue;
            lines.push_back(fmt::format("- {}: {} -> {} ({:.2f}x)", t.shape_label, format_duration_ns(old.candidate_ns),
                                        format_duration_ns(t.candidate_ns), old.candidate_ns / t.candidate_ns));
        }
    }
    std::map<std::string, double> a, b;
    numeric_leaves(before.metrics, "", a);
    numeric_leaves(after.metrics, "", b);
    size_t shown = 0;
    for (const auto& [key, value] : b) {
        auto it = a.find(key);
        if (it == a.end() || it->second == value || ++shown > 30)
            continue;
        lines.push_back(fmt::format("- {}: {:.4g} -> {:.4g}", key, it->second, value));
    }
    return lines.empty() ? "No measurements are available for this pair." : join(lines, "\n");
}

Json effect_evidence(const CandidateView& before, const CandidateView& after)
{
    Json evidence = Json::object();
    if (before.id)
        evidence["parent_id"] = *before.id;
    if (after.id)
        evidence["child_id"] = *after.id;
    if (before.fitness)
        evidence["fitness_before"] = *before.fitness;
    if (after.fitness)
        evidence["fitness_after"] = *after.fitness;
    Json times = Json::array();
    for (const auto& t : after.times)
        for (const auto& old : before.times)
            if (old.shape_label == t.shape_label)
                times.push_back({{"shape", t.shape_label}, {"before_ns", old.candidate_ns}, {"after_ns", t.candidate_ns}});
    evidence["times"] = times;
    std::map<std::string, double> a, b;
    numeric_leaves(before.metrics, "", a);
    numeric_leaves(after.metrics, "", b);
    Json metrics = Json::object();
    for (const auto& [key, value] : b)
        if (auto it = a.find(key); it != a.end() && it->second != value)
            metrics[key] = {it->second, value};
    evidence["metrics"] = metrics;
    return evidence;
}

MetaPromptResult rewrite_meta_prompt(Provider& provider, const PromptLibrary& library, const MetaPromptRequest& request)
{
    std::vector<std::string> history;
    for (const auto& note : request.history)
        history.push_back(fmt::format("- island {}: {} attempts, {} improved: \"{}\"", note.island, note.uses,
                                      note.improvements, cut_at_word(trim(note.text), 160)));
    std::string max_chars = std::to_string(request.max_chars);
    ChatRequest chat{CallPurpose::meta_prompt, library.render(PromptId::meta_system, {{"max_chars", max_chars}}),
                     library.render(PromptId::meta_user,
                                    {{"task_name", request.task.name},
                                     {"category", request.task.category},
                                     {"description", request.task.description},
                                     {"current", trim(request.current.text).empty() ? "(none yet)" : request.current.text},
                                     {"history", history.empty() ? "(no history yet)" : join(history, "\n")},
                                     {"max_chars", max_chars}})};
    MetaPromptResult result;
    ChatResult reply = provider.complete(chat);
    result.call = reply.record;
    if (!reply.ok()) {
        result.problem = "the model call failed: " + reply.record.error;
        return result;
    }
    std::string text;
    std::vector<FencedBlock> blocks = find_fenced_blocks(reply.record.reply);
    for (const auto& block : blocks)
        if (block.terminated)
            text = block.body;
    if (text.empty() && blocks.empty())
        text = reply.record.reply;
    text = trim(text);
    if (text.empty()) {
        result.problem = "the reply holds no strategy note";
        return result;
    }
    result.text = cut_at_word(text, request.max_chars);
    return result;
}

LessonResult distil_lesson(Provider& provider, const PromptLibrary& library, const LessonRequest& request)
{
    std::string diff = unified_diff(request.parent.source, request.child.source);
    ChatRequest chat{CallPurpose::analyst, library.render(PromptId::analyst_system, {}),
                     library.render(PromptId::analyst_user,
                                    {{"task_name", request.task.name},
                                     {"category", request.task.category},
                                     {"description", request.task.description},
                                     {"parent_note", request.parent.note},
                                     {"child_note", request.child.note},
                                     {"diff", diff.empty() ? "(no change in the source)" : diff},
                                     {"effect", describe_effect(request.parent, request.child)}})};
    LessonResult result;
    ChatResult reply = provider.complete(chat);
    result.call = reply.record;
    if (!reply.ok()) {
        result.problem = "the model call failed: " + reply.record.error;
        return result;
    }
    std::optional<std::string> text = field_after(reply.record.reply, "lesson:");
    if (!text || text->empty()) {
        result.problem = "the reply holds no LESSON: line";
        return result;
    }
    Lesson lesson;
    lesson.task_name = request.task.name;
    lesson.category = request.task.category;
    lesson.text = cut_at_word(*text, 1000);
    if (auto tags = field_after(reply.record.reply, "tags:"))
        for (const auto& tag : split(*tags, ','))
            if (std::string t = to_lower(trim(tag)); !t.empty() && lesson.tags.size() < 8)
                lesson.tags.push_back(t.substr(0, 40));
    lesson.evidence = effect_evidence(request.parent, request.child);
    lesson.candidate_id = request.child.id;
    lesson.created_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    result.lesson = std::move(lesson);
    return result;
}

} // namespace kforge
