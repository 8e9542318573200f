// What every provider does around its exchange (timing, recording, refusing a rejected key), and
// the factory that turns a model spec into a provider.
#include "agents/provider.hpp"

#include <chrono>
#include <cstdlib>

#include "agents/call_record_json.hpp"
#include "agents/http_provider.hpp"
#include "agents/replay_provider.hpp"
#include "util/error.hpp"

namespace kforge {

ChatResult Provider::complete(const ChatRequest& request)
{
    using namespace std::chrono;
    double started_at = duration<double>(system_clock::now().time_since_epoch()).count();
    auto start = steady_clock::now();
    ChatResult result = exchange(request);
    result.record.started_at = started_at;
    result.record.latency_s = duration<double>(steady_clock::now() - start).count();
    if (m_recorder)
        m_recorder(result.record);
    if (result.record.status == "refused") {
        std::string_view variable = api_key_variable(m_spec.provider);
        bool has_key = !variable.empty() && std::getenv(std::string(variable).c_str());
        fail_runtime("{} — the server refused the credentials; {}", result.record.error,
                     has_key ? fmt::format("check that {} holds a valid key for this endpoint", variable)
                             : fmt::format("set {} to a valid key", variable));
    }
    return result;
}

std::unique_ptr<Provider> make_provider(const ModelSpec& spec, const ProviderSettings& settings)
{
    if (spec.provider == k_provider_replay)
        return std::make_unique<ReplayProvider>(spec, load_call_records(spec.model), settings.recorder, settings.seed);
    const WireFormat* wire = spec.provider == k_provider_openai      ? &openai_wire()
                             : spec.provider == k_provider_anthropic ? &anthropic_wire()
                                                                     : nullptr;
    if (!wire)
        fail_input("{}: not a model provider (expected openai, anthropic or replay)", spec.label());
    std::string variable(api_key_variable(spec.provider));
    const char* key = std::getenv(variable.c_str());
    std::string api_key = key ? key : "";
    if (api_key.empty() && spec.base_url.empty())
        fail_input("{} needs an API key: set {} (or use --model builtin, which needs none)", spec.label(), variable);
    return std::make_unique<HttpProvider>(*wire, spec, settings, std::move(api_key));
}

} // namespace kforge
