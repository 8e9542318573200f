// The two HTTP wire formats: OpenAI Chat Completions and Anthropic Messages.
//
// Each is four small functions (endpoint, body, auth headers, reply reader). They are forgiving in
// what they read, because the Chat Completions format is spoken by many servers with small
// differences: `content` may be a string, null or an array of parts; `usage` may be missing or
// partial. A reply without any text is still a reply (the proposer turns it into a verdict); only
// a body without the expected structure is reported as unusable.
#include "agents/http_provider.hpp"

#include <fmt/format.h>

#include "util/text.hpp"

namespace kforge {
namespace {

// "http://host:8000" has no path; "http://host:8000/v1" and "https://openrouter.ai/api/v1" do.
bool has_path(const std::string& url)
{
    size_t scheme = url.find("://");
    size_t start = scheme == std::string::npos ? 0 : scheme + 3;
    return url.find('/', start) != std::string::npos;
}

int64_t int_at(const Json& object, const char* key)
{
    if (!object.is_object())
        return 0;
    auto it = object.find(key);
    return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// ---- OpenAI Chat Completions --------------------------------------------------------------------

std::string openai_endpoint(const std::string& base_url)
{
    return has_path(base_url) ? base_url + "/chat/completions" : base_url + "/v1/chat/completions";
}

Json openai_body(const ModelSpec& spec, const ChatRequest& request, bool custom_endpoint)
{
    Json messages = Json::array();
    if (!request.system.empty())
        messages.push_back({{"role", "system"}, {"content", request.system}});
    messages.push_back({{"role", "user"}, {"content", request.user}});
    Json body = {{"model", spec.model}, {"messages", messages}};
    // OpenAI's own endpoint wants max_completion_tokens (reasoning models reject max_tokens);
    // compatible servers have long understood max_tokens and not always the newer name.
    body[custom_endpoint ? "max_tokens" : "max_completion_tokens"] = spec.max_output_tokens;
    if (spec.temperature)
        body["temperature"] = *spec.temperature;
    return body;
}

std::vector<std::string> openai_auth(const std::string& api_key)
{
    if (api_key.empty())
        return {};
    return {"Authorization: Bearer " + api_key};
}

std::optional<WireReply> openai_reply(const Json& body, std::string& problem)
{
    if (!body.is_object() || !body.contains("choices") || !body["choices"].is_array() ||
        body["choices"].empty() || !body["choices"][0].is_object()) {
        problem = "no choices[0] in the reply";
        return std::nullopt;
    }
    const Json& choice = body["choices"][0];
    WireReply reply;
    const Json* content = nullptr;
    if (choice.contains("message") && choice["message"].is_object() && choice["message"].contains("content"))
        content = &choice["message"]["content"];
    if (content && content->is_string()) {
        reply.text = content->get<std::string>();
    } else if (content && content->is_array()) {
        for (const auto& part : *content)
            if (part.is_object() && part.contains("text") && part["text"].is_string())
                reply.text += part["text"].get<std::string>();
    } else if (content && !content->is_null()) {
        problem = fmt::format("choices[0].message.content is {}", json_type_name(*content));
        return std::nullopt;
    } else if (!choice.contains("message")) {
        problem = "no choices[0].message in the reply";
        return std::nullopt;
    }
    reply.cut_at_max_tokens = choice.contains("finish_reason") && choice["finish_reason"] == "length";
    if (body.contains("usage") && body["usage"].is_object()) {
        const Json& usage = body["usage"];
        reply.usage.input = int_at(usage, "prompt_tokens");
        reply.usage.output = int_at(usage, "completion_tokens");
        if (usage.contains("prompt_tokens_details"))
            reply.usage.cached_input = int_at(usage["prompt_tokens_details"], "cached_tokens");
    }
    return reply;
}

// ---- Anthropic Messages -------------------------------------------------------------------------

std::string anthropic_endpoint(const std::string& base_url)
{
    if (base_url.size() >= 3 && base_url.compare(base_url.size() - 3, 3, "/v1") == 0)
        return base_url + "/messages";
    return base_url + "/v1/messages";
}

Json anthropic_body(const ModelSpec& spec, const ChatRequest& request, bool)
{
    Json messages = Json::array();
    messages.push_back({{"role", "user"}, {"content", request.user}});
    Json body = {{"model", spec.model}, {"max_tokens", spec.max_output_tokens}, {"messages", messages}};
    if (!request.system.empty())
        body["system"] = request.system;
    if (spec.temperature)
        body["temperature"] = *spec.temperature;
    return body;
}

std::vector<std::string> anthropic_auth(const std::string& api_key)
{
    std::vector<std::string> headers{"anthropic-version: 2023-06-01"};
    if (!api_key.empty())
        headers.push_back("x-api-key: " + api_key);
    return headers;
}

std::optional<WireReply> anthropic_reply(const Json& body, std::string& problem)
{
    if (!body.is_object() || !body.contains("content") || !body["content"].is_array()) {
        problem = "no content array in the reply";
        return std::nullopt;
    }
    WireReply reply;
    for (const auto& block : body["content"])
        if (block.is_object() && block.value("type", "") == "text" && block.contains("text") && block["text"].is_string())
            reply.text += block["text"].get<std::string>();
    reply.cut_at_max_tokens = body.contains("stop_reason") && body["stop_reason"] == "max_tokens";
    if (body.contains("usage") && body["usage"].is_object()) {
        const Json& usage = body["usage"];
        int64_t cache_read = int_at(usage, "cache_read_input_tokens");
        // Anthropic's input_tokens excludes cache reads and writes; kforge counts all input.
        reply.usage.input = int_at(usage, "input_tokens") + cache_read + int_at(usage, "cache_creation_input_tokens");
        reply.usage.cached_input = cache_read;
        reply.usage.output = int_at(usage, "output_tokens");
    }
    return reply;
}

} // namespace

const WireFormat& openai_wire()
{
    static const WireFormat k_wire{"openai", "https://api.openai.com/v1", openai_endpoint, openai_body, openai_auth,
                                   openai_reply};
    return k_wire;
}

const WireFormat& anthropic_wire()
{
    static const WireFormat k_wire{"anthropic", "https://api.anthropic.com", anthropic_endpoint, anthropic_body,
                                   anthropic_auth, anthropic_reply};
    return k_wire;
}

namespace {

std::string one_line(std::string text, size_t max_chars)
{
    text = trim(text.substr(0, max_chars));
    for (char& c : text)
        if (static_cast<unsigned char>(c) < 32)
            c = ' ';
    return text;
}

std::string error_message(const std::string& body)
{
    JsonParseFailure failure;
    std::optional<Json> parsed = try_parse_json(body, failure);
    if (!parsed || !parsed->is_object())
        return "";
    Json& json = *parsed;
    const Json* error = json.contains("error") ? &json["error"] : &json;
    if (error->is_string())
        return error->get<std::string>();
    if (error->is_object() && error->contains("message") && (*error)["message"].is_string()) {
        std::string text = (*error)["message"].get<std::string>();
        for (const char* key : {"code", "type"})
            if (error->contains(key) && (*error)[key].is_string())
                return fmt::format("{} ({})", text, (*error)[key].get<std::string>());
        return text;
    }
    if (json.contains("detail") && json["detail"].is_string())
        return json["detail"].get<std::string>();
    return "";
}

} // namespace

std::string describe_error_body(const std::string& body)
{
    std::string message = error_message(body);
    std::string text = one_line(message.empty() ? body : message, 500);
    return text.empty() ? "(empty body)" : text;
}

bool is_context_length_error(const std::string& body)
{
    std::string text = to_lower(body.substr(0, 4096));
    for (std::string_view marker :
         {"context_length_exceeded", "maximum context length", "context length", "context window",
          "prompt is too long", "exceeds the available context size", "too many tokens", "input is too long"})
        if (text.find(marker) != std::string::npos)
            return true;
    return false;
}

std::string redact_secret(std::string text, const std::string& secret)
{
    // A key of a few characters is a placeholder for a local server ("EMPTY" in vLLM's docs, "x"),
    // not a secret; replacing it everywhere corrupted the replies themselves ("max(" became
    // "ma[redacted](" under OPENAI_API_KEY=x, and every kernel failed to parse).
    if (secret.size() < k_min_redacted_secret)
        return text;
    return replace_all(std::move(text), secret, "[redacted]");
}

} // namespace kforge
