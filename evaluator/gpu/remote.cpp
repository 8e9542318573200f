// The controller's side of GPUs on other MPI ranks: RemoteGpuLink, gathering the services' hellos
// and ending them; see gpu/remote.hpp. The service's side is gpu/service.cpp.
#include "evaluator/gpu/remote.hpp"

#include <array>

#include <fmt/format.h>

#include "evaluator/worker/worker_protocol.hpp"
#include "util/log.hpp"
#include "util/mpi_world.hpp"

namespace kforge {
namespace {

constexpr std::array<std::string_view, 5> k_failure_names{"none", "crashed", "timed_out", "not_started", "lost"};

// How long past a request's own deadline the controller waits for the service: the service
// enforces the deadline itself, but a worker it had to restart first replays the setup, which may
// take minutes on a real GPU. A dead rank is noticed sooner, by its silence.
constexpr auto k_reply_margin = std::chrono::minutes(11);

} // namespace

std::string_view worker_failure_name(WorkerFailure failure)
{
    return k_failure_names[static_cast<size_t>(failure)];
}

WorkerFailure parse_worker_failure(std::string_view name)
{
    for (size_t i = 0; i < k_failure_names.size(); ++i)
        if (k_failure_names[i] == name)
            return static_cast<WorkerFailure>(i);
    return WorkerFailure::crashed;
}

RemoteGpuLink::RemoteGpuLink(MpiWorld& world, int rank, int tag, const std::string& uuid, Json task)
    : m_world(world), m_rank(rank), m_tag(tag), m_task(std::move(task))
{
    m_world.send(m_rank, k_service_control_tag, encode_message(Json{{"op", "open"}, {"tag", m_tag}, {"uuid", uuid}}));
}

std::optional<Json> RemoteGpuLink::exchange(Json message, std::chrono::milliseconds wait, WorkerReply& failure)
{
    uint64_t seq = ++m_seq;
    message["seq"] = seq;
    if (!m_world.send(m_rank, m_tag, encode_message(message))) {
        failure.failure = WorkerFailure::lost;
        failure.failure_message = fmt::format("MPI rank {} is gone", m_rank);
        return std::nullopt;
    }
    auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
        std::string bytes;
        MpiReceive status = m_world.receive(m_rank, m_tag, bytes, std::chrono::milliseconds(500));
        if (status == MpiReceive::lost) {
            failure.failure = WorkerFailure::lost;
            failure.failure_message = fmt::format("MPI rank {} is gone", m_rank);
            return std::nullopt;
        }
        if (status == MpiReceive::ok) {
            Json reply = decode_message(bytes);
            if (reply.value("seq", uint64_t{0}) == seq) {
                m_restarts = reply.value("restarts", m_restarts);
                return reply;
            }
            continue; // the late reply to a request given up on
        }
        if (std::chrono::steady_clock::now() >= until) {
            failure.failure = WorkerFailure::timed_out;
            failure.failure_message = fmt::format("MPI rank {} did not answer within {:.0f} s", m_rank,
                                                  std::chrono::duration<double>(wait).count());
            return std::nullopt;
        }
    }
}

WorkerReply RemoteGpuLink::request(const Json& message, std::chrono::milliseconds deadline)
{
    WorkerReply reply;
    auto answer = exchange(Json{{"op", "request"}, {"message", message}, {"deadline_ms", deadline.count()}},
                           deadline + k_reply_margin, reply);
    if (!answer)
        return reply;
    reply.failure = parse_worker_failure(answer->value("failure", "crashed"));
    reply.failure_message = answer->value("failure_message", "");
    reply.body = answer->value("body", Json::object());
    return reply;
}

std::string RemoteGpuLink::set_setup(Json setup, std::chrono::milliseconds deadline)
{
    WorkerReply failure;
    auto answer = exchange(Json{{"op", "setup"}, {"setup", setup}, {"task", m_task}, {"deadline_ms", deadline.count()}},
                           deadline + k_reply_margin, failure);
    if (!answer)
        return failure.failure_message;
    std::string problem = answer->value("problem", "");
    if (problem.empty())
        m_setup_reply = answer->value("setup_reply", Json::object());
    return problem;
}

void RemoteGpuLink::stop()
{
    m_world.send(m_rank, m_tag, encode_message(Json{{"op", "stop"}}));
}

std::vector<RemoteHost> gather_remote_hosts(MpiWorld& world, std::chrono::milliseconds deadline)
{
    std::vector<RemoteHost> hosts;
    auto until = std::chrono::steady_clock::now() + deadline;
    for (int rank = 1; rank < world.size(); ++rank) {
        std::string bytes;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        MpiReceive status = world.receive(rank, k_service_control_tag, bytes, std::max(left, std::chrono::milliseconds(1)));
        if (status != MpiReceive::ok) {
            log_warn("MPI rank {} {}; the run goes on without it", rank,
                     status == MpiReceive::lost ? "is lost" : "did not report its GPUs in time");
            continue;
        }
        Json hello = decode_message(bytes);
        RemoteHost host;
        host.rank = rank;
        host.host = hello.value("host", "");
        host.local_rank = hello.value("local_rank", 0);
        host.local_size = hello.value("local_size", 1);
        host.problem = hello.value("problem", "");
        for (const auto& device : hello.value("devices", Json::array()))
            host.devices.push_back(VisibleGpu{static_cast<int>(host.devices.size()), DeviceFacts::from_json(device)});
        hosts.push_back(std::move(host));
    }
    return hosts;
}

void stop_gpu_services(MpiWorld& world)
{
    for (int rank = 1; rank < world.size(); ++rank)
        if (world.alive(rank))
            world.send(rank, k_service_control_tag, encode_message(Json{{"op", "shutdown"}}));
}

} // namespace kforge
