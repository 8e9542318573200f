// Opening libcudnn.so.9 on first use; see the header for why it is not linked.
//
// The library is looked for where a link would find it (the loader's path, which includes this
// library's RUNPATH: the toolkit folder configure found and /usr/local/cuda/lib64), then at those
// folders by full path, so an unusual loader configuration still finds the cuDNN kforge was built
// against. It stays open for the life of the process: its handles and plans are used until exit.
#include "cudnn_api.hpp"

#include <vector>

#include <dlfcn.h>
#include <fmt/format.h>

#include "steps/step.hpp"
#include "vendor_routine.hpp"

namespace kforge::vendor {
namespace {

#ifndef KFORGE_CUDNN_LIBDIR
#define KFORGE_CUDNN_LIBDIR ""
#endif

struct CudnnLibrary {
    CudnnApi api;
    std::string problem; // empty when api is usable
};

CudnnLibrary open_cudnn()
{
    CudnnLibrary library;
    std::vector<std::string> places{"libcudnn.so.9"};
    if (std::string configured = KFORGE_CUDNN_LIBDIR; !configured.empty())
        places.push_back(configured + "/libcudnn.so.9");
    places.push_back("/usr/local/cuda/lib64/libcudnn.so.9");
    void* handle = nullptr;
    std::string tried;
    for (const auto& place : places) {
        handle = ::dlopen(place.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle)
            break;
        const char* why = ::dlerror();
        tried += fmt::format("{}{}: {}", tried.empty() ? "" : "; ", place, why ? why : "not found");
    }
    if (!handle) {
        library.problem =
            "cuDNN 9 cannot be loaded (conv steps need libcudnn.so.9, from the cuDNN 9 package): " + tried;
        return library;
    }
    std::string missing;
#define KF_RESOLVE_CUDNN_FN(name)                                                                  \
    library.api.name = reinterpret_cast<decltype(library.api.name)>(::dlsym(handle, #name));       \
    if (!library.api.name)                                                                         \
        missing += (missing.empty() ? "" : ", ") + std::string(#name);
    KF_CUDNN_FUNCTIONS(KF_RESOLVE_CUDNN_FN)
#undef KF_RESOLVE_CUDNN_FN
    if (!missing.empty()) {
        library.problem = fmt::format("the libcudnn.so.9 found lacks {}", missing);
        return library;
    }
    // The attribute and enum values this library passes are those of the cuDNN 9 headers.
    size_t version = library.api.cudnnGetVersion();
    if (version / 10000 != CUDNN_MAJOR)
        library.problem = fmt::format("the libcudnn.so.9 found is cuDNN version {}, not {}.x (built against {}.{}.{})",
                                      version, CUDNN_MAJOR, CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
    return library;
}

const CudnnLibrary& cudnn_library()
{
    static const CudnnLibrary library = open_cudnn();
    return library;
}

} // namespace

const CudnnApi& cudnn_api()
{
    const CudnnLibrary& library = cudnn_library();
    if (!library.problem.empty())
        fail(Status::unavailable, "conv: " + library.problem);
    return library.api;
}

cudnnHandle_t shared_cudnn_handle()
{
    static cudnnHandle_t handle = nullptr;
    static void* made_in = nullptr;
    const CudnnApi& api = cudnn_api();
    void* context = current_cuda_context();
    if (!handle || made_in != context) {
        KF_CUDNN_CHECK(api.cudnnCreate(&handle));
        made_in = context;
    }
    return handle;
}

std::string cudnn_error_text(cudnnStatus_t status)
{
    const CudnnApi& api = cudnn_library().api;
    std::string text = fmt::format("{} ({})", api.cudnnGetErrorString ? api.cudnnGetErrorString(status) : "cuDNN error",
                                   static_cast<int>(status));
    if (api.cudnnGetLastErrorString) {
        char message[2048] = {};
        api.cudnnGetLastErrorString(message, sizeof message);
        if (message[0] != '\0')
            text += fmt::format(": {}", message);
    }
    return text;
}

CudnnDescriptor::CudnnDescriptor(cudnnBackendDescriptorType_t type)
{
    KF_CUDNN_CHECK(cudnn_api().cudnnBackendCreateDescriptor(type, &m_desc));
}

CudnnDescriptor::~CudnnDescriptor()
{
    if (m_desc)
        cudnn_library().api.cudnnBackendDestroyDescriptor(m_desc);
}

CudnnDescriptor& CudnnDescriptor::operator=(CudnnDescriptor&& other) noexcept
{
    if (this != &other) {
        if (m_desc)
            cudnn_library().api.cudnnBackendDestroyDescriptor(m_desc);
        m_desc = other.m_desc;
        other.m_desc = nullptr;
    }
    return *this;
}

std::string cudnn_build_version()
{
    return fmt::format("cuDNN {}.{}.{} headers (libcudnn.so.9 is opened at the first conv step)", CUDNN_MAJOR,
                       CUDNN_MINOR, CUDNN_PATCHLEVEL);
}

std::string cudnn_loaded_version()
{
    size_t version = cudnn_api().cudnnGetVersion();
    return fmt::format("cuDNN {}.{}.{}", version / 10000, version / 100 % 100, version % 100);
}

} // namespace kforge::vendor
