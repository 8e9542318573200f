// The test runner: Catch2 plus the [gpu] gate. When the selected tests include [gpu] ones and no
// CUDA device can be used here, it says why and exits 77, which CTest reports as "skipped".
#define CATCH_CONFIG_RUNNER
#include "kf_catch.hpp"

#include <cstdio>
#include <string>

#include <csignal>
#include <thread>

#include "test_support.hpp"
#include "evaluator/worker_protocol.hpp"
#include "util/subprocess.hpp"

#include <unistd.h>

namespace {
// A child for the subprocess tests: echoes frames, sleeps or crashes on request.
int run_echo_child()
{
    auto channel = kforge::ParentChannel::adopt();
    while (auto frame = channel.receive()) {
        if (*frame == "sleep")
            std::this_thread::sleep_for(std::chrono::hours(1));
        if (*frame == "crash")
            std::raise(SIGSEGV);
        channel.send("echo:" + *frame);
    }
    return 0;
}
// A stand-in GPU worker (`__worker gpu`) for the respawn tests: the same framed CBOR protocol,
// answering "ping", crashing on "crash", hanging on "hang", asking for a restart on "poison".
int run_fake_gpu_worker()
{
    auto channel = kforge::ParentChannel::adopt();
    int served = 0;
    while (auto frame = channel.receive()) {
        kforge::Json request = kforge::decode_message(*frame);
        std::string op = request.value("op", "");
        if (op == "crash")
            std::raise(SIGSEGV);
        if (op == "hang")
            std::this_thread::sleep_for(std::chrono::hours(1));
        kforge::Json reply{{"ok", true}, {"served", ++served}, {"pid", static_cast<int>(::getpid())}};
        if (op == "poison")
            reply["restart"] = true;
        channel.send(kforge::encode_message(reply));
        if (op == "poison")
            return 0;
    }
    return 0;
}
} // namespace

int main(int argc, char** argv)
{
    if (argc == 3 && std::string(argv[1]) == "__worker" && std::string(argv[2]) == "gpu")
        return run_fake_gpu_worker();
    if (argc == 2 && std::string(argv[1]) == "--kforge-test-echo-child")
        return run_echo_child();
    bool gpu_selected = false;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.find("[gpu]") != std::string::npos && arg.find("~[gpu]") == std::string::npos)
            gpu_selected = true;
    }
    if (gpu_selected) {
        std::string why = kforge::test::gpu_unavailable_reason();
        if (!why.empty()) {
            std::printf("SKIPPED: the [gpu] tests need a CUDA device: %s\n", why.c_str());
            return 77;
        }
    }
    return Catch::Session().run(argc, argv);
}
