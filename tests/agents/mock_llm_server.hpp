// A mock LLM server for tests: speaks OpenAI Chat Completions (POST /v1/chat/completions) and
// Anthropic Messages (POST /v1/messages) on 127.0.0.1 at an ephemeral port, inside the test
// process, and misbehaves on demand.
//
// A test scripts the answers: each request takes the next step of the script, and once the script
// is used up, the default step. A step can answer normally (with the usage numbers it reports),
// answer with any status and Retry-After, stall before answering, drop the connection after the
// headers, send half of a declared body, send malformed JSON or any raw body. Every request is
// kept (path, headers, body, arrival time) so a test can check what the client sent.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace httplib {
class Server;
}

namespace kforge::test {

enum class MockBehaviour {
    reply,          // a well-formed reply in the request's wire format
    status,         // `status` with `body` (an error JSON when empty) and Retry-After
    stall,          // sleep `delay_s`, then reply (released early when the server stops)
    drop,           // send the headers of a chunked 200, then close without a body
    truncate,       // declare the full body's length, send half of it, close
    malformed_json, // 200 with a body that is not JSON
    raw,            // 200 with `body` verbatim as application/json
};

struct MockStep {
    MockBehaviour behaviour = MockBehaviour::reply;
    std::string text = "CHANGE: nothing\n```cuda\nextern \"C\" __global__ void k() {}\n```\n";
    int status = 200;
    std::string body;
    std::string retry_after;       // Retry-After header value ("" = none)
    double delay_s = 0;            // stall length (stall) or a delay before any answer
    int64_t input_tokens = 1200;   // as reported in usage (cached included)
    int64_t cached_tokens = 200;
    int64_t output_tokens = 345;
    bool cut_at_max_tokens = false;   // finish_reason "length" / stop_reason "max_tokens"
    bool echo_credentials = false;    // copy the request's Authorization/x-api-key into the answer

    static MockStep reply(std::string text);
    static MockStep error(int status, std::string retry_after = "");
};

struct MockRequest {
    std::string path;
    std::map<std::string, std::string> headers; // lowercase names
    std::string body;
    double arrived_s = 0;  // steady clock seconds
    double answered_s = 0; // when the handler finished (0 if it never did)
};

class MockLlmServer
{
public:
    MockLlmServer();
    ~MockLlmServer();
    MockLlmServer(const MockLlmServer&) = delete;
    MockLlmServer& operator=(const MockLlmServer&) = delete;

    int port() const { return m_port; }
    std::string openai_url() const;    // "http://127.0.0.1:PORT/v1"
    std::string anthropic_url() const; // "http://127.0.0.1:PORT"

    void push(MockStep step);
    void set_default(MockStep step);
    std::vector<MockRequest> requests() const;
    size_t request_count() const;

private:
    void handle(const std::string& path, const std::map<std::string, std::string>& headers, const std::string& body,
                void* response);
    bool wait_or_stop(double seconds);

    std::unique_ptr<httplib::Server> m_server;
    std::thread m_thread;
    int m_port = 0;
    mutable std::mutex m_mutex;
    std::condition_variable m_stop_signal;
    bool m_stopping = false;
    std::deque<MockStep> m_script;
    MockStep m_default;
    std::vector<MockRequest> m_requests;
};

} // namespace kforge::test
