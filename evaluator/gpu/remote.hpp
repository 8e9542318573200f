// GPUs of other hosts, over MPI (`mpirun -n R kforge optimize ...`).
//
// Rank 0 is the controller: the search, the model calls, the compiles and the only writer of the
// archive; it drives its own host's share of GPUs as on one host. Every other rank is an evaluation
// service (serve_gpus): it lists its host's GPUs for the controller, then, for each GPU the
// controller opens, starts a GPU worker pinned to it — a GpuWorkerClient exactly as on one host,
// respawns included — and relays that worker's request/reply frames between its pipes and MPI.
// CUBINs travel inside the frames; the task travels as a snapshot with the setup, so hosts need no
// shared file system. On the controller each remote GPU is a RemoteGpuLink, so the GPU evaluator
// schedules local and remote GPUs alike.
//
// Messages (CBOR, worker_protocol.hpp's framing), by tag:
//   control (2)  service -> 0: {"op": "hello", "host", "local_rank", "local_size", "devices": [DeviceFacts],
//                               "problem": "" or why the host's GPUs could not be listed}
//                0 -> service: {"op": "open", "tag": T, "uuid": U}  start a worker for GPU U, spoken to on tag T
//                              {"op": "shutdown"}                    the session is over
//   GPU (T >= 16) 0 -> service: {"op": "setup", "seq", "setup", "task": {"spec_text", "files"}, "deadline_ms"}
//                               {"op": "request", "seq", "message", "deadline_ms"}
//                               {"op": "stop"}
//                 service -> 0: {"seq", "failure": none|crashed|timed_out|not_started, "failure_message",
//                                "body", "problem", "setup_reply", "restarts"}
// A reply carries its request's seq, so one that comes after its request was given up is dropped.
//
// Failure: a rank that dies (MpiWorld declares it lost after its silence limit) makes its links
// answer WorkerFailure::lost, and the evaluator gives the candidates it was running to other GPUs.
// A service whose controller is lost ends itself.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "evaluator/gpu/devices.hpp"
#include "evaluator/gpu/link.hpp"
#include "util/json_reader.hpp"

namespace kforge {

class MpiWorld;

inline constexpr int k_service_control_tag = 2;
inline constexpr int k_first_gpu_tag = 16;

// One GPU of another rank, as the controller drives it. Thread-compatible like GpuWorkerClient:
// one thread uses a link.
class RemoteGpuLink final : public GpuLink
{
public:
    // Asks `rank` to start a worker for the GPU `uuid`, spoken to on `tag`; `task` is the snapshot
    // ({"spec_text", "files"}) sent with every setup.
    RemoteGpuLink(MpiWorld& world, int rank, int tag, const std::string& uuid, Json task);
    ~RemoteGpuLink() override = default;

    WorkerReply request(const Json& message, std::chrono::milliseconds deadline) override;
    std::string set_setup(Json setup, std::chrono::milliseconds deadline) override;
    const Json& setup_reply() const override { return m_setup_reply; }
    int restarts() const override { return m_restarts; }
    void stop() override;

private:
    // Sends `message` (seq added) and waits for its reply; `failure` says why there is none.
    std::optional<Json> exchange(Json message, std::chrono::milliseconds wait, WorkerReply& failure);

    MpiWorld& m_world;
    int m_rank;
    int m_tag;
    Json m_task;
    Json m_setup_reply = Json::object();
    int m_restarts = 0;
    uint64_t m_seq = 0;
};

// What a service rank said when it started.
struct RemoteHost {
    int rank = 0;
    std::string host;
    int local_rank = 0;
    int local_size = 1;
    std::vector<VisibleGpu> devices;
    std::string problem;             // why it lists no GPU
};

// The hello of every other rank, waiting up to `deadline` in all; a rank that is lost or silent
// by then is left out with a warning.
std::vector<RemoteHost> gather_remote_hosts(MpiWorld& world, std::chrono::milliseconds deadline);

// Tells every live service rank that the session is over (the controller, once its evaluator is
// gone).
void stop_gpu_services(MpiWorld& world);

// The body of a service rank: hello, then serve the GPUs the controller opens until it says
// shutdown or is lost. `worker_executable` as in EvaluatorConfig. Returns the exit code (0, or 4
// when the controller was lost); may leave with std::_Exit when a worker request outlives the end
// of the session, since the service keeps nothing that needs a clean exit.
int serve_gpus(MpiWorld& world, const std::string& worker_executable);

} // namespace kforge
