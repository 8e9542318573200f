// The mock LLM server; see mock_llm_server.hpp. Keep-alive is off (one request per connection) so
// that stopping the server never waits on an idle connection, and stalls wait on a condition
// variable so that the destructor can release them at once.
#include "mock_llm_server.hpp"

#include <chrono>
#include <stdexcept>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace kforge::test {
namespace {

using Json = nlohmann::json;

double now_s()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string credentials(const std::map<std::string, std::string>& headers)
{
    std::string found;
    for (const char* name : {"authorization", "x-api-key"})
        if (auto it = headers.find(name); it != headers.end())
            found += std::string(name) + ": " + it->second + "; ";
    return found;
}

std::string reply_body(bool anthropic, const MockStep& step, const std::string& model, const std::string& text)
{
    Json body;
    if (anthropic) {
        body = {{"id", "msg_mock"},
                {"type", "message"},
                {"role", "assistant"},
                {"model", model},
                {"content", Json::array({Json{{"type", "text"}, {"text", text}}})},
                {"stop_reason", step.cut_at_max_tokens ? "max_tokens" : "end_turn"},
                {"usage",
                 {{"input_tokens", step.input_tokens - step.cached_tokens},
                  {"cache_read_input_tokens", step.cached_tokens},
                  {"cache_creation_input_tokens", 0},
                  {"output_tokens", step.output_tokens}}}};
    } else {
        body = {{"id", "chatcmpl-mock"},
                {"object", "chat.completion"},
                {"model", model},
                {"choices", Json::array({Json{{"index", 0},
                                              {"message", {{"role", "assistant"}, {"content", text}}},
                                              {"finish_reason", step.cut_at_max_tokens ? "length" : "stop"}}})},
                {"usage",
                 {{"prompt_tokens", step.input_tokens},
                  {"completion_tokens", step.output_tokens},
                  {"total_tokens", step.input_tokens + step.output_tokens},
                  {"prompt_tokens_details", {{"cached_tokens", step.cached_tokens}}}}}};
    }
    return body.dump();
}

} // namespace

MockStep MockStep::reply(std::string text)
{
    MockStep step;
    step.text = std::move(text);
    return step;
}

MockStep MockStep::error(int status, std::string retry_after)
{
    MockStep step;
    step.behaviour = MockBehaviour::status;
    step.status = status;
    step.retry_after = std::move(retry_after);
    return step;
}

MockLlmServer::MockLlmServer() : m_server(std::make_unique<httplib::Server>())
{
    m_server->set_keep_alive_max_count(1);
    auto route = [this](const httplib::Request& request, httplib::Response& response) {
        std::map<std::string, std::string> headers;
        for (const auto& [name, value] : request.headers) {
            std::string lower;
            for (char c : name)
                lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            headers[lower] = value;
        }
        handle(request.path, headers, request.body, &response);
    };
    m_server->Post("/v1/chat/completions", route);
    m_server->Post("/v1/messages", route);
    m_port = m_server->bind_to_any_port("127.0.0.1");
    if (m_port <= 0)
        throw std::runtime_error("the mock LLM server cannot bind to 127.0.0.1");
    m_thread = std::thread([this] { m_server->listen_after_bind(); });
    // stop() only works on a running server, so the constructor returns once it runs.
    while (!m_server->is_running())
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

MockLlmServer::~MockLlmServer()
{
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_stop_signal.notify_all();
    m_server->stop();
    if (m_thread.joinable())
        m_thread.join();
}

std::string MockLlmServer::openai_url() const { return "http://127.0.0.1:" + std::to_string(m_port) + "/v1"; }
std::string MockLlmServer::anthropic_url() const { return "http://127.0.0.1:" + std::to_string(m_port); }

void MockLlmServer::push(MockStep step)
{
    std::lock_guard lock(m_mutex);
    m_script.push_back(std::move(step));
}

void MockLlmServer::set_default(MockStep step)
{
    std::lock_guard lock(m_mutex);
    m_default = std::move(step);
}

std::vector<MockRequest> MockLlmServer::requests() const
{
    std::lock_guard lock(m_mutex);
    return m_requests;
}

size_t MockLlmServer::request_count() const
{
    std::lock_guard lock(m_mutex);
    return m_requests.size();
}

bool MockLlmServer::wait_or_stop(double seconds)
{
    std::unique_lock lock(m_mutex);
    return !m_stop_signal.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return m_stopping; });
}

void MockLlmServer::handle(const std::string& path, const std::map<std::string, std::string>& headers,
                           const std::string& body, void* response_ptr)
{
    auto& response = *static_cast<httplib::Response*>(response_ptr);
    MockStep step;
    size_t index = 0;
    {
        std::lock_guard lock(m_mutex);
        if (!m_script.empty()) {
            step = std::move(m_script.front());
            m_script.pop_front();
        } else {
            step = m_default;
        }
        m_requests.push_back({path, headers, body, now_s(), 0});
        index = m_requests.size() - 1;
    }
    if (step.delay_s > 0 && !wait_or_stop(step.delay_s))
        return;
    bool anthropic = path == "/v1/messages";
    Json request = Json::parse(body, nullptr, false);
    std::string model = request.is_object() ? request.value("model", "mock") : "mock";
    std::string echo = step.echo_credentials ? "\n(received credentials: " + credentials(headers) + ")" : "";

    switch (step.behaviour) {
    case MockBehaviour::reply:
    case MockBehaviour::stall:
        response.set_content(reply_body(anthropic, step, model, step.text + echo), "application/json");
        break;
    case MockBehaviour::status: {
        std::string error = step.body.empty() ? Json{{"error", {{"message", "mock error " + std::to_string(step.status) + echo},
                                                                {"type", "mock_error"}}}}
                                                    .dump()
                                              : step.body + echo;
        response.status = step.status;
        if (!step.retry_after.empty())
            response.set_header("Retry-After", step.retry_after);
        response.set_content(error, "application/json");
        break;
    }
    case MockBehaviour::drop:
        response.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink&) { return false; });
        break;
    case MockBehaviour::truncate: {
        auto full = std::make_shared<std::string>(reply_body(anthropic, step, model, step.text));
        response.set_content_provider(full->size(), "application/json",
                                      [full](size_t offset, size_t, httplib::DataSink& sink) {
                                          if (offset > 0)
                                              return false;
                                          sink.write(full->data(), full->size() / 2);
                                          return true;
                                      });
        break;
    }
    case MockBehaviour::malformed_json:
        response.set_content("{\"choices\": [{\"message\": {\"content\": \"unterminated" + echo, "application/json");
        break;
    case MockBehaviour::raw: response.set_content(step.body + echo, "application/json"); break;
    }
    std::lock_guard lock(m_mutex);
    m_requests[index].answered_s = now_s();
}

} // namespace kforge::test
