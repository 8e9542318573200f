// CompilePool: worker processes that are killed at the deadline or die, and a pool that keeps
// serving; several threads at once; `kforge task check` end to end.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>

#include "evaluator/compile/compile.hpp"
#include "evaluator/simulated_runs.hpp"
#include "util/host_resources.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

using namespace kforge;

namespace {

CompilePoolConfig pool_config(size_t workers)
{
    CompilePoolConfig config;
    config.workers = workers;
    config.worker_executable = test::kforge_binary().string();
    return config;
}

CompileRequest simple_request(int value)
{
    CompileRequest request;
    request.source = "extern \"C\" __global__ void k(int* y) { y[threadIdx.x] = VALUE * (int)threadIdx.x; }\n";
    request.kernels = {"k"};
    request.params = {{"VALUE", value}};
    return request;
}

// A pool whose workers honour the test hooks (compile_pool.cpp), so a compile can hang for ever
// without a core spent on it.
CompilePoolConfig hooked_pool_config(size_t workers, std::chrono::milliseconds deadline)
{
    CompilePoolConfig config = pool_config(workers);
    config.deadline = deadline;
    config.worker_env = {{"KFORGE_COMPILE_TEST_HOOKS", "1"}};
    return config;
}

// A compile that never ends: the worker takes it and hangs until it is killed.
CompileRequest endless_request()
{
    CompileRequest endless = simple_request(0);
    endless.source += "// kforge-test-hook: hang\n";
    return endless;
}

// A deadline that a compile of simple_request() meets even on a loaded machine (a fresh worker's
// first NVRTC compile took over 2 s beside other builds), so only the hanging compile reaches it.
constexpr std::chrono::milliseconds k_hang_deadline{6000};

} // namespace

TEST_CASE("a compile past its deadline is killed, reported as timeout, and the pool keeps serving", "[evaluator][pool]")
{
    CompilePool pool(hooked_pool_config(1, k_hang_deadline));
    CompileResult result = pool.compile(endless_request());
    INFO(result.message);
    CHECK(!result.ok);
    CHECK(result.failure == VerdictKind::timeout);
    CHECK(result.message.find("did not finish within 6 s") != std::string::npos);
    CompileResult next = pool.compile(simple_request(1));
    INFO(next.message);
    CHECK(next.ok);
    CHECK(pool.spawned() == 2);
}

TEST_CASE("a worker that dies mid-compile yields 'the compiler crashed' and is replaced", "[evaluator][pool]")
{
    CompilePoolConfig config = pool_config(1);
    config.worker_env = {{"KFORGE_COMPILE_TEST_HOOKS", "1"}};
    test::TempDir cache;
    config.cache_dir = cache.path();
    CompilePool pool(config);
    CompileRequest crashing = simple_request(1);
    crashing.source += "// kforge-test-hook: crash\n";
    CompileResult result = pool.compile(crashing);
    INFO(result.message);
    CHECK(!result.ok);
    CHECK(result.failure == VerdictKind::compile_error);
    CHECK(result.message.find("the compiler crashed (killed by signal 9") != std::string::npos);
    CHECK(pool.compile(simple_request(2)).ok);
    // A crash says more about the machine than the source: it is not cached.
    CompileResult again = pool.compile(crashing);
    CHECK(!again.cache_hit);
    CHECK(again.message.find("the compiler crashed") != std::string::npos);
    CHECK(pool.compile(simple_request(3)).ok);
    CHECK(pool.spawned() == 3);
}

TEST_CASE("the crash hook is inert unless the worker's environment enables it", "[evaluator][pool]")
{
    CompilePool pool(pool_config(1));
    CompileRequest request = simple_request(1);
    request.source += "// kforge-test-hook: crash\n";
    CHECK(pool.compile(request).ok);
}

TEST_CASE("several threads compile at once through a pool of two workers", "[evaluator][pool]")
{
    CompilePool pool(pool_config(2));
    constexpr int k_threads = 4;
    constexpr int k_per_thread = 3;
    std::vector<std::vector<CompileResult>> results(k_threads);
    std::vector<std::thread> threads;
    for (int t = 0; t < k_threads; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < k_per_thread; ++i)
                results[t].push_back(pool.compile(simple_request(i)));
        });
    for (auto& t : threads)
        t.join();
    for (int t = 0; t < k_threads; ++t) {
        REQUIRE(results[t].size() == k_per_thread);
        for (int i = 0; i < k_per_thread; ++i) {
            INFO("thread " << t << ", VALUE=" << i << ": " << results[t][i].message);
            CHECK(results[t][i].ok);
            // Same request, same bytes, whichever worker compiled it.
            CHECK(results[t][i].cubin == results[0][i].cubin);
            if (i > 0)
                CHECK(results[t][i].cubin != results[t][0].cubin);
        }
    }
    CHECK(pool.spawned() == 2);
}

