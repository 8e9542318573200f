// Helpers for [net] tests: provider settings with short timeouts and backoffs, a recorder that
// keeps records, and a scoped environment variable.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agents/provider.hpp"

namespace kforge::test {

// Prices for the mock's models: openai:mock-model 2/0.5/8 and anthropic:mock-model 3/0.3/15.
std::shared_ptr<const PriceTable> mock_prices();

struct CallLog {
    std::mutex mutex;
    std::vector<LlmCallRecord> records;
    CallRecorder recorder();
};

// Connect 1 s, total 2 s, 3 retries from 10 ms; prices from mock_prices().
ProviderSettings fast_settings(CallLog* log = nullptr);

// Sets (or unsets, with nullopt) an environment variable for the scope's lifetime.
class ScopedEnv
{
public:
    ScopedEnv(std::string name, std::optional<std::string> value);
    ~ScopedEnv();
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    std::string m_name;
    std::optional<std::string> m_old;
};

} // namespace kforge::test
