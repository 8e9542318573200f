// The controller's handle on the GPU worker: a crash, a hang or a restart request costs one worker
// process, and the next request is served by a fresh one. Runs without a GPU, against a stand-in
// worker (the test binary itself, see tests/main.cpp).
#include "kf_catch.hpp"

#include <csignal>
#include <future>

#include <signal.h>

#include "evaluator/gpu/client.hpp"
#include "util/subprocess.hpp"

using namespace kforge;

TEST_CASE("the GPU worker is respawned after a crash, a hang and a restart request", "[evaluator][worker]")
{
    GpuWorkerClient client(self_executable(), "");
    WorkerReply first = client.request(Json{{"op", "ping"}}, std::chrono::seconds(10));
    REQUIRE(first.failure == WorkerFailure::none);
    int first_pid = first.body.at("pid");
    CHECK(first.body.at("served") == 1);

    WorkerReply crashed = client.request(Json{{"op", "crash"}}, std::chrono::seconds(10));
    CHECK(crashed.failure == WorkerFailure::crashed);
    CHECK_THAT(crashed.failure_message, Catch::Contains("signal 11"));

    WorkerReply after_crash = client.request(Json{{"op", "ping"}}, std::chrono::seconds(10));
    REQUIRE(after_crash.failure == WorkerFailure::none);
    CHECK(after_crash.body.at("pid") != first_pid);
    CHECK(after_crash.body.at("served") == 1);
    CHECK(client.restarts() == 1);

    auto begin = std::chrono::steady_clock::now();
    WorkerReply hung = client.request(Json{{"op", "hang"}}, std::chrono::milliseconds(500));
    CHECK(hung.failure == WorkerFailure::timed_out);
    CHECK(std::chrono::steady_clock::now() - begin < std::chrono::seconds(60)); // at its deadline, not the hang's hour

    WorkerReply poisoned = client.request(Json{{"op", "poison"}}, std::chrono::seconds(10));
    REQUIRE(poisoned.failure == WorkerFailure::none);
    CHECK(poisoned.body.value("restart", false));
    WorkerReply fresh = client.request(Json{{"op", "ping"}}, std::chrono::seconds(10));
    REQUIRE(fresh.failure == WorkerFailure::none);
    CHECK(fresh.body.at("served") == 1);
    CHECK(client.restarts() == 3);
}

TEST_CASE("a worker's wait for a shared GPU's measuring lock does not run its deadline, its own work does",
          "[evaluator][worker]")
{
    GpuWorkerClient client(self_executable(), "");
    // The deadline leaves the 20 ms of work room for a loaded machine; the wait is well past it.
    WorkerReply waited = client.request(Json{{"op", "shared"}, {"wait_ms", 3000}, {"work_ms", 20}},
                                        std::chrono::milliseconds(1500));
    INFO(waited.failure_message);
    REQUIRE(waited.failure == WorkerFailure::none);
    CHECK(waited.body.at("served") == 1); // the interim frames are not taken for the reply
    WorkerReply slow = client.request(Json{{"op", "shared"}, {"wait_ms", 10}, {"work_ms", 60000}},
                                      std::chrono::milliseconds(1500));
    CHECK(slow.failure == WorkerFailure::timed_out);
    CHECK_THAT(slow.failure_message, Catch::Contains("did not answer within"));
}

TEST_CASE("a setup request is replayed to every new worker", "[evaluator][worker]")
{
    GpuWorkerClient client(self_executable(), "");
    CHECK(client.set_setup(Json{{"op", "setup"}}, std::chrono::seconds(10)).empty());
    CHECK(client.setup_reply().at("served") == 1);
    client.request(Json{{"op", "crash"}}, std::chrono::seconds(10));
    WorkerReply after = client.request(Json{{"op", "ping"}}, std::chrono::seconds(10));
    REQUIRE(after.failure == WorkerFailure::none);
    CHECK(after.body.at("served") == 2); // the replayed setup was the new worker's first request
}

// A worker that stopped reading (stuck in the driver between requests; here stopped with SIGSTOP)
// cannot take a request bigger than the pipe's buffer, as a CUBIN is: the deadline covers the send
// too, so the request fails in time and the next one gets a fresh worker. The send once waited for
// the worker for ever.
TEST_CASE("a request to a worker that stopped reading times out within its deadline and the worker is replaced",
          "[evaluator][worker]")
{
    GpuWorkerClient client(self_executable(), "");
    WorkerReply first = client.request(Json{{"op", "ping"}}, std::chrono::seconds(10));
    REQUIRE(first.failure == WorkerFailure::none);
    int stuck_pid = first.body.at("pid");
    REQUIRE(::kill(stuck_pid, SIGSTOP) == 0);
    Json big{{"op", "ping"}, {"cubin", std::string(size_t{4} << 20, 'x')}};
    auto begin = std::chrono::steady_clock::now();
    auto sending = std::async(std::launch::async, [&] { return client.request(big, std::chrono::milliseconds(500)); });
    if (sending.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
        ::kill(stuck_pid, SIGKILL); // unblocks the send, so the test can report
        sending.wait();
        FAIL("the request waited for a worker that does not read, past its deadline");
    }
    WorkerReply stuck = sending.get();
    CHECK(stuck.failure == WorkerFailure::timed_out);
    CHECK_THAT(stuck.failure_message, Catch::Contains("took no request within"));
    CHECK(std::chrono::steady_clock::now() - begin < std::chrono::seconds(60)); // at its deadline
    WorkerReply fresh = client.request(Json{{"op", "ping"}}, std::chrono::seconds(10));
    REQUIRE(fresh.failure == WorkerFailure::none);
    CHECK(fresh.body.at("pid") != stuck_pid);
    CHECK(::kill(stuck_pid, 0) != 0); // the stopped worker was killed and reaped
}
