// LLM calls and what the search writes with them: meta-prompts and lessons. Usage totals are sums
// in SQL, so `inspect` on a long run never loads prompts or replies to count tokens and dollars.
#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sqlite.hpp"
#include "archive/store_detail.hpp"
#include "util/error.hpp"

namespace kforge {
namespace {

// The request and reply come last so a listing can leave them out (and never read them from disk).
std::string call_columns(CallText text)
{
    std::string columns =
        "id, provider, model, base_url, purpose, input_tokens, cached_input_tokens, "
        "output_tokens, cost_usd, cost_known, latency_s, retries, status, error, started_at";
    return text == CallText::include ? columns + ", request, reply" : columns;
}

LlmCallRecord read_call(const Statement& row, CallText text)
{
    LlmCallRecord call;
    call.id = row.column_int(0);
    std::string what = fmt::format("llm_call {}", call.id);
    call.provider = row.column_text(1);
    call.model = row.column_text(2);
    call.base_url = row.column_text(3);
    call.purpose = purpose_column(row, 4, what);
    call.input_tokens = row.column_int(5);
    call.cached_input_tokens = row.column_int(6);
    call.output_tokens = row.column_int(7);
    call.cost_usd = row.column_real(8);
    call.cost_known = row.column_int(9) != 0;
    call.latency_s = row.column_real(10);
    call.retries = static_cast<int>(row.column_int(11));
    call.status = row.column_text(12);
    call.error = row.column_text(13);
    call.started_at = row.column_real(14);
    if (text == CallText::include) {
        call.request = row.column_json(15, what + " request");
        call.reply = row.column_text(16);
    }
    return call;
}

constexpr const char* k_usage_sums =
    "count(*), sum(status != 'ok'), sum(input_tokens), sum(cached_input_tokens), "
    "sum(output_tokens), "
    "sum(CASE WHEN cost_known THEN cost_usd ELSE 0 END), sum(NOT cost_known), sum(latency_s)";

// Reads the k_usage_sums columns starting at `first`.
void read_usage(const Statement& row, int first, LlmUsage& usage)
{
    usage.calls = row.column_int(first);
    usage.failed_calls = row.column_int(first + 1);
    usage.input_tokens = row.column_int(first + 2);
    usage.cached_input_tokens = row.column_int(first + 3);
    usage.output_tokens = row.column_int(first + 4);
    usage.cost_usd = row.column_real(first + 5);
    usage.calls_without_price = row.column_int(first + 6);
    usage.latency_s = row.column_real(first + 7);
}

MetaPrompt read_meta_prompt(const Statement& row)
{
    MetaPrompt prompt;
    prompt.id = row.column_int(0);
    prompt.island = static_cast<int>(row.column_int(1));
    prompt.text = row.column_text(2);
    prompt.generation = static_cast<int>(row.column_int(3));
    prompt.uses = static_cast<int>(row.column_int(4));
    prompt.improvements = static_cast<int>(row.column_int(5));
    prompt.active = row.column_int(6) != 0;
    prompt.created_at = row.column_real(7);
    return prompt;
}

} // namespace

int64_t Archive::insert_llm_call(const LlmCallRecord& record)
{
    require_writer("store an LLM call");
    Statement insert(
        *m_db,
        "INSERT INTO llm_call (provider, model, base_url, purpose, input_tokens, "
        "cached_input_tokens, output_tokens, cost_usd, cost_known, latency_s, retries, status, "
        "error, started_at, request, reply) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
        "?)");
    insert.bind_text(record.provider).bind_text(record.model).bind_text(record.base_url);
    insert.bind_text(call_purpose_name(record.purpose)).bind_int(record.input_tokens);
    insert.bind_int(record.cached_input_tokens)
        .bind_int(record.output_tokens)
        .bind_real(record.cost_usd);
    insert.bind_int(record.cost_known ? 1 : 0).bind_real(record.latency_s).bind_int(record.retries);
    insert.bind_text(record.status)
        .bind_text(record.error)
        .bind_real(time_or_now(record.started_at));
    insert.bind_json(record.request).bind_text(record.reply);
    insert.run();
    return m_db->last_insert_id();
}

std::optional<LlmCallRecord> Archive::llm_call(int64_t id) const
{
    Statement query(*m_db, fmt::format("SELECT {} FROM llm_call WHERE id = ?",
                                       call_columns(CallText::include)));
    query.bind_int(id);
    if (!query.step())
        return std::nullopt;
    return read_call(query, CallText::include);
}

std::vector<LlmCallRecord> Archive::llm_calls(size_t limit, CallText text) const
{
    Statement query(
        *m_db, fmt::format("SELECT {} FROM llm_call ORDER BY id DESC LIMIT ?", call_columns(text)));
    query.bind_int(static_cast<int64_t>(limit));
    std::vector<LlmCallRecord> result;
    while (query.step())
        result.push_back(read_call(query, text));
    return result;
}

void Archive::for_each_llm_call(CallText text,
                                const std::function<void(const LlmCallRecord&)>& visit) const
{
    Statement query(*m_db,
                    fmt::format("SELECT {} FROM llm_call ORDER BY id", call_columns(text)));
    while (query.step())
        visit(read_call(query, text));
}

LlmUsage Archive::llm_usage_total() const
{
    Statement query(*m_db, fmt::format("SELECT {} FROM llm_call WHERE provider != 'builtin'", k_usage_sums));
    LlmUsage usage;
    query.step();
    read_usage(query, 0, usage);
    return usage;
}

std::vector<LlmUsage> Archive::llm_usage_by_model() const
{
    Statement query(*m_db,
                    fmt::format("SELECT provider, model, {} FROM llm_call GROUP BY provider, model "
                                "ORDER BY 8 DESC, provider, model",
                                k_usage_sums));
    std::vector<LlmUsage> result;
    while (query.step()) {
        LlmUsage usage;
        usage.provider = query.column_text(0);
        usage.model = query.column_text(1);
        read_usage(query, 2, usage);
        result.push_back(std::move(usage));
    }
    return result;
}

int64_t Archive::insert_meta_prompt(const MetaPrompt& prompt)
{
    require_writer("store a meta-prompt");
    Statement insert(*m_db, "INSERT INTO meta_prompt (island, text, generation, uses, "
                            "improvements, active, created_at) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?)");
    insert.bind_int(prompt.island)
        .bind_text(prompt.text)
        .bind_int(prompt.generation)
        .bind_int(prompt.uses);
    insert.bind_int(prompt.improvements)
        .bind_int(prompt.active ? 1 : 0)
        .bind_real(time_or_now(prompt.created_at));
    insert.run();
    return m_db->last_insert_id();
}

void Archive::update_meta_prompt(const MetaPrompt& prompt)
{
    require_writer("update a meta-prompt");
    Statement update(
        *m_db,
        "UPDATE meta_prompt SET text = ?, uses = ?, improvements = ?, active = ? WHERE id = ?");
    update.bind_text(prompt.text).bind_int(prompt.uses).bind_int(prompt.improvements);
    update.bind_int(prompt.active ? 1 : 0).bind_int(prompt.id);
    update.run();
    if (sqlite3_changes(m_db->handle()) != 1)
        fail_runtime("{}: cannot update meta-prompt {}: no such meta-prompt", m_path.string(),
                     prompt.id);
}

std::vector<MetaPrompt> Archive::meta_prompts(MetaPromptFilter filter) const
{
    Statement query(
        *m_db,
        fmt::format("SELECT id, island, text, generation, uses, improvements, active, created_at "
                    "FROM meta_prompt {} ORDER BY id",
                    filter == MetaPromptFilter::active ? "WHERE active" : ""));
    std::vector<MetaPrompt> result;
    while (query.step())
        result.push_back(read_meta_prompt(query));
    return result;
}

int64_t Archive::insert_lesson(const Lesson& lesson)
{
    require_writer("store a lesson");
    Statement insert(
        *m_db,
        "INSERT INTO lesson (task_name, category, tags, text, evidence, candidate_id, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)");
    insert.bind_text(lesson.task_name).bind_text(lesson.category).bind_json(Json(lesson.tags));
    insert.bind_text(lesson.text).bind_json(lesson.evidence).bind_optional_int(lesson.candidate_id);
    insert.bind_real(time_or_now(lesson.created_at));
    insert.run();
    return m_db->last_insert_id();
}

std::vector<Lesson> Archive::lessons() const
{
    Statement query(
        *m_db, "SELECT id, task_name, category, tags, text, evidence, candidate_id, created_at "
               "FROM lesson ORDER BY id");
    std::vector<Lesson> result;
    while (query.step()) {
        Lesson lesson;
        lesson.id = query.column_int(0);
        std::string what = fmt::format("lesson {}", lesson.id);
        lesson.task_name = query.column_text(1);
        lesson.category = query.column_text(2);
        Json tags = query.column_json(3, what + " tags");
        if (!tags.is_array())
            fail_input("{}: {} tags: expected an array, found {}", m_path.string(), what,
                       json_type_name(tags));
        for (const auto& tag : tags)
            lesson.tags.push_back(tag.is_string() ? tag.get<std::string>() : tag.dump());
        lesson.text = query.column_text(4);
        lesson.evidence = query.column_json(5, what + " evidence");
        lesson.candidate_id = query.column_optional_int(6);
        lesson.created_at = query.column_real(7);
        result.push_back(std::move(lesson));
    }
    return result;
}

} // namespace kforge
