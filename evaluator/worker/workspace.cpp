// Guarded buffers, seeded input generation, and the cached reference outputs.
#include "evaluator/worker/workspace.hpp"

#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "evaluator/worker/csr_generate.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/log.hpp"
#include "util/rng.hpp"

namespace kforge {
namespace {

// Poison patterns: NaN for every float width, so an unwritten element never compares equal.
constexpr uint32_t k_poison_f32 = 0x7fbadbadu;    // a NaN
constexpr uint32_t k_poison_f64_word = 0x7ff4dead; // 0x7ff4dead7ff4dead is a NaN
constexpr uint16_t k_poison_16 = 0x7fbd;           // a NaN in both bf16 and f16

KfGenParams generator_params(const Generator& gen, DType dtype, uint64_t seed, uint64_t stream, const ExprScope& scope)
{
    KfGenParams p{};
    p.seed = seed;
    p.stream = stream;
    p.dtype = static_cast<int>(dtype);
    switch (gen.dist) {
    case Generator::Dist::uniform:
        p.dist = KF_UNIFORM, p.a = gen.low, p.b = gen.high;
        break;
    case Generator::Dist::normal:
        p.dist = KF_NORMAL, p.a = gen.mean, p.b = gen.std;
        break;
    case Generator::Dist::randint:
        p.dist = KF_RANDINT, p.a = gen.low, p.b = gen.high;
        break;
    case Generator::Dist::bytes:
        p.dist = KF_BYTES;
        p.hot_fraction = gen.hot_fraction ? gen.hot_fraction->eval_real(scope) : 0;
        break;
    case Generator::Dist::constant:
        p.dist = KF_CONST, p.a = gen.value;
        break;
    case Generator::Dist::arange:
        p.dist = KF_ARANGE;
        break;
    case Generator::Dist::csr:
    case Generator::Dist::csr_cols:
        break; // structured: generated on the host (csr_generate.hpp)
    }
    return p;
}

std::string reference_key(const Shape& shape, int trial) { return fmt::format("{}#{}", shape.label, trial); }

} // namespace

uint64_t element_bits(double value, DType type) { return kf_value_to_bits(value, static_cast<int>(type)); }

std::string format_index(uint64_t flat, const std::vector<int64_t>& dims)
{
    std::vector<uint64_t> index(dims.size());
    for (size_t d = dims.size(); d-- > 0;) {
        index[d] = flat % static_cast<uint64_t>(dims[d]);
        flat /= static_cast<uint64_t>(dims[d]);
    }
    std::string out = "[";
    for (size_t d = 0; d < index.size(); ++d)
        out += fmt::format("{}{}", d ? ", " : "", index[d]);
    return out + "]";
}

GuardedBuffer::GuardedBuffer(size_t bytes, uint64_t pattern_seed, const InternalKernels& kernels)
    : m_memory(bytes + 2 * k_guard_bytes), m_bytes(bytes), m_seed(pattern_seed)
{
    arm(kernels);
}

void GuardedBuffer::arm(const InternalKernels& kernels) const
{
    kernels.fill_pattern(m_memory.get(), k_guard_bytes, m_seed);
    kernels.fill_pattern(m_memory.get() + k_guard_bytes + m_bytes, k_guard_bytes, m_seed ^ 0xa5a5a5a5ULL);
}

std::string GuardedBuffer::check_guards(const std::string& label) const
{
    const auto& cu = driver();
    std::vector<unsigned char> host(k_guard_bytes);
    auto check = [&](CUdeviceptr at, uint64_t seed, bool before) -> std::string {
        KF_CU_CHECK(cu.cuMemcpyDtoH(host.data(), at, k_guard_bytes));
        size_t first = SIZE_MAX, last = 0, count = 0;
        for (size_t i = 0; i < k_guard_bytes; ++i) {
            auto expected = static_cast<unsigned char>(kf_random_bits(seed, 0x6361, i / 8) >> (8 * (i % 8)));
            if (host[i] != expected) {
                first = std::min(first, i);
                last = i;
                ++count;
            }
        }
        if (count == 0)
            return "";
        if (before)
            return fmt::format("wrote before the start of '{}' ({} bytes changed, as far as {} bytes before it)", label,
                               count, k_guard_bytes - first);
        return fmt::format("wrote past the end of '{}' ({} bytes changed, the first {} bytes after its last "
                           "byte; its size is {} bytes)",
                           label, count, first, m_bytes);
        (void)last;
    };
    std::string problem = check(m_memory.get(), m_seed, true);
    if (problem.empty())
        problem = check(m_memory.get() + k_guard_bytes + m_bytes, m_seed ^ 0xa5a5a5a5ULL, false);
    return problem;
}

Workspace::Workspace(const Task& task, const GpuContext& context, const InternalKernels& kernels, uint64_t run_secret,
                     const LoadedKernels* reference, const Plan& reference_plan, ParamPoint reference_params,
                     TorchReference* program)
    : m_task(task), m_context(context), m_kernels(kernels), m_secret(run_secret), m_reference(reference),
      m_reference_plan(reference_plan), m_reference_params(std::move(reference_params)), m_program(program)
{
    if (!m_reference && !m_program)
        fail_runtime("internal: a workspace needs a reference kernel or a PyTorch program");
}

TensorLocation device_location(const DeviceMemory& allocation, uint64_t offset, uint64_t bytes)
{
    CUipcMemHandle handle;
    KF_CU_CHECK(driver().cuIpcGetMemHandle(&handle, allocation.get()));
    static constexpr char k_hex[] = "0123456789abcdef";
    TensorLocation location;
    for (size_t i = 0; i < sizeof handle.reserved; ++i) {
        auto byte = static_cast<unsigned char>(handle.reserved[i]);
        location.ipc_handle += k_hex[byte >> 4];
        location.ipc_handle += k_hex[byte & 15];
    }
    location.offset = offset;
    location.bytes = bytes;
    return location;
}

uint64_t Workspace::input_seed(const Shape& shape, int trial) const
{
    return splitmix64(splitmix64(shape.seed) ^ splitmix64(m_secret + 0x9e37 * static_cast<uint64_t>(trial + 1)));
}

void Workspace::clear()
{
    m_tensors.clear();
    m_references.clear();
    m_reference_last_use.clear();
    m_reference_bytes = 0;
    m_csr_cache.clear();
    m_program_inputs.clear();
    m_shape = nullptr;
    m_trial = -1;
}

void Workspace::allocate(const Shape& shape)
{
    m_tensors.clear();
    ExprScope scope = m_task.scope_for(shape);
    for (const auto& arg : m_task.args) {
        if (!arg.is_tensor)
            continue;
        TensorData data;
        data.spec = &arg;
        data.count = static_cast<uint64_t>(m_task.element_count(arg, shape));
        data.bytes = data.count * dtype_size(arg.dtype);
        for (const auto& dim : arg.shape)
            data.dims.push_back(dim.eval_int(scope));
        data.buffer = GuardedBuffer(data.bytes, hash64(arg.name, m_secret), m_kernels);
        if (arg.intent == Intent::inout)
            data.pristine = DeviceMemory(data.bytes);
        m_tensors.emplace(arg.name, std::move(data));
    }
}

void Workspace::generate_inputs(const Shape& shape, int trial)
{
    const auto& cu = driver();
    ExprScope scope = m_task.scope_for(shape);
    uint64_t seed = input_seed(shape, trial);
    for (auto& [name, data] : m_tensors) {
        const ArgSpec& arg = *data.spec;
        if (arg.intent == Intent::out)
            continue;
        CUdeviceptr target = arg.intent == Intent::inout ? data.pristine.get() : data.buffer.ptr();
        if (arg.gen.dist == Generator::Dist::csr || arg.gen.dist == Generator::Dist::csr_cols) {
            const DeviceMemory& cached = csr_tensor(shape, trial, arg);
            KF_CU_CHECK(cu.cuMemcpyDtoDAsync(target, cached.get(), data.bytes, m_context.stream()));
            KF_CU_CHECK(cu.cuStreamSynchronize(m_context.stream()));
            data.input_checksum = m_kernels.checksum(target, data.bytes);
            continue;
        }
        m_kernels.generate(target, data.count, generator_params(arg.gen, arg.dtype, seed, hash64(name), scope));
        // Planted values sit at fixed indices so dropped tails and skipped maxima show.
        for (const auto& plant : arg.gen.plants) {
            int64_t index = plant.at.eval_int(scope);
            if (index < 0 || static_cast<uint64_t>(index) >= data.count)
                continue;
            uint64_t bits = element_bits(plant.value, arg.dtype);
            size_t width = dtype_size(arg.dtype);
            // Ordered after the generator on the same stream; `bits` lives until the sync below.
            KF_CU_CHECK(cu.cuMemcpyHtoDAsync(target + static_cast<uint64_t>(index) * width, &bits, width,
                                             m_context.stream()));
            KF_CU_CHECK(cu.cuStreamSynchronize(m_context.stream()));
        }
        KF_CU_CHECK(cu.cuStreamSynchronize(m_context.stream()));
        data.input_checksum = m_kernels.checksum(target, data.bytes);
    }
    m_shape = &shape;
    m_trial = trial;
}

const DeviceMemory& Workspace::csr_tensor(const Shape& shape, int trial, const ArgSpec& arg)
{
    std::string key = fmt::format("{}#{}#{}", shape.label, trial, arg.name);
    if (auto it = m_csr_cache.find(key); it != m_csr_cache.end())
        return it->second;
    // Both tensors of the matrix are built together, from the row-pointer argument's spec.
    const ArgSpec* rows = arg.gen.dist == Generator::Dist::csr ? &arg : m_task.find_arg(arg.gen.of);
    const ArgSpec* cols = nullptr;
    for (const auto& other : m_task.args)
        if (other.gen.dist == Generator::Dist::csr_cols && other.gen.of == rows->name)
            cols = &other;
    if (!rows || !cols)
        fail_runtime("internal: CSR arguments of task '{}' are not linked", m_task.name);
    uint64_t seed = input_seed(shape, trial);
    CsrMatrix matrix = generate_csr(csr_sizes(m_task, *rows, shape), seed, hash64(rows->name), hash64(cols->name));
    auto upload = [&](const ArgSpec& target, const std::vector<int64_t>& values) {
        size_t width = dtype_size(target.dtype);
        std::vector<unsigned char> bytes(values.size() * width);
        for (size_t i = 0; i < values.size(); ++i) {
            if (width == 4) {
                auto v = static_cast<int32_t>(values[i]);
                std::memcpy(&bytes[i * 4], &v, 4);
            } else {
                std::memcpy(&bytes[i * 8], &values[i], 8);
            }
        }
        DeviceMemory memory(bytes.size());
        KF_CU_CHECK(driver().cuMemcpyHtoD(memory.get(), bytes.data(), bytes.size()));
        m_csr_cache[fmt::format("{}#{}#{}", shape.label, trial, target.name)] = std::move(memory);
    };
    upload(*rows, matrix.row_ptr);
    upload(*cols, matrix.cols);
    return m_csr_cache.at(key);
}

void Workspace::run_reference(const Shape& shape, int trial)
{
    const auto& cu = driver();
    ReferenceOutputs ref;
    BufferBindings bindings;
    for (auto& [name, data] : m_tensors) {
        if (data.spec->intent == Intent::in) {
            bindings[name] = data.buffer.ptr();
            continue;
        }
        DeviceMemory out(data.bytes);
        if (data.spec->intent == Intent::inout)
            KF_CU_CHECK(cu.cuMemcpyDtoDAsync(out.get(), data.pristine.get(), data.bytes, m_context.stream()));
        bindings[name] = out.get();
        ref.outputs.emplace(name, std::move(out));
    }
    ResolvedPlan plan = resolve_plan(m_task, m_reference_plan, shape, m_reference_params);
    std::vector<DeviceMemory> scratch;
    for (const auto& s : plan.scratch) {
        scratch.emplace_back(static_cast<size_t>(s.bytes));
        KF_CU_CHECK(cu.cuMemsetD8Async(scratch.back().get(), 0, static_cast<size_t>(s.bytes), m_context.stream()));
        bindings[s.name] = scratch.back().get();
    }
    launch_plan(*m_reference, plan, bindings, m_context.stream());
    // The reference is trusted but can still be slow on huge shapes; allow it minutes, not forever.
    if (wait_for_stream(m_context.stream(), std::chrono::steady_clock::now() + std::chrono::minutes(5)) !=
        WaitStatus::done)
        fail_runtime("the task's reference kernel did not finish within 5 minutes on {}", shape.label);
    keep_reference(shape, trial, std::move(ref));
}

void Workspace::keep_reference(const Shape& shape, int trial, ReferenceOutputs ref)
{
    for (const auto& [name, data] : m_tensors)
        if (data.spec->intent == Intent::in)
            ref.input_checksums[name] = data.input_checksum;
    // Tolerances may scale with the reference's magnitude or an input's sum of |x|.
    ExprScope scope = m_task.scope_for(shape);
    for (auto& [name, data] : m_tensors) {
        if (data.spec->intent != Intent::in)
            continue;
        std::string key = "sum_abs_" + name;
        bool used = false;
        for (const auto& arg : m_task.args)
            if (arg.check && (arg.check->atol.names().count(key) || arg.check->rtol.names().count(key)))
                used = true;
        if (used)
            scope.reals[key] = m_kernels.abs_stats(data.buffer.ptr(), data.count, static_cast<int>(data.spec->dtype)).first;
    }
    for (auto& [name, out] : ref.outputs) {
        const TensorData& data = m_tensors.at(name);
        ref.checksums[name] = m_kernels.checksum(out.get(), data.bytes);
        const CheckSpec& check = *data.spec->check;
        ExprScope out_scope = scope;
        out_scope.reals["max_abs_ref"] =
            m_kernels.abs_stats(out.get(), data.count, static_cast<int>(data.spec->dtype)).second;
        double atol = 0, rtol = 0;
        if (check.metric == CheckSpec::Metric::allclose) {
            atol = check.atol.eval_real(out_scope);
            rtol = check.rtol.eval_real(out_scope);
        }
        ref.tolerance[name] = {atol, rtol};
    }
    std::string key = reference_key(shape, trial);
    for (const auto& [name, out] : ref.outputs)
        m_reference_bytes += out.bytes();
    m_references[key] = std::move(ref);
    touch_reference(key);
    evict_references(key);
}

void Workspace::touch_reference(const std::string& key) { m_reference_last_use[key] = ++m_use_clock; }

void Workspace::evict_references(const std::string& keep)
{
    if (m_reference_budget == 0) {
        size_t free_bytes = 0, total = 0;
        KF_CU_CHECK(driver().cuMemGetInfo(&free_bytes, &total));
        m_reference_budget = total / 4;
    }
    while (m_reference_bytes > m_reference_budget && m_references.size() > 1) {
        auto oldest = m_reference_last_use.end();
        for (auto it = m_reference_last_use.begin(); it != m_reference_last_use.end(); ++it)
            if (it->first != keep && (oldest == m_reference_last_use.end() || it->second < oldest->second))
                oldest = it;
        if (oldest == m_reference_last_use.end())
            return;
        auto entry = m_references.find(oldest->first);
        for (const auto& [name, out] : entry->second.outputs)
            m_reference_bytes -= out.bytes();
        m_references.erase(entry);
        m_reference_last_use.erase(oldest);
    }
}

std::map<std::string, TensorData, std::less<>>& Workspace::prepare(const Shape& shape, int trial)
{
    if (m_shape != &shape)
        allocate(shape);
    if (m_program) {
        prepare_from_program(shape, trial);
        return m_tensors;
    }
    generate_inputs(shape, trial);
    if (!m_references.count(reference_key(shape, trial)))
        run_reference(shape, trial);
    return m_tensors;
}

void Workspace::checksum_inputs()
{
    for (auto& [name, data] : m_tensors)
        if (data.spec->intent == Intent::in)
            data.input_checksum = m_kernels.checksum(data.buffer.ptr(), data.bytes);
}

void Workspace::prepare_from_program(const Shape& shape, int trial)
{
    const auto& cu = driver();
    std::string key = reference_key(shape, trial);
    auto cached = [&](const std::string& name) { return m_program_inputs.find(key + "#" + name); };
    bool need_reference = !m_references.count(key);
    bool all_cached = !need_reference;
    for (auto& [name, data] : m_tensors)
        if (data.spec->intent == Intent::in && cached(name) == m_program_inputs.end())
            all_cached = false;
    if (all_cached) {
        for (auto& [name, data] : m_tensors)
            if (data.spec->intent == Intent::in)
                KF_CU_CHECK(cu.cuMemcpyDtoDAsync(data.buffer.ptr(), cached(name)->second.get(), data.bytes,
                                                 m_context.stream()));
        KF_CU_CHECK(cu.cuStreamSynchronize(m_context.stream()));
    } else {
        // The program writes straight into this worker's buffers; nothing of ours may still be
        // writing them.
        KF_CU_CHECK(cu.cuStreamSynchronize(m_context.stream()));
        TensorLocations locations;
        uint64_t input_bytes = 0;
        for (auto& [name, data] : m_tensors)
            if (data.spec->intent == Intent::in) {
                locations[name] = device_location(data.buffer.allocation(), k_guard_bytes, data.bytes);
                input_bytes += data.bytes;
            }
        ReferenceOutputs ref;
        if (need_reference)
            for (auto& [name, data] : m_tensors)
                if (data.spec->intent == Intent::out) {
                    DeviceMemory out(data.bytes);
                    locations[name] = device_location(out, 0, data.bytes);
                    ref.outputs.emplace(name, std::move(out));
                }
        Json reply = m_program->prepare(shape, input_seed(shape, trial),
                                        need_reference ? ProgramOutputs::expected : ProgramOutputs::none, locations);
        if (need_reference && reply.value("precision", "") != "fp64" && !reply.value("note", "").empty())
            log_debug("reference outputs on {} in the program's own dtypes: {}", shape.label, reply.value("note", ""));
        // Small inputs are kept: test shapes run many times per candidate.
        constexpr uint64_t k_keep_inputs_bytes = uint64_t{64} << 20;
        if (input_bytes <= k_keep_inputs_bytes)
            for (auto& [name, data] : m_tensors)
                if (data.spec->intent == Intent::in) {
                    DeviceMemory copy(data.bytes);
                    KF_CU_CHECK(cu.cuMemcpyDtoDAsync(copy.get(), data.buffer.ptr(), data.bytes, m_context.stream()));
                    m_program_inputs[key + "#" + name] = std::move(copy);
                }
        KF_CU_CHECK(cu.cuStreamSynchronize(m_context.stream()));
        checksum_inputs();
        if (need_reference) {
            keep_reference(shape, trial, std::move(ref));
        } else {
            // Inputs made again must be the ones the expected outputs were computed from.
            for (const auto& [name, sum] : m_references.at(key).input_checksums)
                if (m_tensors.at(name).input_checksum != sum)
                    fail_runtime("the PyTorch program made different values for '{}' on {} from the same seed: "
                                 "its get_inputs() or get_init_inputs() is not deterministic",
                                 name, shape.label);
        }
    }
    if (all_cached)
        checksum_inputs();
    m_shape = &shape;
    m_trial = trial;
}

void Workspace::write_program_outputs()
{
    if (!m_program || !m_shape)
        fail_runtime("internal: write_program_outputs needs a PyTorch-program task with a loaded shape");
    KF_CU_CHECK(driver().cuStreamSynchronize(m_context.stream()));
    TensorLocations locations;
    for (auto& [name, data] : m_tensors)
        if (data.spec->intent == Intent::out)
            locations[name] = device_location(data.buffer.allocation(), k_guard_bytes, data.bytes);
    m_program->prepare(*m_shape, input_seed(*m_shape, m_trial), ProgramOutputs::program, locations);
}

const ReferenceOutputs& Workspace::reference(const Shape& shape, int trial)
{
    std::string key = reference_key(shape, trial);
    touch_reference(key);
    return m_references.at(key);
}

void Workspace::reset_outputs(uint64_t poison_seed)
{
    const auto& cu = driver();
    CUstream stream = m_context.stream();
    for (auto& [name, data] : m_tensors) {
        const ArgSpec& arg = *data.spec;
        if (arg.intent == Intent::in)
            continue;
        CUdeviceptr ptr = data.buffer.ptr();
        if (arg.intent == Intent::inout) {
            KF_CU_CHECK(cu.cuMemcpyDtoDAsync(ptr, data.pristine.get(), data.bytes, stream));
            continue;
        }
        if (arg.dtype == DType::f32 && data.bytes % 4 == 0)
            KF_CU_CHECK(cu.cuMemsetD32Async(ptr, k_poison_f32, data.bytes / 4, stream));
        else if (arg.dtype == DType::f64)
            KF_CU_CHECK(cu.cuMemsetD32Async(ptr, k_poison_f64_word, data.bytes / 4, stream));
        else if ((arg.dtype == DType::bf16 || arg.dtype == DType::f16) && data.bytes % 4 == 0)
            KF_CU_CHECK(cu.cuMemsetD32Async(ptr, (uint32_t{k_poison_16} << 16) | k_poison_16, data.bytes / 4, stream));
        else
            m_kernels.fill_pattern(ptr, data.bytes, poison_seed ^ hash64(name));
    }
}

std::string Workspace::check_integrity()
{
    // prepare() regenerates the inputs for every run, so damage found here never leaks into the
    // next candidate; guards are re-armed at once.
    for (auto& [name, data] : m_tensors) {
        if (std::string problem = data.buffer.check_guards(name); !problem.empty()) {
            data.buffer.arm(m_kernels);
            return problem;
        }
        if (data.spec->intent == Intent::in && m_kernels.checksum(data.buffer.ptr(), data.bytes) != data.input_checksum)
            return fmt::format("modified the input '{}' (inputs are read-only; kforge checks them after every run)",
                               name);
    }
    return "";
}

std::string Workspace::check_reference_integrity(const Shape& shape, int trial)
{
    auto it = m_references.find(reference_key(shape, trial));
    if (it == m_references.end())
        return "";
    for (const auto& [name, out] : it->second.outputs) {
        if (m_kernels.checksum(out.get(), m_tensors.at(name).bytes) != it->second.checksums.at(name)) {
            for (const auto& [each, memory] : it->second.outputs)
                m_reference_bytes -= memory.bytes();
            m_reference_last_use.erase(it->first);
            m_references.erase(it);
            return fmt::format("changed memory outside its own buffers (kforge's reference copy of '{}')", name);
        }
    }
    return "";
}

} // namespace kforge
