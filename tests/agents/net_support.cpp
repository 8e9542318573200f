// [net] test helpers; see net_support.hpp.
#include "net_support.hpp"

#include <cstdlib>

#include "test_support.hpp"

namespace kforge::test {

std::shared_ptr<const PriceTable> mock_prices()
{
    static std::shared_ptr<const PriceTable> table = [] {
        TempDir dir;
        write_text(dir / "prices.json", R"({"schema": "kforge.pricing/1", "models": {
            "openai:mock-model": {"input": 2.0, "cached_input": 0.5, "output": 8.0, "date": "2025-01-01"},
            "anthropic:mock-model": {"input": 3.0, "cached_input": 0.3, "output": 15.0, "date": "2025-01-01"}}})");
        return std::make_shared<const PriceTable>(PriceTable::load(dir / "prices.json"));
    }();
    return table;
}

CallRecorder CallLog::recorder()
{
    return [this](LlmCallRecord& record) {
        std::lock_guard lock(mutex);
        records.push_back(record);
    };
}

ProviderSettings fast_settings(CallLog* log)
{
    ProviderSettings settings;
    // Far above what the mock server takes, even on a loaded machine: a test that wants a timeout
    // sets its own.
    settings.timeouts.connect = std::chrono::milliseconds(10000);
    settings.timeouts.total = std::chrono::milliseconds(20000);
    settings.retry.max_retries = 3;
    settings.retry.base_delay_s = 0.01;
    settings.retry.max_delay_s = 0.05;
    settings.prices = mock_prices();
    if (log)
        settings.recorder = log->recorder();
    return settings;
}

ScopedEnv::ScopedEnv(std::string name, std::optional<std::string> value) : m_name(std::move(name))
{
    if (const char* old = std::getenv(m_name.c_str()))
        m_old = old;
    if (value)
        ::setenv(m_name.c_str(), value->c_str(), 1);
    else
        ::unsetenv(m_name.c_str());
}

ScopedEnv::~ScopedEnv()
{
    if (m_old)
        ::setenv(m_name.c_str(), m_old->c_str(), 1);
    else
        ::unsetenv(m_name.c_str());
}

} // namespace kforge::test