TEST_CASE("kforge task check compiles the reference, then runs the GPU self-tests or says why not", "[evaluator][pool][e2e]")
{
    test::TempDir home;
    auto result = test::run_kforge({"task", "check", (test::source_dir() / "tasks/softmax_f32.json").string()},
                                   {"XDG_CACHE_HOME=" + home.path().string()});
    INFO(result.out << result.err);
    CHECK(result.exit_code == 0);
    CHECK(result.out.find("reference.cu: softmax_ref: ") != std::string::npos);
    // Resources on every machine: from the ptxas report, or where NVRTC's log has none (seen on a
    // driver-580 machine), from the CUBIN itself; never "no ptxas report".
    CHECK(std::regex_search(result.out, std::regex(R"(softmax_ref: [1-9][0-9]* registers, (0 B spill stores|0 B stack, [0-9]+ B static smem \(from the CUBIN))")));
    CHECK(result.out.find("no ptxas report") == std::string::npos);
    CHECK(result.out.find(" compile(s) succeeded") != std::string::npos);
    if (test::gpu_unavailable_reason().empty()) {
        CHECK(result.out.find("self-tests passed") != std::string::npos);
    } else {
        CHECK(result.out.find("GPU self-tests skipped") != std::string::npos);
        CHECK(result.out.find("no NVIDIA driver/GPU found") != std::string::npos);
    }
}

TEST_CASE("kforge task check fails when a kernel does not compile, at every param point", "[evaluator][pool][e2e]")
{
    test::TempDir dir;
    std::string spec = read_file(test::source_dir() / "tasks/softmax_f32.json");
    spec = replace_all(spec, "\"softmax_f32/reference.cu\"", "\"reference.cu\"");
    {
        Json json = Json::parse(spec);
        json["seeds"] = Json::array({"seeds/tuned.cu"});
        spec = json.dump(2);
    }
    test::write_text(dir / "spec.json", spec);
    test::write_text(dir / "reference.cu", read_file(test::source_dir() / "tasks/softmax_f32/reference.cu"));
    std::filesystem::create_directories(dir / "seeds");
    test::write_text(dir / "seeds/tuned.cu",
                     "/* kforge:plan\n{ \"params\": {\"BLOCK\": [128, 256]},\n"
                     "  \"launches\": [{\"kernel\": \"softmax\", \"grid\": [\"M\"], \"block\": [\"BLOCK\"],"
                     " \"args\": [\"x\", \"y\", \"M\", \"N\"]}] }\n*/\n"
                     "extern \"C\" __global__ void softmax(const float* x, float* y, int M, int N)\n{\n"
                     "#if BLOCK == 256\n    broken_here();\n#endif\n    y[0] = x[0];\n}\n");
    auto result = test::run_kforge({"task", "check", (dir / "spec.json").string()}, {"XDG_CACHE_HOME=" + (dir / "cache").string()});
    INFO(result.out << result.err);
    CHECK(result.exit_code == 1);
    CHECK(result.out.find("seeds/tuned.cu [BLOCK=128]: softmax: ") != std::string::npos);
    CHECK(result.out.find("seeds/tuned.cu [BLOCK=256]: does not compile") != std::string::npos);
    CHECK(result.out.find("candidate.cu(8): error: identifier \"broken_here\" is undefined") != std::string::npos);
    CHECK(result.out.find("1 of 3 compile(s) failed") != std::string::npos);
    CHECK(result.out.find("GPU self-tests not run") != std::string::npos);
}

