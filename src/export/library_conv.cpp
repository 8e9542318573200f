// conv_library_code(): the cuDNN 9 graph-API code of an exported conv step (see library_code.cpp).
//
// It repeats vendor/steps/conv_plan.cpp (tensors as dims and strides, a 1-D convolution as 2-D over
// a unit height, a transposed convolution as the data gradient with its post padding),
// vendor/steps/conv.cpp (descriptors, operation, graph, variant pack) and
// vendor/steps/conv_engines.cpp (INSTANT then FALLBACK proposals, duplicates by engine, knobs and
// notes dropped, engines whose numerical notes break the step's precision left out, plans built
// in order, the `algo`-th that builds and fits the workspace), so the index means what it meant
// when kforge timed it.
#include "export/host_code.hpp"

namespace kforge {
namespace {

constexpr const char* k_conv_code = R"cpp(
// ---- cuDNN conv (vendor/steps/conv_plan.cpp, vendor/steps/conv.cpp, vendor/steps/conv_engines.cpp) ----
#include <cudnn_graph.h>

#include <string>

namespace @F@_detail {
namespace {

// What the plan fixes for one conv step.
struct ConvSite
{
    int spatial_dims;          // the step's: 1, 2 or 3
    bool transposed;           // the data gradient of a forward convolution
    bool channels_last;        // x and y NHWC (NWC, NDHWC); w as PyTorch's either way
    cudnnDataType_t dtype;     // x, w and y
};

bool dnn_ok(cudnnStatus_t status, const char* call, const char* label)
{
    if (status == CUDNN_STATUS_SUCCESS)
        return true;
    char detail[256];
    cudnnGetLastErrorString(detail, sizeof detail);
    refuse_with("%s: %s: %s%s%s", label, call, cudnnGetErrorString(status), detail[0] ? ": " : "", detail);
    return false;
}

// The process's cuDNN handle for `device`, made once and kept to process exit.
cudnnHandle_t dnn_handle(int device, const char* label)
{
    static cudnnHandle_t handles[k_max_devices];
    if (handles[device] == NULL && !dnn_ok(cudnnCreate(&handles[device]), "cudnnCreate", label))
        return NULL;
    return handles[device];
}

// A backend descriptor, destroyed with its owner.
struct Descriptor
{
    cudnnBackendDescriptor_t raw;
    explicit Descriptor(cudnnBackendDescriptorType_t type) : raw(NULL)
    {
        if (cudnnBackendCreateDescriptor(type, &raw) != CUDNN_STATUS_SUCCESS)
            raw = NULL;
    }
    ~Descriptor()
    {
        if (raw)
            cudnnBackendDestroyDescriptor(raw);
    }
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
};

// One prepared call for one site, device and numbers.
struct ConvCall
{
    int site, device;
    int64_t key[24]; // n, c, k, groups, then per spatial dimension size, kernel, stride, padding,
                     // dilation, output_padding, then algo, workspace_bytes
    Descriptor* tensors[3]; // x (or dy), w, y (or dx)
    Descriptor* conv;
    Descriptor* operation;
    Descriptor* graph;
    Descriptor* plan;
    int64_t plan_workspace;
};

void destroy_conv(ConvCall* call)
{
    // The plan before the graph, the operation and the tensors it was built from.
    delete call->plan;
    delete call->graph;
    delete call->operation;
    delete call->conv;
    for (int i = 0; i < 3; ++i)
        delete call->tensors[i];
    delete call;
}

#define KF_DNN_TRY(call)                                                                           \
    do {                                                                                           \
        if (!dnn_ok((call), #call, label))                                                         \
            return false;                                                                          \
    } while (0)

bool set_attribute(cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                   int64_t count, const void* values, const char* label)
{
    KF_DNN_TRY(cudnnBackendSetAttribute(desc, name, type, count, values));
    return true;
}

// Packed strides of [n, channels, spatial...]: row-major, or channels last.
void activation_strides(const std::vector<int64_t>& dims, bool channels_last, std::vector<int64_t>& strides)
{
    size_t rank = dims.size();
    strides.assign(rank, 1);
    if (!channels_last) {
        for (size_t i = rank - 1; i-- > 0;)
            strides[i] = strides[i + 1] * dims[i + 1];
        return;
    }
    int64_t running = dims[1];
    for (size_t i = rank; i-- > 2;) {
        strides[i] = running;
        running *= dims[i];
    }
    strides[0] = running;
}

bool make_tensor(Descriptor** out, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                 int64_t uid, cudnnDataType_t type, const char* label)
{
    *out = new Descriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    cudnnBackendDescriptor_t t = (*out)->raw;
    const int64_t rank = (int64_t)dims.size(), alignment = 16; // as kforge declares them
    if (t == NULL)
        return dnn_ok(CUDNN_STATUS_ALLOC_FAILED, "cudnnBackendCreateDescriptor(TENSOR)", label);
    return set_attribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, label) &&
           set_attribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, dims.data(), label) &&
           set_attribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank, strides.data(), label) &&
           set_attribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, label) &&
           set_attribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, label) &&
           dnn_ok(cudnnBackendFinalize(t), "cudnnBackendFinalize(TENSOR)", label);
}

const char* numerical_note_name(cudnnBackendNumericalNote_t note)
{
    switch (note) {
    case CUDNN_NUMERICAL_NOTE_TENSOR_CORE: return "TENSOR_CORE";
    case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS: return "DOWN_CONVERT_INPUTS";
    case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: return "REDUCED_PRECISION_REDUCTION";
    case CUDNN_NUMERICAL_NOTE_FFT: return "FFT";
    case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: return "NONDETERMINISTIC";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD: return "WINOGRAD";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4: return "WINOGRAD_TILE_4x4";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6: return "WINOGRAD_TILE_6x6";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13: return "WINOGRAD_TILE_13x13";
    case CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP: return "STRICT_NAN_PROP";
    default: return "UNKNOWN_NOTE";
    }
}

// Only the notes every cuDNN 9 header has: the export compiles against whichever cuDNN 9 the user
// has, and a note newer than some of them (CUBLASLT_DEPENDENCY) falls to `default`.
const char* behavior_note_name(cudnnBackendBehaviorNote_t note)
{
    switch (note) {
    case CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION: return "RUNTIME_COMPILATION";
    case CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API: return "SUPPORTS_CUDA_GRAPH_NATIVE_API";
    default: return "OTHER_BEHAVIOR";
    }
}

// An engine configuration's identity as kforge writes it ("engine 12 (knobs 2=3; FFT)": what
// tells duplicates apart) and whether its numerical notes keep the step's precision.
bool read_engine(cudnnBackendDescriptor_t config, cudnnDataType_t dtype, std::string& text, bool& allowed,
                 const char* label)
{
    Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t count = 0, global_index = -1;
    KF_DNN_TRY(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                                        &engine.raw));
    KF_DNN_TRY(cudnnBackendGetAttribute(engine.raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count,
                                        &global_index));
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t note_count = 0;
    KF_DNN_TRY(cudnnBackendGetAttribute(engine.raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                        CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &note_count, notes));
    cudnnBackendBehaviorNote_t behaviors[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    int64_t behavior_count = 0;
    KF_DNN_TRY(cudnnBackendGetAttribute(engine.raw, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                        CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &behavior_count, behaviors));
    std::vector<Descriptor*> choices;
    std::vector<cudnnBackendDescriptor_t> choices_raw;
    for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
        choices.push_back(new Descriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR));
        choices_raw.push_back(choices.back()->raw);
    }
    int64_t knob_count = 0;
    bool ok = dnn_ok(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                              CUDNN_KNOB_TYPE_COUNTS, &knob_count, choices_raw.data()),
                     "cudnnBackendGetAttribute(KNOB_CHOICES)", label);
    std::string inside, knobs;
    for (int64_t i = 0; ok && i < knob_count && i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
        cudnnBackendKnobType_t type = (cudnnBackendKnobType_t)0;
        int64_t value = 0;
        ok = dnn_ok(cudnnBackendGetAttribute(choices_raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                                             &count, &type), "cudnnBackendGetAttribute(KNOB_TYPE)", label) &&
             dnn_ok(cudnnBackendGetAttribute(choices_raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1,
                                             &count, &value), "cudnnBackendGetAttribute(KNOB_VALUE)", label);
        knobs += (knobs.empty() ? "knobs " : " ") + std::to_string((int)type) + "=" + std::to_string(value);
    }
    for (size_t i = 0; i < choices.size(); ++i)
        delete choices[i];
    if (!ok)
        return false;
    if (!knobs.empty())
        inside = knobs;
    allowed = true;
    for (int64_t i = 0; i < note_count && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++i) {
        inside += (inside.empty() ? "" : "; ") + std::string(numerical_note_name(notes[i]));
        // A step's sums are fp32: no down-converted inputs or reduced-precision reductions, and for
        // fp32 no tensor cores (their fp32 path rounds inputs to TF32).
        if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
            notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION ||
            (dtype == CUDNN_DATA_FLOAT && notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE))
            allowed = false;
    }
    for (int64_t i = 0; i < behavior_count && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; ++i)
        inside += (inside.empty() ? "" : "; ") + std::string(behavior_note_name(behaviors[i]));
    text = "engine " + std::to_string((long long)global_index) + (inside.empty() ? "" : " (" + inside + ")");
    return true;
}

