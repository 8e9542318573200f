// The test runner: Catch2 plus gates for [gpu], [browser], [recorded], [mpi], [torch] and [slurm].
// When the selected tests include such ones and what they need (a CUDA device, chromium, a
// recorded archive, SLURM's daemons, ...) is missing here, it says why and exits 77, which CTest
// reports as "skipped".
#define CATCH_CONFIG_RUNNER
#include "kf_catch.hpp"

#include <cstdio>
#include <string>

#include <csignal>
#include <thread>

#include "slurm_cluster.hpp"
#include "test_support.hpp"
#include "evaluator/worker/worker_protocol.hpp"
#include "util/contain.hpp"
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
// answering "ping", crashing on "crash", hanging on "hang", asking for a restart on "poison", and on
// "shared" waiting `wait_ms` for a shared GPU's measuring lock (with the interim frames a real
// worker sends) before working `work_ms`.
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
        if (op == "shared") {
            channel.send(kforge::encode_message(kforge::Json{{"interim", "gpu_lock_waiting"}}));
            std::this_thread::sleep_for(std::chrono::milliseconds(request.value("wait_ms", 0)));
            channel.send(kforge::encode_message(kforge::Json{{"interim", "gpu_lock_holding"}}));
            std::this_thread::sleep_for(std::chrono::milliseconds(request.value("work_ms", 0)));
        }
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
    if (auto keeper = kforge::run_keeper_if_asked(argc, argv)) // programs the tests run contained
        return *keeper;
    if (argc == 3 && std::string(argv[1]) == "__worker" && std::string(argv[2]) == "gpu")
        return run_fake_gpu_worker();
    if (argc == 2 && std::string(argv[1]) == "--kforge-test-echo-child")
        return run_echo_child();
    // The GPU probe forks; it must run before any test initialises CUDA in this process.
    (void)kforge::test::gpu_unavailable_reason();
    // Tags whose tests need something this machine may lack: when such a tag is selected (and not
    // excluded with ~) and the need is unmet, the whole run is reported skipped with the reason.
    struct Gate {
        const char* tag;
        const char* needs;
        std::string (*unavailable_reason)();
    };
    const Gate gates[] = {
        {"[gpu]", "a CUDA device", kforge::test::gpu_unavailable_reason},
        {"[browser]", "chromium", kforge::test::browser_unavailable_reason},
        {"[recorded]", "a recorded run archive", kforge::test::recorded_unavailable_reason},
        {"[mpi]", "mpirun and a kforge built with MPI", kforge::test::mpi_unavailable_reason},
        {"[torch]", "a python3 that imports torch", kforge::test::torch_unavailable_reason},
        {"[slurm]", "a one-node SLURM cluster (munge and SLURM's daemons, root, MPI)",
         kforge::test::slurm_unavailable_reason},
    };
    for (const Gate& gate : gates) {
        bool selected = false;
        for (int i = 1; i < argc; ++i) {
            std::string arg = argv[i];
            std::string excluded = std::string("~") + gate.tag;
            if (arg.find(gate.tag) != std::string::npos && arg.find(excluded) == std::string::npos)
                selected = true;
        }
        if (!selected)
            continue;
        std::string why = gate.unavailable_reason();
        if (!why.empty()) {
            std::printf("SKIPPED: the %s tests need %s: %s\n", gate.tag, gate.needs, why.c_str());
            return 77;
        }
    }
    return Catch::Session().run(argc, argv);
}
