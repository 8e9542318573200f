// The CUBIN cache: what goes into the key, hits on repeat, failures cached, damaged entries
// recompiled rather than trusted.
#include <catch2/catch.hpp>

#include <functional>
#include <set>

#include "evaluator/compile/compile.hpp"
#include "evaluator/compile/compile_cache.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

using namespace kforge;

namespace {

CompileRequest base_request()
{
    CompileRequest request;
    request.source = "extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = VALUE; }\n";
    request.kernels = {"k"};
    request.params = {{"VALUE", 3}};
    return request;
}

CompilePoolConfig pool_config(const std::filesystem::path& cache)
{
    CompilePoolConfig config;
    config.workers = 1;
    config.worker_executable = test::kforge_binary().string();
    config.cache_dir = cache;
    return config;
}

} // namespace

TEST_CASE("the cache key changes with each input and is stable for the same request", "[evaluator][cache]")
{
    CompileRequest base = base_request();
    std::vector<CompileRequest> variants(6, base);
    variants[1].source += "// a comment changes the source\n";
    variants[2].arch = "sm_100a";
    variants[3].params["VALUE"] = 4;
    variants[4].kernels.push_back("other");
    variants[5].extra_options.push_back("-maxrregcount=64");
    std::set<std::string> keys;
    for (const auto& v : variants)
        keys.insert(compile_cache_key(v));
    CHECK(keys.size() == variants.size());
    CHECK(compile_cache_key(base) == compile_cache_key(base_request()));
    CHECK(compile_cache_key(base).size() == 32);
}

TEST_CASE("a repeated compile is a cache hit with the same CUBIN", "[evaluator][cache]")
{
    test::TempDir cache;
    CompilePool pool(pool_config(cache.path()));
    CompileResult first = pool.compile(base_request());
    REQUIRE(first.ok);
    CHECK(!first.cache_hit);
    CHECK(first.seconds > 0);
    CompileResult second = pool.compile(base_request());
    REQUIRE(second.ok);
    CHECK(second.cache_hit);
    CHECK(second.seconds == 0);
    CHECK(second.cubin == first.cubin);
    CHECK(second.lowered_names == first.lowered_names);
    CHECK(second.cache_key == first.cache_key);
    REQUIRE(second.resources.size() == 1);
    CHECK(second.resources[0].registers == first.resources[0].registers);
    CHECK(pool.spawned() == 1);
}

TEST_CASE("a compile error is cached under the same key, message and all", "[evaluator][cache]")
{
    test::TempDir cache;
    CompilePool pool(pool_config(cache.path()));
    CompileRequest request = base_request();
    request.params.clear();
    CompileResult first = pool.compile(request);
    REQUIRE(!first.ok);
    CHECK(first.message.find("\"VALUE\" is undefined") != std::string::npos);
    CompileResult second = pool.compile(request);
    CHECK(second.cache_hit);
    CHECK(!second.ok);
    CHECK(second.failure == VerdictKind::compile_error);
    CHECK(second.message == first.message);
    CHECK(!std::filesystem::exists(CompileCache(cache.path()).cubin_path(first.cache_key)));
}

TEST_CASE("a damaged cache entry is recompiled and overwritten, never trusted", "[evaluator][cache]")
{
    test::TempDir cache;
    CompilePool pool(pool_config(cache.path()));
    CompileResult first = pool.compile(base_request());
    REQUIRE(first.ok);
    CompileCache store(cache.path());
    auto cubin = store.cubin_path(first.cache_key);
    auto json = store.json_path(first.cache_key);
    std::string flipped = first.cubin;
    flipped[flipped.size() / 2] ^= 0x5a;
    std::string other_key = replace_all(read_file(json), first.cache_key, std::string(32, '0'));

    std::vector<std::pair<std::string, std::function<void()>>> damages = {
        {"a CUBIN with the wrong bytes", [&] { test::write_text(cubin, flipped); }},
        {"a truncated CUBIN", [&] { test::write_text(cubin, first.cubin.substr(0, 100)); }},
        {"a missing CUBIN", [&] { std::filesystem::remove(cubin); }},
        {"a JSON record that does not parse", [&] { test::write_text(json, "{\"format\": 1, \"key\": "); }},
        {"a JSON record of another key", [&] { test::write_text(json, other_key); }},
    };
    for (const auto& [what, damage] : damages) {
        INFO(what);
        damage();
        CHECK(!store.load(first.cache_key));
        CompileResult again = pool.compile(base_request());
        REQUIRE(again.ok);
        CHECK(!again.cache_hit);
        CHECK(again.cubin == first.cubin);
        auto reloaded = store.load(first.cache_key);
        REQUIRE(reloaded);
        CHECK(reloaded->cubin == first.cubin);
    }
}

TEST_CASE("a compile error whose log echoes bytes that are not UTF-8 still round-trips through worker and cache", "[evaluator][cache]")
{
    test::TempDir cache;
    CompilePool pool(pool_config(cache.path()));
    CompileRequest request = base_request();
    request.source = "extern \"C\" __global__ void k(float* y) { y[0] = oops; } // caf\xe9 \xff\n";
    CompileResult first = pool.compile(request);
    REQUIRE(!first.ok);
    CHECK(first.message.find("\"oops\" is undefined") != std::string::npos);
    CompileResult second = pool.compile(request);
    CHECK(second.cache_hit);
    CHECK(second.message.find("\"oops\" is undefined") != std::string::npos);
}
