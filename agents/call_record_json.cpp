// Conversions between LlmCallRecord and its JSON line; see call_record_json.hpp.
#include "agents/call_record_json.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr std::string_view k_call_schema = "kforge.llm_call/1";

CallPurpose parse_purpose(const JsonReader& field)
{
    std::string name = field.as_string();
    if (auto purpose = parse_call_purpose(name))
        return *purpose;
    std::string known;
    for (CallPurpose purpose : call_purposes())
        known += (known.empty() ? "" : ", ") + std::string(call_purpose_name(purpose));
    field.fail(fmt::format("unknown purpose '{}' (known: {})", name, known));
}

std::string text_of(const Json& content)
{
    if (content.is_string())
        return content.get<std::string>();
    std::string text;
    if (content.is_array())
        for (const auto& part : content)
            if (part.is_object() && part.contains("text") && part["text"].is_string())
                text += part["text"].get<std::string>();
    return text;
}

} // namespace

Json call_record_to_json(const LlmCallRecord& record)
{
    return Json{{"schema", k_call_schema},
                {"provider", record.provider},
                {"model", record.model},
                {"base_url", record.base_url},
                {"purpose", call_purpose_name(record.purpose)},
                {"request", record.request},
                {"reply", record.reply},
                {"input_tokens", record.input_tokens},
                {"cached_input_tokens", record.cached_input_tokens},
                {"output_tokens", record.output_tokens},
                {"cost_usd", record.cost_usd},
                {"cost_known", record.cost_known},
                {"latency_s", record.latency_s},
                {"retries", record.retries},
                {"status", record.status},
                {"error", record.error},
                {"started_at", record.started_at}};
}

LlmCallRecord call_record_from_json(const JsonReader& json)
{
    if (!json.is_object())
        json.fail(fmt::format("a call record is a JSON object, found {}", json_type_name(json.json())));
    json.allow_only({"schema", "id", "provider", "model", "base_url", "purpose", "request", "reply", "input_tokens",
                     "cached_input_tokens", "output_tokens", "cost_usd", "cost_known", "latency_s", "retries",
                     "status", "error", "started_at"});
    if (std::string schema = json.get_string("schema", k_call_schema); schema != k_call_schema)
        json.at("schema").fail(fmt::format("expected \"{}\", found \"{}\"", k_call_schema, schema));
    LlmCallRecord record;
    record.id = json.get_int("id", 0);
    record.provider = json.at("provider").as_string();
    record.model = json.get_string("model", "");
    record.base_url = json.get_string("base_url", "");
    if (auto purpose = json.find("purpose"))
        record.purpose = parse_purpose(*purpose);
    if (auto request = json.find("request"))
        record.request = request->json();
    record.reply = json.get_string("reply", "");
    record.input_tokens = json.get_int("input_tokens", 0);
    record.cached_input_tokens = json.get_int("cached_input_tokens", 0);
    record.output_tokens = json.get_int("output_tokens", 0);
    record.cost_usd = json.get_number("cost_usd", 0);
    record.cost_known = json.get_bool("cost_known", true);
    record.latency_s = json.get_number("latency_s", 0);
    record.retries = static_cast<int>(json.get_int("retries", 0));
    record.status = json.get_string("status", "ok");
    record.error = json.get_string("error", "");
    record.started_at = json.get_number("started_at", 0);
    return record;
}

std::vector<LlmCallRecord> load_call_records(const std::filesystem::path& file)
{
    std::string text = read_file(file);
    std::vector<LlmCallRecord> records;
    int line_number = 0;
    for (const auto& line : split(text, '\n')) {
        ++line_number;
        if (trim(line).empty())
            continue;
        std::string label = fmt::format("{}:{}", file.string(), line_number);
        Json json = parse_json_text(line, label);
        records.push_back(call_record_from_json(JsonReader(json, label)));
    }
    return records;
}

void append_call_record(const std::filesystem::path& file, const LlmCallRecord& record)
{
    std::string line = call_record_to_json(record).dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(file.c_str(), "ab"), std::fclose);
    if (!out)
        fail_runtime("cannot open {} to record calls: {}", file.string(), std::strerror(errno));
    if (std::fwrite(line.data(), 1, line.size(), out.get()) != line.size() || std::fflush(out.get()) != 0)
        fail_runtime("cannot write to {}: {}", file.string(), std::strerror(errno));
}

std::optional<RecordedPrompt> recorded_prompt(const LlmCallRecord& record)
{
    const Json& request = record.request;
    if (!request.is_object())
        return std::nullopt;
    RecordedPrompt prompt;
    if (request.contains("user") && request["user"].is_string()) { // replay's own form
        prompt.user = request["user"].get<std::string>();
        prompt.system = request.value("system", "");
        return prompt;
    }
    if (!request.contains("messages") || !request["messages"].is_array())
        return std::nullopt;
    if (request.contains("system"))
        prompt.system = text_of(request["system"]);
    for (const auto& message : request["messages"]) {
        if (!message.is_object() || !message.contains("content"))
            continue;
        std::string role = message.value("role", "");
        if (role == "system")
            prompt.system = text_of(message["content"]);
        else if (role == "user")
            prompt.user = text_of(message["content"]);
    }
    return prompt;
}

} // namespace kforge
