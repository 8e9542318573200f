// Spawning and talking to the GPU worker; see the header.
#include "evaluator/gpu/client.hpp"

#include <fmt/format.h>

#include "evaluator/worker/worker_protocol.hpp"
#include "util/log.hpp"

namespace kforge {
namespace {

// How long a worker may wait for a shared GPU's measuring lock within one request. Every holder's
// own deadlines bound each hold, so this is reached only when something holds the lock and hangs
// unnoticed (a process stopped with SIGSTOP, say).
constexpr auto k_lock_wait_limit = std::chrono::hours(2);

} // namespace

GpuWorkerClient::GpuWorkerClient(std::string worker_executable, std::string visible_devices)
    : m_executable(std::move(worker_executable)), m_visible_devices(std::move(visible_devices))
{
}

std::string GpuWorkerClient::set_setup(Json setup, std::chrono::milliseconds deadline)
{
    m_setup = std::move(setup);
    m_setup_deadline = deadline;
    std::string problem;
    if (m_process.running())
        run_setup(problem);
    else
        ensure_started(problem);
    return problem;
}

ReceiveStatus GpuWorkerClient::receive_reply(Json& reply, std::chrono::milliseconds deadline, bool& waited_too_long)
{
    waited_too_long = false;
    std::chrono::milliseconds limit = deadline;
    while (true) {
        std::string frame;
        ReceiveStatus status = m_process.receive(frame, limit);
        if (status != ReceiveStatus::ok)
            return status;
        reply = decode_message(frame);
        std::string interim = reply.is_object() ? reply.value("interim", "") : "";
        if (interim.empty())
            return ReceiveStatus::ok;
        // "gpu_lock_waiting": another run measures on the GPU; "gpu_lock_holding": the worker's own
        // work goes on, with the whole deadline before it again.
        waited_too_long = interim == "gpu_lock_waiting";
        limit = waited_too_long ? std::chrono::duration_cast<std::chrono::milliseconds>(k_lock_wait_limit) : deadline;
    }
}

bool GpuWorkerClient::run_setup(std::string& problem)
{
    m_process.send(encode_message(*m_setup), m_setup_deadline);
    Json reply;
    bool waited_too_long = false;
    ReceiveStatus status = receive_reply(reply, m_setup_deadline, waited_too_long);
    if (status != ReceiveStatus::ok) {
        m_process.kill();
        problem = fmt::format("the GPU worker did not come up ({})",
                              status != ReceiveStatus::timeout ? m_process.exit_description()
                              : waited_too_long ? "it waited longer than 2 h for the shared GPU's measuring lock"
                                                : "setup timed out");
        return false;
    }
    if (!reply.value("ok", false)) {
        m_process.kill();
        problem = reply.value("error", "the GPU worker's setup failed");
        return false;
    }
    m_setup_reply = reply;
    return true;
}

bool GpuWorkerClient::ensure_started(std::string& problem)
{
    if (m_process.running())
        return true;
    SpawnSpec spec;
    spec.executable = m_executable;
    spec.args = {"__worker", "gpu"};
    // Eager module loading keeps first-launch costs out of timings; the GPU is chosen before CUDA
    // starts in the child.
    spec.env = {{"CUDA_MODULE_LOADING", "EAGER"}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}};
    if (!m_visible_devices.empty())
        spec.env.emplace_back("CUDA_VISIBLE_DEVICES", m_visible_devices);
    m_process = Subprocess::spawn(spec);
    if (m_started_once)
        ++m_restarts;
    m_started_once = true;
    return !m_setup || run_setup(problem);
}

WorkerReply GpuWorkerClient::request(const Json& message, std::chrono::milliseconds deadline)
{
    WorkerReply reply;
    std::string problem;
    if (!ensure_started(problem)) {
        reply.failure = WorkerFailure::not_started;
        reply.failure_message = problem;
        return reply;
    }
    // The deadline covers handing the request over too: a worker that stopped reading (stuck in
    // the driver, say) leaves a frame bigger than the pipe's buffer (a CUBIN) unsent for ever.
    auto sent_by = std::chrono::steady_clock::now() + deadline;
    if (!m_process.send(encode_message(message), deadline)) {
        bool stuck = m_process.running() && std::chrono::steady_clock::now() >= sent_by;
        m_process.kill();
        reply.failure = stuck ? WorkerFailure::timed_out : WorkerFailure::crashed;
        reply.failure_message = stuck ? fmt::format("the GPU worker took no request within {:.0f} s and was killed",
                                                    deadline.count() / 1000.0)
                                      : "the GPU worker had exited: " + m_process.exit_description();
        return reply;
    }
    bool waited_too_long = false;
    ReceiveStatus status = receive_reply(reply.body, deadline, waited_too_long);
    if (status == ReceiveStatus::timeout) {
        m_process.kill();
        reply.body = Json::object();
        reply.failure = WorkerFailure::timed_out;
        reply.failure_message =
            waited_too_long ? "the GPU worker waited longer than 2 h for the shared GPU's measuring lock and was killed"
                            : fmt::format("the GPU worker did not answer within {:.0f} s and was killed",
                                          deadline.count() / 1000.0);
        return reply;
    }
    if (status != ReceiveStatus::ok) {
        m_process.kill();
        reply.body = Json::object();
        reply.failure = WorkerFailure::crashed;
        reply.failure_message = fmt::format("the GPU worker died ({})", m_process.exit_description());
        return reply;
    }
    if (reply.body.value("restart", false)) {
        // The worker exits on its own after such a reply; give it a moment, then make sure.
        m_process.finish(std::chrono::milliseconds(2000));
        log_debug("GPU worker restarting after: {}", reply.body.value("error", reply.body.dump().substr(0, 200)));
    }
    return reply;
}

void GpuWorkerClient::stop() { m_process.finish(std::chrono::milliseconds(3000)); }

} // namespace kforge
