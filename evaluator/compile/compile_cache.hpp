// The CUBIN cache on disk, keyed by compile_cache_key() (compile.hpp).
//
// An entry is two files under <dir>/<first two hex digits of the key>/: <key>.cubin (absent for a
// failed compile) and <key>.json (outcome, log, message, resources, lowered names, compile time,
// and the CUBIN's size and hash). The JSON is written last, so it marks a complete entry. Both
// writes are atomic (temporary file + rename). Anything that does not check out on reading, a
// JSON that does not parse, another key, a CUBIN of the wrong size or hash, is a miss and is
// overwritten by the next store: a cache entry is never trusted, only verified.
#pragma once

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "evaluator/compile/compile.hpp"

namespace kforge {

class CompileCache
{
public:
    explicit CompileCache(std::filesystem::path dir);

    // The stored result (cache_hit set, seconds 0), or nullopt when absent or corrupt.
    std::optional<CompileResult> load(const std::string& key) const;
    // Stores a successful compile or a compile error the compiler reported (the pool never passes
    // a crash here); a timeout is ignored. A failed write is logged, not thrown.
    void store(const std::string& key, const CompileResult& result) const;

    std::filesystem::path json_path(const std::string& key) const;
    std::filesystem::path cubin_path(const std::string& key) const;

private:
    std::filesystem::path m_dir;
    mutable std::mutex m_write_mutex; // write_file_atomic's temporary name is per process
};

// The task's reference as the GPU worker compiles it for `arch`: its source, the first param point
// of its plan, its plan's kernels.
CompileRequest reference_compile_request(const Task& task, const std::string& arch);

// `request` through the cache in `dir` ("" for none): the stored result when it checks out, else
// NVRTC's, then stored. For processes that compile one thing now and then (the GPU worker's
// reference), not the compile pool.
CompileResult compile_through_cache(const CompileRequest& request, const std::filesystem::path& dir);

} // namespace kforge
