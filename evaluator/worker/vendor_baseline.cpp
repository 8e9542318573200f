// Loading libkforge_vendor.so and driving its C interface; see the header.
//
// The loader resolves every entry point and checks the ABI version before it calls anything, so a
// library from another kforge build is refused by name and version instead of crashing. Strings
// the VendorBindings own are handed to the C interface as pointers into them, valid for the call
// (the library copies what it keeps).
#include "evaluator/worker/vendor_baseline.hpp"

#include <cstdlib>
#include <mutex>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "evaluator/worker/cuda_driver.hpp"
#include "evaluator/worker/vendor_step_api.hpp"
#include "kforge_vendor.h"
#include "util/error.hpp"

#ifndef KFORGE_VENDOR_BUILD_NOTE
#define KFORGE_VENDOR_BUILD_NOTE "kforge was configured without vendor/"
#endif

namespace kforge {

namespace {

constexpr size_t k_message_bytes = 2048;
constexpr const char* k_library_name = "libkforge_vendor.so";

std::string message_text(const char* buffer, int status)
{
    std::string text = buffer;
    return text.empty() ? fmt::format("libkforge_vendor returned status {} without a message", status) : text;
}

// The C view of VendorBindings; points into `bindings`, so it lives no longer than they do.
class CBindings
{
public:
    explicit CBindings(const VendorBindings& bindings)
    {
        for (const auto& t : bindings.tensors)
            m_dtypes.emplace_back(dtype_name(t.dtype));
        for (size_t i = 0; i < bindings.tensors.size(); ++i) {
            const auto& t = bindings.tensors[i];
            m_tensors.push_back(KforgeVendorTensor{t.name.c_str(), t.device_ptr, m_dtypes[i].c_str(), t.count});
        }
        for (const auto& v : bindings.values)
            m_values.push_back(KforgeVendorValue{v.name.c_str(), v.int_value, v.real_value});
        m_bindings = KforgeVendorBindings{m_tensors.data(), m_tensors.size(), m_values.data(), m_values.size()};
    }
    CBindings(const CBindings&) = delete;
    CBindings& operator=(const CBindings&) = delete;
    const KforgeVendorBindings* get() const { return &m_bindings; }

private:
    std::vector<std::string> m_dtypes;
    std::vector<KforgeVendorTensor> m_tensors;
    std::vector<KforgeVendorValue> m_values;
    KforgeVendorBindings m_bindings{};
};

} // namespace

struct VendorLibrary::Functions {
    decltype(&kforge_vendor_abi_version) abi_version = nullptr;
    decltype(&kforge_vendor_routine_names) routine_names = nullptr;
    decltype(&kforge_vendor_routine_status) routine_status = nullptr;
    decltype(&kforge_vendor_versions) versions = nullptr;
    decltype(&kforge_vendor_check) check = nullptr;
    decltype(&kforge_vendor_describe) describe = nullptr;
    decltype(&kforge_vendor_prepare) prepare = nullptr;
    decltype(&kforge_vendor_stage) stage = nullptr;
    decltype(&kforge_vendor_run) run = nullptr;
    decltype(&kforge_vendor_release) release = nullptr;
    decltype(&kforge_vendor_selftest) selftest = nullptr;
};

std::filesystem::path vendor_library_path()
{
    if (const char* path = std::getenv("KFORGE_VENDOR_LIB"); path && *path)
        return path;
    std::error_code ec;
    std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return (ec ? std::filesystem::path(".") : exe.parent_path()) / k_library_name;
}

std::string vendor_library_build_note() { return KFORGE_VENDOR_BUILD_NOTE; }

VendorBindings bind_vendor_operands(const Task& task, const Shape& shape,
                                    const std::map<std::string, uint64_t, std::less<>>& addresses)
{
    VendorBindings bindings;
    ExprScope scope = task.scope_for(shape);
    for (const auto& arg : task.args) {
        if (arg.is_tensor) {
            auto it = addresses.find(arg.name);
            if (it == addresses.end())
                fail_runtime("vendor baseline operands: no device address for tensor '{}' of task {}", arg.name,
                             task.name);
            bindings.tensors.push_back(VendorBindings::Tensor{arg.name, it->second, arg.dtype,
                                                              static_cast<uint64_t>(task.element_count(arg, shape))});
        } else if (dtype_is_float(arg.dtype)) {
            double value = arg.value.eval_real(scope);
            bindings.values.push_back(VendorBindings::Value{arg.name, static_cast<int64_t>(value), value});
        } else {
            int64_t value = arg.value.eval_int(scope);
            bindings.values.push_back(VendorBindings::Value{arg.name, value, static_cast<double>(value)});
        }
    }
    for (const auto& [symbol, value] : shape.sizes) {
        if (task.find_arg(symbol) == nullptr)
            bindings.values.push_back(VendorBindings::Value{symbol, value, static_cast<double>(value)});
    }
    return bindings;
}

VendorBaseline::~VendorBaseline() { release(); }

VendorBaseline::VendorBaseline(VendorBaseline&& other) noexcept
    : m_library(std::exchange(other.m_library, nullptr)), m_state(std::exchange(other.m_state, nullptr)),
      m_routine(std::move(other.m_routine)), m_problem(std::move(other.m_problem))
{
}

VendorBaseline& VendorBaseline::operator=(VendorBaseline&& other) noexcept
{
    if (this != &other) {
        release();
        m_library = std::exchange(other.m_library, nullptr);
        m_state = std::exchange(other.m_state, nullptr);
        m_routine = std::move(other.m_routine);
        m_problem = std::move(other.m_problem);
    }
    return *this;
}

void VendorBaseline::release()
{
    // After a sticky error the release would fail or block behind a spinning kernel; the worker is
    // about to exit, which frees everything.
    if (m_state && m_library && !context_lost())
        m_library->m_fn->release(m_state);
    m_state = nullptr;
}

std::string VendorBaseline::enqueue(EnqueueFn entry, CUstream stream) const
{
    if (!ready())
        return fmt::format("{} is not prepared: {}", m_routine, m_problem);
    char error[k_message_bytes] = {};
    int status = entry(m_state, stream, error, sizeof error);
    return status == KFORGE_VENDOR_OK ? "" : message_text(error, status);
}

std::string VendorBaseline::stage(CUstream stream) const { return enqueue(ready() ? m_library->m_fn->stage : nullptr, stream); }

std::string VendorBaseline::run(CUstream stream) const { return enqueue(ready() ? m_library->m_fn->run : nullptr, stream); }

const VendorLibrary& VendorLibrary::shared()
{
    static std::once_flag once;
    static const VendorLibrary* library = nullptr;
    std::call_once(once, [] { library = new VendorLibrary(vendor_library_path()); });
    return *library;
}

VendorLibrary::VendorLibrary(const std::filesystem::path& path) : VendorLibrary(path, KFORGE_VENDOR_ABI_VERSION) {}

VendorLibrary::VendorLibrary(const std::filesystem::path& path, int required_abi_version)
    : m_path(path), m_fn(std::make_unique<Functions>()), m_steps(std::make_unique<VendorStepApi>())
{
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        std::string note = vendor_library_build_note();
        m_reason = fmt::format("{} not found (vendor baselines need it beside the kforge binary, or "
                               "KFORGE_VENDOR_LIB naming it){}",
                               path.string(), note.empty() ? "" : fmt::format("; this kforge was built without it: {}", note));
        return;
    }
    m_library = std::make_unique<DynamicLibrary>(std::initializer_list<const char*>{path.c_str()});
    if (!m_library->loaded()) {
        m_reason = fmt::format("{} cannot be loaded: {}", path.string(), m_library->error());
        return;
    }
    std::string missing;
    auto resolve = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(m_library->symbol(name));
        if (!fn)
            missing += (missing.empty() ? "" : ", ") + std::string(name);
    };
    // The version first: a library of another interface version may lack (or mean otherwise by)
    // the other entry points.
    resolve(m_fn->abi_version, "kforge_vendor_abi_version");
    if (m_fn->abi_version) {
        if (int version = m_fn->abi_version(); version != required_abi_version) {
            m_reason = fmt::format("{} has interface version {} where this kforge needs {} (it comes from another "
                                   "kforge build; rebuild or point KFORGE_VENDOR_LIB at the right one)",
                                   path.string(), version, required_abi_version);
            return;
        }
    }
    resolve(m_fn->routine_names, "kforge_vendor_routine_names");
    resolve(m_fn->routine_status, "kforge_vendor_routine_status");
    resolve(m_fn->versions, "kforge_vendor_versions");
    resolve(m_fn->check, "kforge_vendor_check");
    resolve(m_fn->describe, "kforge_vendor_describe");
    resolve(m_fn->prepare, "kforge_vendor_prepare");
    resolve(m_fn->stage, "kforge_vendor_stage");
    resolve(m_fn->run, "kforge_vendor_run");
    resolve(m_fn->release, "kforge_vendor_release");
    resolve(m_fn->selftest, "kforge_vendor_selftest");
    resolve(m_steps->describe, "kforge_vendor_step_describe");
    resolve(m_steps->prepare, "kforge_vendor_step_prepare");
    resolve(m_steps->chosen, "kforge_vendor_step_chosen");
    resolve(m_steps->run, "kforge_vendor_step_run");
    resolve(m_steps->release, "kforge_vendor_step_release");
    resolve(m_steps->selftest, "kforge_vendor_step_selftest");
    if (!missing.empty())
        m_reason = fmt::format("{} is not kforge's vendor library: it lacks {}", path.string(), missing);
}

