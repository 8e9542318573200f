// Listing the host's GPUs through a worker, and choosing among them; see devices.hpp.
#include "evaluator/gpu/devices.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "evaluator/gpu/client.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {

std::vector<VisibleGpu> list_visible_gpus(const std::string& worker_executable)
{
    GpuWorkerClient worker(worker_executable, "");
    WorkerReply reply = worker.request(Json{{"op", "devices"}}, std::chrono::seconds(60));
    worker.stop();
    if (reply.failure != WorkerFailure::none)
        fail_runtime("the GPU worker could not start: {}", reply.failure_message);
    if (!reply.body.value("ok", false))
        fail_runtime("{}", reply.body.value("error", "no NVIDIA driver/GPU found"));
    std::vector<VisibleGpu> gpus;
    for (const auto& device : reply.body.at("devices"))
        gpus.push_back(VisibleGpu{static_cast<int>(gpus.size()), DeviceFacts::from_json(device)});
    if (gpus.empty())
        fail_runtime("no NVIDIA driver/GPU found: the driver lists no device (CUDA_VISIBLE_DEVICES may hide them all)");
    return gpus;
}

std::vector<VisibleGpu> select_gpus(const std::vector<VisibleGpu>& visible, const GpuSelection& selection,
                                    const std::string& host)
{
    std::vector<VisibleGpu> chosen;
    switch (selection.kind) {
    case GpuSelection::Kind::all: chosen = visible; break;
    case GpuSelection::Kind::first:
        if (selection.first > visible.size())
            fail(ErrorKind::usage, "--gpus {}: {} has {} GPU{}", selection.text, host, visible.size(),
                 visible.size() == 1 ? "" : "s");
        chosen.assign(visible.begin(), visible.begin() + static_cast<std::ptrdiff_t>(selection.first));
        break;
    case GpuSelection::Kind::indices:
        for (int index : selection.indices) {
            if (index < 0 || static_cast<size_t>(index) >= visible.size())
                fail(ErrorKind::usage, "--gpus {}: {} has no GPU {} (its GPUs are 0 to {})", selection.text, host, index,
                     visible.size() - 1);
            chosen.push_back(visible[static_cast<size_t>(index)]);
        }
        break;
    }
    std::map<std::string, std::vector<std::string>> by_model;
    for (const auto& gpu : chosen)
        by_model[gpu.facts.name].push_back(std::to_string(gpu.index));
    if (by_model.size() > 1) {
        std::vector<std::string> models;
        for (const auto& [name, indices] : by_model)
            models.push_back(fmt::format("{} ({})", name, join(indices, ",")));
        fail(ErrorKind::usage,
             "{} has GPUs of different models: {}. Times measured on different models are not comparable, so a run "
             "uses one model per host: choose one with --gpus, e.g. --gpus {}",
             host, join(models, "; "), join(by_model.begin()->second, ","));
    }
    return chosen;
}

std::vector<VisibleGpu> share_for_local_rank(const std::vector<VisibleGpu>& selected, int local_rank, int local_size)
{
    if (selected.empty() || local_size <= 1)
        return selected;
    auto count = static_cast<int>(selected.size());
    if (count < local_size)
        return {selected[static_cast<size_t>(local_rank % count)]};
    std::vector<VisibleGpu> share;
    for (int i = local_rank; i < count; i += local_size)
        share.push_back(selected[static_cast<size_t>(i)]);
    return share;
}

GpuIdentity identify_gpu(const VisibleGpu& gpu, const std::string& host, int rank)
{
    GpuIdentity identity;
    identity.host = host;
    identity.rank = rank;
    identity.device_index = gpu.index;
    identity.uuid = gpu.facts.uuid;
    identity.name = gpu.facts.name;
    return identity;
}

} // namespace kforge