TEST_CASE("a cancelled pool ends the compile in progress and those waiting, and serves no more",
          "[evaluator][pool][hostile]")
{
    // One worker busy with a compile that takes minutes, one call waiting for it: an interrupted
    // session must not wait for either.
    CompilePool pool(hooked_pool_config(1, std::chrono::minutes(10)));
    CompileRequest endless = endless_request();
    CompileResult busy, waiting;
    std::thread first([&] { busy = pool.compile(endless); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::thread second([&] { waiting = pool.compile(simple_request(7)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    pool.cancel();
    first.join();
    second.join();
    for (const CompileResult* result : {&busy, &waiting}) {
        INFO(result->message);
        CHECK_FALSE(result->ok);
        CHECK(result->failure == VerdictKind::compile_error);
        CHECK(result->message == "not compiled: kforge is stopping");
    }
    CHECK(pool.compile(simple_request(8)).message == "not compiled: kforge is stopping");
}

TEST_CASE("a prefetched compile is what a later compile() of the same request gets, not a second compile",
          "[evaluator][pool]")
{
    // One worker, and a compile that always runs to its deadline, after which its worker is killed
    // and replaced when work comes: taken from the prefetch, the later compile() gets the
    // prefetch's timeout, and the next request the one replacement; compiled again (or prefetched
    // twice), it would hang and be killed again, and that request would need a third worker.
    CompilePool pool(hooked_pool_config(1, k_hang_deadline));
    CompileRequest endless = endless_request();
    pool.prefetch(endless);
    pool.prefetch(endless); // a second prefetch of the same request starts nothing more
    CompileResult result = pool.compile(endless);
    INFO(result.message);
    CHECK(result.failure == VerdictKind::timeout);
    // Another request is compiled as usual, by the worker that replaced the killed one.
    CompileResult next = pool.compile(simple_request(4));
    INFO(next.message);
    CHECK(next.ok);
    CHECK(pool.spawned() == 2);
}

TEST_CASE("a pool destroyed while a prefetch runs waits for it, or ends it at once when cancelled",
          "[evaluator][pool][hostile]")
{
    CompilePoolConfig config = hooked_pool_config(1, std::chrono::minutes(10));
    CompileRequest endless = endless_request();
    auto start = std::chrono::steady_clock::now();
    {
        CompilePool pool(config);
        pool.prefetch(endless);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        pool.cancel();
    }
    // Ended at once, not at its ten-minute deadline (a minute allows for any load).
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 60);
    {
        CompilePool pool(pool_config(1));
        pool.prefetch(simple_request(5)); // destroyed at once: the compile finishes first
    }
}

TEST_CASE("compile workers run at a lower CPU priority than the processes that drive the GPUs", "[evaluator][pool]")
{
    CompilePool pool(pool_config(2));
    REQUIRE(pool.compile(simple_request(6)).ok);
    std::vector<int> workers = test::child_processes(::getpid(), "__worker", "compile");
    REQUIRE(!workers.empty());
    for (int pid : workers) {
        std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
        std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        auto fields = split(stat.substr(stat.rfind(')') + 2), ' '); // state is field 3, nice field 19
        REQUIRE(fields.size() > 16);
        INFO("worker " << pid << ": " << stat);
        CHECK(std::stoi(fields[16]) >= 10);
    }
}

TEST_CASE("the default compile pool is sized by the GPUs it feeds, within the cores and memory", "[evaluator][pool]")
{
    constexpr size_t gib = size_t{1} << 30;
    // A big host: 4 per GPU, never fewer than 16, not one per core (compiles slow the GPU workers).
    CHECK(compile_workers_for(64, 512 * gib, 1) == 16);
    CHECK(compile_workers_for(64, 512 * gib, 4) == 16);
    CHECK(compile_workers_for(128, 512 * gib, 8) == 32);
    CHECK(compile_workers_for(128, 512 * gib, 64) == 128); // never more than the cores
    // Small hosts keep one per core, as before.
    CHECK(compile_workers_for(16, 128 * gib, 1) == 16);
    CHECK(compile_workers_for(2, 24 * gib, 1) == 2);
    // Memory: half of what is available, 400 MB a worker; unknown memory does not limit; at least one.
    CHECK(compile_workers_for(64, 4 * gib, 4) == 5);
    CHECK(compile_workers_for(64, 0, 4) == 16);
    CHECK(compile_workers_for(64, 100 << 20, 4) == 1);
}

TEST_CASE("KFORGE_COMPILE_WORKERS chooses the default pool size, and a bad value is refused by name", "[evaluator][pool]")
{
    ::setenv("KFORGE_COMPILE_WORKERS", "3", 1);
    CHECK(default_compile_workers(8) == 3);
    {
        CompilePoolConfig config = pool_config(0);
        config.gpus = 8;
        CompilePool pool(config);
        CHECK(pool.workers() == 3);
    }
    for (const char* bad : {"0", "-2", "many", "4x", "1025", "99999999999999999999999"}) {
        ::setenv("KFORGE_COMPILE_WORKERS", bad, 1);
        INFO(bad);
        CHECK_THROWS_WITH(default_compile_workers(1), Catch::Contains("KFORGE_COMPILE_WORKERS is '") &&
                                                          Catch::Contains("whole number of workers, 1 to 1024"));
    }
    ::unsetenv("KFORGE_COMPILE_WORKERS");
    CompilePoolConfig config = pool_config(0);
    config.gpus = 1;
    CompilePool pool(config);
    CHECK(pool.workers() == compile_workers_for(usable_cpus(), 0, 1)); // memory limits nothing here
}

TEST_CASE("a search whose GPUs wait behind a too-small compile pool says so once, naming the flag", "[evaluator][pool][e2e][extended]")
{
    if (usable_cpus() < 2) {
        WARN("one usable CPU: no pool can be larger than one worker here, so there is nothing to say");
        return;
    }
    // A fresh cache and one worker: softmax's seeds (6-8 param points each) compile one at a time
    // while the simulated GPU, done in milliseconds, waits for each.
    test::TempDir dir;
    std::vector<std::string> env{"KFORGE_SIMULATE_GPUS=1", "XDG_CACHE_HOME=" + (dir / "cache").string()};
    std::string task = (test::source_dir() / "tasks" / "softmax_f32.json").string();
    auto starved = test::run_kforge({"optimize", task, "-o", (dir / "one.kforge").string(), "--budget", "6",
                                     "--no-knowledge", "--compile-workers", "1"},
                                    env);
    INFO(starved.err);
    REQUIRE(starved.exit_code == 0);
    CHECK_THAT(starved.err, Catch::Contains("for compiles queued behind the pool's 1 worker; a larger pool "
                                            "(--compile-workers, up to the " +
                                            std::to_string(usable_cpus()) + " CPUs here)"));
    size_t said = 0;
    for (size_t at = starved.err.find("the GPUs have waited"); at != std::string::npos;
         at = starved.err.find("the GPUs have waited", at + 1))
        ++said;
    CHECK(said == 1);
    // A pool as large as the CPUs allow has nothing to suggest.
    std::filesystem::remove_all(dir / "cache");
    auto full = test::run_kforge({"optimize", task, "-o", (dir / "full.kforge").string(), "--budget", "6",
                                  "--no-knowledge", "--compile-workers", std::to_string(usable_cpus())},
                                 env);
    INFO(full.err);
    REQUIRE(full.exit_code == 0);
    CHECK_THAT(full.err, !Catch::Contains("the GPUs have waited"));
}

TEST_CASE("a search sizes its compile pool for all the GPUs it drives", "[evaluator][pool][e2e]")
{
    test::TempDir dir;
    std::string task = (test::source_dir() / "tasks" / "axpy_f32.json").string();
    auto run = [&](const std::string& name, std::vector<std::string> env) {
        env.push_back("XDG_CACHE_HOME=" + (dir / "cache").string());
        return test::run_kforge({"--log-level", "debug", "optimize", task, "-o", (dir / (name + ".kforge")).string(),
                                 "--budget", "1", "--no-knowledge"},
                                env);
    };
    auto four = run("four", {"KFORGE_SIMULATE_GPUS=4"});
    INFO(four.err);
    REQUIRE(four.exit_code == 0);
    size_t expected = compile_workers_for(usable_cpus(), 0, 4);
    CHECK_THAT(four.err, Catch::Contains(fmt::format("compile pool: up to {} compile{} at once, for 4 GPUs", expected,
                                                     expected == 1 ? "" : "s")));
    auto chosen = run("chosen", {"KFORGE_SIMULATE_GPUS=2", "KFORGE_COMPILE_WORKERS=3"});
    INFO(chosen.err);
    REQUIRE(chosen.exit_code == 0);
    CHECK_THAT(chosen.err, Catch::Contains("compile pool: up to 3 compiles at once, for 2 GPUs"));
}
