// The controller's handle on the GPU worker process: spawn, request/reply with deadlines, and
// respawn after a crash, a hang or a reply that asks for a restart. The controller itself never
// initialises CUDA.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "util/json_reader.hpp"
#include "util/subprocess.hpp"

namespace kforge {

enum class WorkerFailure { none, crashed, timed_out };

struct WorkerReply {
    WorkerFailure failure = WorkerFailure::none;
    std::string failure_message;   // how the worker died or hung
    Json body = Json::object();    // the reply when failure == none
};

class GpuWorkerClient
{
public:
    // `setup` is replayed to every new worker process (the task, the run secret, the cache).
    GpuWorkerClient(std::string worker_executable, std::string visible_devices);

    // Sends one request, starting (and setting up) a worker first when none runs. A crash or a
    // deadline kills the worker and is reported in the reply; the next request starts a new one.
    WorkerReply request(const Json& message, std::chrono::milliseconds deadline);

    // The request that prepares a fresh worker: sent now (starting a worker when none runs) and
    // replayed after every restart. Returns "" or why the setup failed.
    std::string set_setup(Json setup, std::chrono::milliseconds deadline);
    int restarts() const { return m_restarts; }
    // The worker's reply to the latest successful setup (peaks, setup times).
    const Json& setup_reply() const { return m_setup_reply; }
    // Ends the worker (closes its pipe, waits briefly, then kills).
    void stop();

private:
    bool ensure_started(std::string& problem);
    bool run_setup(std::string& problem);

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