VendorLibrary::~VendorLibrary() = default;

std::string VendorLibrary::versions() const { return available() ? m_fn->versions() : ""; }

std::vector<std::string> VendorLibrary::routine_names() const
{
    std::vector<std::string> names;
    if (!available())
        return names;
    std::string all = m_fn->routine_names();
    for (size_t start = 0; start < all.size();) {
        size_t comma = all.find(',', start);
        names.push_back(all.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        start = comma == std::string::npos ? all.size() : comma + 1;
    }
    return names;
}

std::string VendorLibrary::routine_status(const std::string& routine) const
{
    if (!available())
        return m_reason;
    char reason[k_message_bytes] = {};
    int status = m_fn->routine_status(routine.c_str(), reason, sizeof reason);
    return status == KFORGE_VENDOR_OK ? "" : message_text(reason, status);
}

std::string VendorLibrary::check(const std::string& routine, const VendorBindings& bindings) const
{
    if (!available())
        return m_reason;
    CBindings c_bindings(bindings);
    char error[k_message_bytes] = {};
    int status = m_fn->check(routine.c_str(), c_bindings.get(), error, sizeof error);
    return status == KFORGE_VENDOR_OK ? "" : message_text(error, status);
}

VendorLibrary::Call VendorLibrary::describe(const std::string& routine, const VendorBindings& bindings) const
{
    if (!available())
        return Call{false, m_reason};
    CBindings c_bindings(bindings);
    char text[k_message_bytes] = {};
    int status = m_fn->describe(routine.c_str(), c_bindings.get(), text, sizeof text);
    return Call{status == KFORGE_VENDOR_OK, message_text(text, status)};
}

VendorBaseline VendorLibrary::prepare(const std::string& routine, const VendorBindings& bindings) const
{
    VendorBaseline baseline;
    baseline.m_routine = routine;
    if (!available()) {
        baseline.m_problem = m_reason;
        return baseline;
    }
    CBindings c_bindings(bindings);
    char error[k_message_bytes] = {};
    void* state = nullptr;
    int status = m_fn->prepare(routine.c_str(), c_bindings.get(), &state, error, sizeof error);
    if (status != KFORGE_VENDOR_OK || !state) {
        baseline.m_problem = message_text(error, status);
        return baseline;
    }
    baseline.m_library = this;
    baseline.m_state = state;
    return baseline;
}

VendorLibrary::SelfTest VendorLibrary::selftest(const std::string& routine) const
{
    if (!available())
        return SelfTest{false, m_reason};
    char report[k_message_bytes] = {};
    int status = m_fn->selftest(routine.c_str(), report, sizeof report);
    return SelfTest{status == KFORGE_VENDOR_OK, message_text(report, status)};
}

} // namespace kforge
