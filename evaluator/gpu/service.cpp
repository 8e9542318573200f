// The evaluation service of an MPI rank other than 0; see gpu/remote.hpp for the protocol.
//
// The service is a relay: its main thread reads control messages (open a GPU, shutdown) and
// watches the controller; each opened GPU gets a thread of its own that owns a GpuWorkerClient —
// the same worker, pinning and respawning as on one host — and turns the controller's messages
// into worker requests and the worker's replies into messages. The thread that spawns a worker
// must outlive it (util/subprocess.hpp), hence one long-lived thread per GPU. Each GPU writes the
// controller's task snapshot into a folder of its own and points its worker there, with this
// host's CUBIN cache.
#include <atomic>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "core/task.hpp"
#include "evaluator/gpu/client.hpp"
#include "evaluator/gpu/remote.hpp"
#include "evaluator/worker/worker_protocol.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/mpi_world.hpp"
#include "util/paths.hpp"

namespace kforge {
namespace {

constexpr auto k_poll = std::chrono::milliseconds(250);
constexpr auto k_shutdown_grace = std::chrono::seconds(3);

struct ServiceGpu {
    MpiWorld& world;
    int tag = 0;
    std::string uuid;
    std::string worker_executable;
    std::filesystem::path folder;    // where this GPU's task snapshot is written
    std::atomic<bool>& stopping;
    std::atomic<int>& running;
};

Json serve_setup(GpuWorkerClient& client, const ServiceGpu& gpu, const Json& message)
{
    Json setup = message.at("setup");
    const Json& task = message.at("task");
    std::filesystem::create_directories(gpu.folder);
    std::filesystem::path spec =
        write_task_snapshot(task.value("spec_text", ""), task.value("files", Json::object()), gpu.folder,
                            "the task snapshot from the controller (MPI rank 0)");
    setup["task_path"] = spec.string();
    setup["cache_dir"] = (cache_dir() / "cubin").string();
    std::string problem = client.set_setup(setup, std::chrono::milliseconds(message.value("deadline_ms", 600000)));
    return Json{{"problem", problem}, {"setup_reply", client.setup_reply()}};
}

Json serve_request(GpuWorkerClient& client, const Json& message)
{
    WorkerReply reply = client.request(message.at("message"), std::chrono::milliseconds(message.value("deadline_ms", 60000)));
    return Json{{"failure", worker_failure_name(reply.failure)},
                {"failure_message", reply.failure_message},
                {"body", reply.body}};
}

void serve_gpu(ServiceGpu gpu)
{
    GpuWorkerClient client(gpu.worker_executable, gpu.uuid);
    while (!gpu.stopping) {
        std::string bytes;
        MpiReceive status = gpu.world.receive(0, gpu.tag, bytes, k_poll);
        if (status == MpiReceive::lost)
            break;
        if (status == MpiReceive::timeout)
            continue;
        Json reply;
        try {
            Json message = decode_message(bytes);
            std::string op = message.value("op", "");
            if (op == "stop") {
                client.stop();
                continue;
            }
            reply = op == "setup" ? serve_setup(client, gpu, message) : serve_request(client, message);
            reply["seq"] = message.value("seq", uint64_t{0});
        } catch (const std::exception& e) {
            // A malformed message is the controller's bug; answering keeps it from waiting.
            reply = Json{{"failure", "crashed"}, {"failure_message", e.what()}, {"problem", e.what()}};
        }
        reply["restarts"] = client.restarts();
        gpu.world.send(0, gpu.tag, encode_message(reply));
    }
    client.stop();
    --gpu.running;
}

Json hello(const std::string& worker_executable, int local_rank, int local_size)
{
    Json devices = Json::array();
    std::string problem;
    try {
        for (const auto& gpu : list_visible_gpus(worker_executable))
            devices.push_back(gpu.facts.to_json());
    } catch (const std::exception& e) {
        problem = e.what();
    }
    return Json{{"op", "hello"},     {"host", host_name()}, {"local_rank", local_rank},
                {"local_size", local_size}, {"devices", devices},  {"problem", problem}};
}

} // namespace

int serve_gpus(MpiWorld& world, const std::string& worker_executable)
{
    Json greeting = hello(worker_executable, world.local_rank(), world.local_size());
    if (!greeting["problem"].get<std::string>().empty())
        log_warn("MPI rank {} on {}: {}", world.rank(), world.host(), greeting["problem"].get<std::string>());
    world.send(0, k_service_control_tag, encode_message(greeting));

    ScratchFolder folder;
    std::atomic<bool> stopping{false};
    std::atomic<int> running{0};
    std::vector<std::thread> threads;
    bool controller_lost = false;
    for (;;) {
        std::string bytes;
        MpiReceive status = world.receive(0, k_service_control_tag, bytes, k_poll);
        if (status == MpiReceive::lost) {
            log_warn("MPI rank {}: the controller (rank 0) is gone; this evaluation service stops", world.rank());
            controller_lost = true;
            break;
        }
        if (status == MpiReceive::timeout)
            continue;
        Json message;
        try {
            message = decode_message(bytes);
        } catch (const std::exception& e) {
            log_warn("MPI rank {}: a control message from the controller is malformed: {}", world.rank(), e.what());
            continue;
        }
        std::string op = message.value("op", "");
        if (op == "shutdown")
            break;
        if (op == "open") {
            int tag = message.value("tag", 0);
            ++running;
            threads.emplace_back(serve_gpu, ServiceGpu{world, tag, message.value("uuid", ""), worker_executable,
                                                       folder.path() / fmt::format("gpu-{}", tag), stopping, running});
        }
    }
    stopping = true;
    auto until = std::chrono::steady_clock::now() + k_shutdown_grace;
    while (running > 0 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    int code = controller_lost ? k_exit_runtime : k_exit_ok;
    if (running > 0) {
        // A GPU still inside a worker request (the controller left mid-run): its worker dies with
        // this process, and nothing here needs more than MPI's goodbye.
        world.finalize();
        std::_Exit(code);
    }
    for (auto& thread : threads)
        thread.join();
    world.finalize();
    return code;
}

} // namespace kforge
