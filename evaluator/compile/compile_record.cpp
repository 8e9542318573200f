// JSON forms of compile requests and results (see compile_record.hpp). Reading is strict: a
// missing or mistyped field throws, and callers treat that as a corrupt cache entry or a broken
// worker, never as a result.
#include "evaluator/compile/compile_record.hpp"

#include <algorithm>
#include <stdexcept>

namespace kforge {

namespace {

Json resources_to_json(const std::vector<KernelResources>& resources)
{
    Json out = Json::array();
    for (const auto& r : resources)
        out.push_back({{"kernel", r.kernel},
                       {"registers", r.registers},
                       {"spill_store_bytes", r.spill_store_bytes},
                       {"spill_load_bytes", r.spill_load_bytes},
                       {"stack_frame_bytes", r.stack_frame_bytes},
                       {"static_smem_bytes", r.static_smem_bytes},
                       {"const_bytes", r.const_bytes},
                       {"barriers", r.barriers},
                       {"from_cubin", r.from_cubin}});
    return out;
}

std::vector<KernelResources> resources_from_json(const Json& json)
{
    std::vector<KernelResources> out;
    for (const auto& r : json) {
        KernelResources k;
        k.kernel = r.at("kernel").get<std::string>();
        k.registers = r.at("registers").get<int>();
        k.spill_store_bytes = r.at("spill_store_bytes").get<int>();
        k.spill_load_bytes = r.at("spill_load_bytes").get<int>();
        k.stack_frame_bytes = r.at("stack_frame_bytes").get<int>();
        k.static_smem_bytes = r.at("static_smem_bytes").get<int>();
        k.const_bytes = r.at("const_bytes").get<int>();
        k.barriers = r.at("barriers").get<int>();
        k.from_cubin = r.value("from_cubin", false); // absent in entries cached before it existed
        out.push_back(std::move(k));
    }
    return out;
}

} // namespace

Json compile_request_to_json(const CompileRequest& request)
{
    return {{"source", request.source},
            {"arch", request.arch},
            {"params", request.params},
            {"kernels", request.kernels},
            {"extra_options", request.extra_options}};
}

CompileRequest compile_request_from_json(const Json& json)
{
    CompileRequest request;
    request.source = json.at("source").get<std::string>();
    request.arch = json.at("arch").get<std::string>();
    request.params = json.at("params").get<ParamPoint>();
    request.kernels = json.at("kernels").get<std::vector<std::string>>();
    request.extra_options = json.at("extra_options").get<std::vector<std::string>>();
    return request;
}

Json compile_result_to_json(const CompileResult& result, CubinEncoding cubin)
{
    Json out = {{"ok", result.ok},
                {"failure", std::string(verdict_name(result.failure))},
                {"message", result.message},
                {"log", result.log},
                {"resources", resources_to_json(result.resources)},
                {"lowered_names", result.lowered_names},
                {"seconds", result.seconds}};
    if (cubin == CubinEncoding::binary)
        out["cubin"] = Json::binary(std::vector<std::uint8_t>(result.cubin.begin(), result.cubin.end()));
    return out;
}

CompileResult compile_result_from_json(const Json& json)
{
    CompileResult result;
    result.ok = json.at("ok").get<bool>();
    auto failure = parse_verdict(json.at("failure").get<std::string>());
    if (!failure)
        throw std::out_of_range("unknown verdict in a compile result");
    result.failure = *failure;
    result.message = json.at("message").get<std::string>();
    result.log = json.at("log").get<std::string>();
    result.resources = resources_from_json(json.at("resources"));
    result.lowered_names = json.at("lowered_names").get<std::map<std::string, std::string>>();
    result.seconds = json.at("seconds").get<double>();
    if (auto it = json.find("cubin"); it != json.end()) {
        const auto& bytes = it->get_binary();
        result.cubin.assign(bytes.begin(), bytes.end());
    }
    return result;
}

Json kernel_resources_metrics(const std::vector<KernelResources>& compiled, const Json& worker)
{
    Json out = Json::array();
    for (const auto& k : compiled) {
        Json entry{{"kernel", k.kernel},
                   {"registers", k.registers},
                   {"stack_frame_bytes", k.stack_frame_bytes},
                   {"static_smem_bytes", k.static_smem_bytes}};
        if (k.from_cubin) {
            entry["source"] = "cubin"; // no ptxas report: spill bytes unknown
        } else {
            entry["spill_store_bytes"] = k.spill_store_bytes;
            entry["spill_load_bytes"] = k.spill_load_bytes;
        }
        out.push_back(std::move(entry));
    }
    if (!worker.is_object())
        return out;
    for (const auto& item : worker.items()) {
        // Not a structured binding: clang before 16 cannot capture one in the lambda below.
        const std::string& kernel = item.key();
        const Json& attributes = item.value();
        if (!attributes.is_object() || !attributes.contains("registers"))
            continue;
        if (std::any_of(compiled.begin(), compiled.end(), [&](const KernelResources& k) { return k.kernel == kernel; }))
            continue;
        out.push_back(Json{{"kernel", kernel},
                           {"registers", attributes.value("registers", 0)},
                           {"stack_frame_bytes", attributes.value("local_bytes_per_thread", 0)},
                           {"static_smem_bytes", attributes.value("static_smem_bytes", 0)},
                           {"source", "driver"}});
    }
    return out;
}

} // namespace kforge
