// The controller's handle on a GPU worker process of this host: spawn, request/reply with
// deadlines, and respawn after a crash, a hang or a reply that asks for a restart. The controller
// itself never initialises CUDA.
//
// A worker on a GPU that other runs share (worker/share.hpp) may have to wait for the GPU's measuring
// lock; it says so with interim frames, and a request's deadline does not run while it waits: the
// deadline bounds the worker's own work, not another run's measurements.
//
// Not thread-safe: one thread uses a client. That thread must outlive the worker, because a child
// dies with the thread that spawned it (util/subprocess.hpp, PR_SET_PDEATHSIG).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "evaluator/gpu/link.hpp"
#include "util/json_reader.hpp"
#include "util/subprocess.hpp"

namespace kforge {

class GpuWorkerClient final : public GpuLink
{
public:
    // `visible_devices` becomes the worker's CUDA_VISIBLE_DEVICES (a UUID pins it to one GPU);
    // empty leaves the inherited value alone.
    GpuWorkerClient(std::string worker_executable, std::string visible_devices);
    ~GpuWorkerClient() override = default;

    WorkerReply request(const Json& message, std::chrono::milliseconds deadline) override;
    std::string set_setup(Json setup, std::chrono::milliseconds deadline) override;
    int restarts() const override { return m_restarts; }
    const Json& setup_reply() const override { return m_setup_reply; }
    void stop() override;

private:
    bool ensure_started(std::string& problem);
    bool run_setup(std::string& problem);
    // Receives the reply to the request just sent, through any interim frames; `waited_too_long`
    // says a timeout came while the worker waited for the measuring lock.
    ReceiveStatus receive_reply(Json& reply, std::chrono::milliseconds deadline, bool& waited_too_long);

    std::string m_executable;
    std::string m_visible_devices;
    Subprocess m_process;
    std::optional<Json> m_setup;
    std::chrono::milliseconds m_setup_deadline{120000};
    Json m_setup_reply = Json::object();
    int m_restarts = 0;
    bool m_started_once = false;
};

} // namespace kforge