// Appends the configurations one heuristics mode proposes that no earlier one did (by text);
// a mode that cannot rank the graph proposes nothing.
bool add_proposals(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode, std::vector<Descriptor*>& configs,
                   std::vector<std::string>& seen, std::vector<bool>& allowed, cudnnDataType_t dtype,
                   const char* label)
{
    Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    KF_DNN_TRY(cudnnBackendSetAttribute(heuristics.raw, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
    KF_DNN_TRY(cudnnBackendSetAttribute(heuristics.raw, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
    if (cudnnBackendFinalize(heuristics.raw) != CUDNN_STATUS_SUCCESS)
        return true;
    int64_t count = 0;
    KF_DNN_TRY(cudnnBackendGetAttribute(heuristics.raw, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                        0, &count, NULL));
    if (count <= 0)
        return true;
    std::vector<Descriptor*> found;
    std::vector<cudnnBackendDescriptor_t> found_raw;
    for (int64_t i = 0; i < count; ++i) {
        found.push_back(new Descriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
        found_raw.push_back(found.back()->raw);
    }
    int64_t returned = 0;
    bool ok = dnn_ok(cudnnBackendGetAttribute(heuristics.raw, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, found_raw.data()),
                     "cudnnBackendGetAttribute(ENGINEHEUR_RESULTS)", label);
    for (int64_t i = 0; i < count; ++i) {
        std::string text;
        bool keep = ok && i < returned;
        bool precise = false;
        if (keep)
            ok = keep = read_engine(found[i]->raw, dtype, text, precise, label);
        for (size_t s = 0; keep && s < seen.size(); ++s)
            keep = seen[s] != text;
        if (!keep) {
            delete found[i];
            continue;
        }
        seen.push_back(text);
        configs.push_back(found[i]);
        allowed.push_back(precise);
    }
    return ok;
}

// The graph of one convolution, and the execution plan of its `algo`-th allowed configuration.
bool build_conv(ConvCall* call, const ConvSite& site, const @F@_launch& launch, cudnnHandle_t handle,
                const char* label, cudaError_t* status)
{
    const @F@_conv& cv = launch.conv;
    *status = cudaErrorInvalidValue;
    std::vector<int64_t> in_dims, out_dims, filter_dims, pre, post, stride, dilation;
    in_dims.push_back(cv.n);
    in_dims.push_back(cv.c);
    out_dims.push_back(cv.n);
    out_dims.push_back(cv.k);
    filter_dims.push_back(site.transposed ? cv.c : cv.k);
    filter_dims.push_back(site.transposed ? cv.k / cv.groups : cv.c / cv.groups);
    if (site.spatial_dims == 1) { // cuDNN wants 4-D: a 1-D convolution over a unit height
        in_dims.push_back(1);
        out_dims.push_back(1);
        filter_dims.push_back(1);
        pre.push_back(0);
        post.push_back(0);
        stride.push_back(1);
        dilation.push_back(1);
    }
    for (int i = 0; i < site.spatial_dims; ++i) {
        in_dims.push_back(cv.size[i]);
        out_dims.push_back(cv.out[i]);
        filter_dims.push_back(cv.kernel[i]);
        pre.push_back(cv.padding[i]);
        // An output_padding of a stride or more makes the forward size of dx one or more larger
        // than dy; the padding after the data gives those whole strides back.
        int64_t after = cv.padding[i];
        if (site.transposed)
            after -= cv.output_padding[i] - cv.output_padding[i] % cv.stride[i];
        if (after < 0) {
            refuse_with("%s: output_padding[%d] = %lld with stride %lld and padding %lld: cuDNN's data gradient takes "
                        "an output_padding whose whole strides fit in the padding", label, i,
                        (long long)cv.output_padding[i], (long long)cv.stride[i], (long long)cv.padding[i]);
            return false;
        }
        post.push_back(after);
        stride.push_back(cv.stride[i]);
        dilation.push_back(cv.dilation[i]);
    }
    *status = cudaErrorUnknown;
    std::vector<int64_t> in_strides, out_strides, filter_strides;
    activation_strides(in_dims, site.channels_last, in_strides);
    activation_strides(out_dims, site.channels_last, out_strides);
    activation_strides(filter_dims, false, filter_strides);
    if (!make_tensor(&call->tensors[0], in_dims, in_strides, 1, site.dtype, label) ||
        !make_tensor(&call->tensors[1], filter_dims, filter_strides, 2, site.dtype, label) ||
        !make_tensor(&call->tensors[2], out_dims, out_strides, 3, site.dtype, label))
        return false;

    call->conv = new Descriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    cudnnBackendDescriptor_t conv = call->conv->raw;
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const int64_t dims = (int64_t)stride.size();
    KF_DNN_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
    KF_DNN_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    KF_DNN_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims));
    KF_DNN_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dims,
                                        dilation.data()));
    KF_DNN_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, dims,
                                        stride.data()));
    KF_DNN_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, dims, pre.data()));
    KF_DNN_TRY(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, dims,
                                        post.data()));
    KF_DNN_TRY(cudnnBackendFinalize(conv));

    // Forward: y = conv(x, w). Transposed: dx = the data gradient at dy, with x as dy and y as dx.
    call->operation = new Descriptor(site.transposed ? CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
                                                     : CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    cudnnBackendDescriptor_t op = call->operation->raw;
    cudnnBackendDescriptor_t x = call->tensors[0]->raw, w = call->tensors[1]->raw, y = call->tensors[2]->raw;
    const float alpha = 1.0f, beta = 0.0f;
    const cudnnBackendAttributeName_t names[6] = {
        site.transposed ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
        site.transposed ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
        site.transposed ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
        site.transposed ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC
                        : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
        site.transposed ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA
                        : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
        site.transposed ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
    KF_DNN_TRY(cudnnBackendSetAttribute(op, names[0], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    KF_DNN_TRY(cudnnBackendSetAttribute(op, names[1], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
    KF_DNN_TRY(cudnnBackendSetAttribute(op, names[2], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    KF_DNN_TRY(cudnnBackendSetAttribute(op, names[3], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
    KF_DNN_TRY(cudnnBackendSetAttribute(op, names[4], CUDNN_TYPE_FLOAT, 1, &alpha));
    KF_DNN_TRY(cudnnBackendSetAttribute(op, names[5], CUDNN_TYPE_FLOAT, 1, &beta));
    KF_DNN_TRY(cudnnBackendFinalize(op));

    call->graph = new Descriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    cudnnBackendDescriptor_t graph = call->graph->raw;
    KF_DNN_TRY(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    KF_DNN_TRY(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
    KF_DNN_TRY(cudnnBackendFinalize(graph));

    std::vector<Descriptor*> configs;
    std::vector<std::string> seen;
    std::vector<bool> precise;
    bool ok = add_proposals(graph, CUDNN_HEUR_MODE_INSTANT, configs, seen, precise, site.dtype, label) &&
              add_proposals(graph, CUDNN_HEUR_MODE_FALLBACK, configs, seen, precise, site.dtype, label);
    int64_t allowed = 0;
    for (size_t i = 0; ok && i < configs.size() && call->plan == NULL; ++i) {
        if (!precise[i])
            continue;
        Descriptor* plan = new Descriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        cudnnBackendDescriptor_t config = configs[i]->raw;
        int64_t workspace = 0, count = 0;
        ok = dnn_ok(cudnnBackendSetAttribute(plan->raw, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                             &handle), "EXECUTION_PLAN_HANDLE", label) &&
             dnn_ok(cudnnBackendSetAttribute(plan->raw, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config),
                    "EXECUTION_PLAN_ENGINE_CONFIG", label);
        // An engine the heuristics propose may still refuse the graph when its plan is built.
        bool built = ok && cudnnBackendFinalize(plan->raw) == CUDNN_STATUS_SUCCESS;
        if (built)
            ok = dnn_ok(cudnnBackendGetAttribute(plan->raw, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                                 1, &count, &workspace), "EXECUTION_PLAN_WORKSPACE_SIZE", label);
        bool fits = built && ok && workspace >= 0 && workspace <= launch.workspace_bytes;
        if (fits && allowed++ == launch.algo) {
            call->plan = plan;
            call->plan_workspace = workspace;
        } else {
            delete plan;
        }
    }
    for (size_t i = 0; i < configs.size(); ++i)
        delete configs[i];
    if (!ok)
        return false;
    if (call->plan == NULL) {
        refuse_with("%s: algo %lld: this conv has %lld allowed cuDNN engine configurations within a workspace of "
                    "%lld bytes (kforge's filter of the %d proposed)", label, (long long)launch.algo,
                    (long long)allowed, (long long)launch.workspace_bytes, (int)configs.size());
        *status = cudaErrorInvalidValue;
        return false;
    }
    return true;
}

#undef KF_DNN_TRY

// The prepared call for these numbers, from the cache or built now (most recently used last).
ConvCall* conv_call(const ConvSite& site, int site_index, const @F@_launch& launch, int device, cudnnHandle_t handle,
                    const char* label, cudaError_t* status)
{
    static std::vector<ConvCall*> cache;
    const @F@_conv& cv = launch.conv;
    int64_t key[24] = {cv.n, cv.c, cv.k, cv.groups};
    for (int d = 0; d < 3; ++d) {
        const int64_t values[6] = {cv.size[d], cv.kernel[d], cv.stride[d], cv.padding[d], cv.dilation[d],
                                   cv.output_padding[d]};
        memcpy(&key[4 + 6 * d], values, sizeof values);
    }
    key[22] = launch.algo;
    key[23] = launch.workspace_bytes;
    for (size_t i = 0; i < cache.size(); ++i) {
        ConvCall* call = cache[i];
        if (call->site == site_index && call->device == device && memcmp(call->key, key, sizeof key) == 0) {
            cache.erase(cache.begin() + (ptrdiff_t)i);
            cache.push_back(call);
            return call;
        }
    }
    ConvCall* call = new ConvCall();
    call->site = site_index;
    call->device = device;
    memcpy(call->key, key, sizeof key);
    if (!build_conv(call, site, launch, handle, label, status)) {
        destroy_conv(call);
        return NULL;
    }
    if (cache.size() >= k_cached_calls) {
        // An execution plan may be in use by work still queued: let the device finish first.
        cudaDeviceSynchronize();
        destroy_conv(cache.front());
        cache.erase(cache.begin());
    }
    cache.push_back(call);
    return call;
}

// One conv step: operands from the buffer table in the order x, w, y, workspace.
cudaError_t run_conv(const ConvSite& site, int site_index, const @F@_launch& launch, void* const* buffers,
                     cudaStream_t stream, const char* label)
{
    const char* roles[4] = {"x", "w", "y", "workspace"};
    void* operand[4];
    for (int i = 0; i < 4; ++i) {
        operand[i] = launch.arg[i] >= 0 ? buffers[launch.arg[i]] : NULL;
        if ((i < 3 || launch.workspace_bytes > 0) && !aligned_operand(label, roles[i], operand[i], 16))
            return cudaErrorInvalidValue;
    }
    const int device = library_device(label);
    if (device < 0)
        return cudaErrorInvalidDevice;
    std::lock_guard<std::mutex> hold(library_lock());
    cudnnHandle_t handle = dnn_handle(device, label);
    if (handle == NULL)
        return cudaErrorUnknown;
    cudaError_t status = cudaSuccess;
    ConvCall* call = conv_call(site, site_index, launch, device, handle, label, &status);
    if (call == NULL)
        return status;
    // The run's buffers by the tensors' unique ids; the workspace only for a plan that uses one.
    Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    int64_t uids[3] = {1, 2, 3};
    void* workspace = call->plan_workspace > 0 ? operand[3] : NULL;
    if (!dnn_ok(cudnnBackendSetAttribute(pack.raw, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids),
                "VARIANT_PACK_UNIQUE_IDS", label) ||
        !dnn_ok(cudnnBackendSetAttribute(pack.raw, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3,
                                         operand), "VARIANT_PACK_DATA_POINTERS", label) ||
        !dnn_ok(cudnnBackendSetAttribute(pack.raw, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                         &workspace), "VARIANT_PACK_WORKSPACE", label) ||
        !dnn_ok(cudnnBackendFinalize(pack.raw), "cudnnBackendFinalize(VARIANT_PACK)", label) ||
        !dnn_ok(cudnnSetStream(handle, stream), "cudnnSetStream", label) ||
        !dnn_ok(cudnnBackendExecute(handle, call->plan->raw, pack.raw), "cudnnBackendExecute", label))
        return cudaErrorUnknown;
    return cudaSuccess;
}

} // namespace
} // namespace @F@_detail
)cpp";

} // namespace

std::string conv_library_code()
{
    return k_conv_code;
}

} // namespace kforge
