// A request/reply line to one GPU worker, wherever the worker runs.
//
// The evaluator drives every GPU the same way: send a worker request (worker_protocol.hpp), wait
// for the reply up to a deadline, and learn how the worker failed when it did. Two lines exist: a
// GPU worker process of this host spoken to over pipes (GpuWorkerClient, gpu/client.hpp), and one
// on another MPI rank, whose evaluation service relays the same frames to its own worker process
// (RemoteGpuLink, gpu/remote.hpp). Either one replaces its worker after a fault, a hang or a crash
// and replays the setup to the new one, so a request after a failure finds a fresh worker.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "util/json_reader.hpp"

namespace kforge {

enum class WorkerFailure {
    none,
    crashed,     // the worker died while serving the request (or had died before it)
    timed_out,   // it did not answer in time and was killed
    not_started, // no worker could be started or set up; the request was never sent
    lost,        // the line itself is gone for good (its MPI rank died): nothing more will be served
};

// "none", "crashed", ... as the MPI service reports them; unknown names read as crashed.
std::string_view worker_failure_name(WorkerFailure failure);
WorkerFailure parse_worker_failure(std::string_view name);

struct WorkerReply {
    WorkerFailure failure = WorkerFailure::none;
    std::string failure_message;   // how the worker died, hung or could not start
    Json body = Json::object();    // the reply when failure == none
};

class GpuLink
{
public:
    virtual ~GpuLink() = default;
    // Sends one request, starting (and setting up) a worker first when none runs, and waits up to
    // `deadline` for its reply. A crash or a missed deadline kills the worker and is reported in
    // the reply; the next request starts a new one.
    virtual WorkerReply request(const Json& message, std::chrono::milliseconds deadline) = 0;
    // The request that prepares a fresh worker: sent now (starting a worker when none runs) and
    // replayed after every restart. Returns "" or why the setup failed.
    virtual std::string set_setup(Json setup, std::chrono::milliseconds deadline) = 0;
    // The worker's reply to the latest successful setup (peaks, setup times).
    virtual const Json& setup_reply() const = 0;
    // Worker processes replaced so far.
    virtual int restarts() const = 0;
    // Ends the worker (closes its pipe, waits briefly, then kills).
    virtual void stop() = 0;
};

} // namespace kforge
