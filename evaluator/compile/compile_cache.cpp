// compile_cache_key() and the disk cache (see compile_cache.hpp).
#include "evaluator/compile/compile_cache.hpp"

#include <fmt/format.h>

#include "core/plan_check.hpp"
#include "evaluator/compile/compile_record.hpp"
#include "evaluator/compile/nvrtc_program.hpp"
#include "evaluator/compile/prelude.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {

namespace {

// Bump when the entry format or what a result holds changes.
constexpr int64_t k_cache_format = 1;

} // namespace

std::string compile_cache_key(const CompileRequest& request)
{
    Hasher hasher;
    hasher.add("kforge-compile").add(k_cache_format).add(nvrtc_version()).add(toolkit_fingerprint());
    for (const auto& option : nvrtc_options(request))
        hasher.add(option);
    hasher.add(static_cast<int64_t>(request.kernels.size()));
    for (const auto& kernel : request.kernels)
        hasher.add(kernel);
    hasher.add(candidate_prelude());
    for (const auto& shim : shim_headers())
        hasher.add(shim.name).add(shim.text);
    hasher.add(request.source);
    return hasher.hex();
}

CompileCache::CompileCache(std::filesystem::path dir) : m_dir(std::move(dir)) {}

std::filesystem::path CompileCache::json_path(const std::string& key) const
{
    return m_dir / key.substr(0, 2) / (key + ".json");
}

std::filesystem::path CompileCache::cubin_path(const std::string& key) const
{
    return m_dir / key.substr(0, 2) / (key + ".cubin");
}

std::optional<CompileResult> CompileCache::load(const std::string& key) const
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(json_path(key), ec))
        return std::nullopt;
    try {
        Json meta = Json::parse(read_file(json_path(key)));
        if (meta.at("format").get<int64_t>() != k_cache_format || meta.at("key").get<std::string>() != key)
            throw std::runtime_error("another format or key");
        CompileResult result = compile_result_from_json(meta.at("result"));
        if (result.ok) {
            result.cubin = read_file(cubin_path(key));
            if (result.cubin.size() != meta.at("cubin_bytes").get<size_t>() ||
                hash_hex(result.cubin) != meta.at("cubin_hash").get<std::string>())
                throw std::runtime_error("the CUBIN does not match its record");
        }
        result.cache_hit = true;
        result.cache_key = key;
        result.seconds = 0;
        return result;
    } catch (const std::exception& e) {
        log_debug("compile cache: ignoring the damaged entry {}: {}", key, e.what());
        return std::nullopt;
    }
}

void CompileCache::store(const std::string& key, const CompileResult& result) const
{
    if (!result.ok && result.failure != VerdictKind::compile_error)
        return;
    Json meta = {{"format", k_cache_format},
                 {"key", key},
                 {"result", compile_result_to_json(result, CubinEncoding::omitted)},
                 {"cubin_bytes", result.cubin.size()},
                 {"cubin_hash", hash_hex(result.cubin)}};
    std::lock_guard lock(m_write_mutex);
    try {
        std::filesystem::create_directories(json_path(key).parent_path());
        if (result.ok)
            write_file_atomic(cubin_path(key), result.cubin);
        // A log can echo a source line that is not UTF-8; such bytes become U+FFFD in the record.
        write_file_atomic(json_path(key), meta.dump(1, ' ', false, Json::error_handler_t::replace));
    } catch (const std::exception& e) {
        log_warn("compile cache: cannot store an entry in {}: {}", m_dir.string(), e.what());
    }
}

CompileRequest reference_compile_request(const Task& task, const std::string& arch)
{
    CompileRequest compile;
    compile.source = task.reference.source;
    compile.arch = arch;
    compile.params = enumerate_param_points(task.reference.plan, 1).front();
    compile.kernels = launched_kernels(task.reference.plan);
    return compile;
}

CompileResult compile_through_cache(const CompileRequest& request, const std::filesystem::path& dir)
{
    if (dir.empty())
        return compile_with_nvrtc(request);
    CompileCache cache(dir);
    std::string key = compile_cache_key(request);
    if (std::optional<CompileResult> cached = cache.load(key))
        return *cached;
    CompileResult compiled = compile_with_nvrtc(request);
    cache.store(key, compiled);
    return compiled;
}

} // namespace kforge
