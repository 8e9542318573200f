/* kforge_vendor.h: the C interface of libkforge_vendor.so, kforge's vendor-library baselines.
 *
 * The library wraps cuBLAS, cuSPARSE and CUB routines so that kforge's GPU worker can time them on
 * a task's own buffers, beside the task's reference kernel. It is a separate shared library, built
 * with nvcc, because the kforge binary must start on machines without an NVIDIA driver and must not
 * need cuBLAS or cuSPARSE to load: the GPU worker dlopen()s this library only after the driver is
 * up (evaluator/worker/vendor_baseline.hpp). Loading the library needs no driver either (the CUDA runtime
 * is linked statically and loads libcuda.so.1 on its first call), so a machine without a GPU can
 * still list the routines and their build status.
 *
 * Only plain C types cross this interface; no C++ exception ever leaves it.
 *
 * Contexts and streams. The worker owns device 0's primary context (CUDA_VISIBLE_DEVICES picks the
 * physical GPU) and makes it current on its thread. The CUDA runtime inside this library, cuBLAS
 * and cuSPARSE all use the context current on the calling thread, which is that primary context,
 * so device pointers and streams of the driver API are valid here. kforge_vendor_prepare() checks
 * this and fails with a clear message when another context is current. Every function must be
 * called on the thread that has the context current. When no context is current (a test program
 * that never touched the driver), the first call makes device 0's primary context current.
 *
 * Protocol, per routine and buffer set:
 *   kforge_vendor_prepare(name, bindings, &state)   allocate workspace, create library handles
 *   repeat: kforge_vendor_stage(state, stream)      work that must precede each run, not measured
 *           kforge_vendor_run(state, stream)        the measured routine
 *   kforge_vendor_release(state)
 * stage and run only enqueue work on the stream (no synchronization, no allocation). A state keeps
 * the operands' addresses and sizes, never their contents, so the caller may regenerate inputs
 * between runs; it must prepare again when the buffers move or the sizes change.
 *
 * Return codes: 0 on success, otherwise one of KFORGE_VENDOR_* below, with a NUL-terminated
 * message (truncated to error_len bytes) in `error` when error_len > 0.
 *
 * The routines and the operands each expects, named as in the bundled tasks (tasks/<task>.json).
 * Every tensor is checked for its dtype and element count; symbols and scalars come as values.
 * cuBLAS is column-major, kforge's tensors row-major: a row-major R x C matrix is the column-major
 * C x R matrix (its transpose) with leading dimension C, which is how each call below is derived.
 *
 *  cublas_sgemm          (sgemm_f32) C = A B, fp32. Tensors A f32 [M*K], B f32 [K*N], C f32
 *                        [M*N], row-major; values M, N, K. In column-major terms C^T = B^T A^T:
 *                        cublasGemmEx(N, N, m=N, n=M, k=K, B, ld N, A, ld K, C, ld N) with
 *                        CUBLAS_COMPUTE_32F under CUBLAS_DEFAULT_MATH set explicitly: fp32 FMA,
 *                        never TF32 (the compute type guarantees at least fp32 precision) nor
 *                        BF16x9 emulation (which needs its own math mode). This is the call an
 *                        application makes when it disables TF32; CUBLAS_PEDANTIC_MATH would also
 *                        exclude TF32, but cuBLAS documents it as possibly slower, which would
 *                        flatter every candidate's speedup.
 *  cublas_gemm_bf16      (hgemm_bf16) C = A B^T, bf16 in and out, fp32 accumulation. Tensors A
 *                        bf16 [M*K], B bf16 [N*K], C bf16 [M*N], row-major (K contiguous in A
 *                        and B); values M, N, K. C^T = B A^T: cublasGemmEx(T, N, m=N, n=M, k=K,
 *                        B, ld K, A, ld K, C, ld N), CUDA_R_16BF operands, CUBLAS_COMPUTE_32F,
 *                        math mode CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_
 *                        REDUCTION (tensor cores; partial sums stay fp32, one rounding per
 *                        output, the task's own rule).
 *  cublas_saxpy          (axpy_f32) z = a x + y. Tensors x, y, z f32 [n]; value a (real), n.
 *                        cublasSaxpy works in place, so stage copies y into z (cudaMemcpyAsync)
 *                        and run is cublasSaxpy(n, a, x, 1, z, 1). The measured part reads x and
 *                        z and writes z: the same traffic as the out-of-place task.
 *  cublas_geam_transpose (transpose_f32) out = in^T. Tensors in f32 [M*N], out f32 [N*M]; values
 *                        M, N. In column-major terms in is N x M (ld N) and out is M x N (ld M):
 *                        cublasSgeam(T, N, m=M, n=N, 1, in, ld N, 0, B = in, ld M, out, ld M).
 *                        B is scaled by 0; it points at `in` (finite, in bounds) rather than at
 *                        the NaN-poisoned output in case cuBLAS reads it.
 *  cub_reduce_sum        (reduce_sum_f32) out[0] = sum x. Tensors x f32 [n], out f32 [1]; value
 *                        n. cub::DeviceReduce::Sum with 32-bit offsets (n < 2^32).
 *  cub_inclusive_scan    (scan_u32) out = inclusive prefix sums of in, mod 2^32. Tensors in, out
 *                        u32 [n]; value n. cub::DeviceScan::InclusiveSum (n < 2^32).
 *  cub_histogram_even    (histogram_u8) 256 bins of bytes. Tensors data u8 [n], hist u32 [256];
 *                        value n. cub::DeviceHistogram::HistogramEven with 257 levels 0..256
 *                        (bin b counts byte b); CUB zeroes the histogram itself.
 *  cusparse_spmv_csr     (spmv_csr_f32) y = A x, CSR. Tensors row_ptr i32 [R+1], col_idx i32
 *                        [NNZ], vals f32 [NNZ], x f32 [C], y f32 [R]; the sizes come from the
 *                        tensors' counts (values R, C, NNZ, when given, must agree).
 *                        cusparseSpMV(NON_TRANSPOSE, alpha 1, beta 0, CUSPARSE_SPMV_ALG_DEFAULT)
 *                        on a 32-bit-index, zero-based CSR descriptor. stage zeroes y (so a
 *                        library that reads y even with beta 0 never sees NaN poison).
 * Workspace (cuBLAS workspace, CUB temporary storage, the cuSPARSE buffer) is allocated in prepare.
 */
#ifndef KFORGE_VENDOR_H
#define KFORGE_VENDOR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports these functions and nothing else (exports.map). */
#if defined(__GNUC__)
#define KFORGE_VENDOR_API __attribute__((visibility("default")))
#else
#define KFORGE_VENDOR_API
#endif

/* Raised whenever a declaration below changes meaning; the loader refuses other versions. */
#define KFORGE_VENDOR_ABI_VERSION 3 /* 2: kforge_vendor_describe; 3: library steps (kforge_vendor_step_*) */

enum {
    KFORGE_VENDOR_OK = 0,
    KFORGE_VENDOR_UNAVAILABLE = 1,  /* unknown name, or this build lacks the library it needs */
    KFORGE_VENDOR_BAD_BINDINGS = 2, /* an operand is missing or has the wrong dtype or size */
    KFORGE_VENDOR_LIBRARY_ERROR = 3, /* a CUDA runtime, cuBLAS, cuSPARSE or CUB call failed */
    KFORGE_VENDOR_MISMATCH = 4,     /* kforge_vendor_selftest: the result is wrong */
    KFORGE_VENDOR_NO_ALGORITHM = 5  /* a library step: no allowed algorithm at the index asked for */
};

/* One tensor argument of the task. */
typedef struct {
    const char* name;               /* the task's argument name, e.g. "A" */
    unsigned long long device_ptr;  /* a CUdeviceptr of the current context */
    const char* dtype;              /* as in task specs: "f32", "bf16", "u8", "u32", "i32", ... */
    unsigned long long count;       /* elements */
} KforgeVendorTensor;

/* One size symbol or scalar argument. Integers fill both fields; reals fill real_value (and
 * int_value with the value truncated). */
typedef struct {
    const char* name;               /* e.g. "M", "n", "a" */
    long long int_value;
    double real_value;
} KforgeVendorValue;

typedef struct {
    const KforgeVendorTensor* tensors;
    size_t tensor_count;
    const KforgeVendorValue* values;
    size_t value_count;
} KforgeVendorBindings;

/* KFORGE_VENDOR_ABI_VERSION of the library. Needs no GPU. */
KFORGE_VENDOR_API int kforge_vendor_abi_version(void);

/* Every routine name this library knows, comma-separated, whether or not this build has it. */
KFORGE_VENDOR_API const char* kforge_vendor_routine_names(void);

/* KFORGE_VENDOR_OK when this build has `name`; otherwise KFORGE_VENDOR_UNAVAILABLE with the
 * reason (unknown name, or the library was missing when kforge was built). Needs no GPU. */
KFORGE_VENDOR_API int kforge_vendor_routine_status(const char* name, char* reason, size_t reason_len);

/* The versions the library was built with, e.g. "cuBLAS 13.0.0, cuSPARSE 12.6.3, CUB 3.0.1,
 * CUDA runtime 13.0". Needs no GPU. The string lives as long as the library. */
KFORGE_VENDOR_API const char* kforge_vendor_versions(void);

/* Creates a state for routine `name` on `bindings` (copied; the caller's arrays may go away).
 * Checks the operands first (KFORGE_VENDOR_BAD_BINDINGS names the missing or wrong one), then
 * initialises the runtime in the current context, creates library handles and allocates the
 * workspace. On failure *state is NULL. */
KFORGE_VENDOR_API int kforge_vendor_prepare(const char* name, const KforgeVendorBindings* bindings, void** state,
                                            char* error, size_t error_len);

/* Checks `bindings` as kforge_vendor_prepare would, without touching CUDA: KFORGE_VENDOR_OK when
 * every operand the routine needs is there with the right dtype and size. Needs no GPU. */
KFORGE_VENDOR_API int kforge_vendor_check(const char* name, const KforgeVendorBindings* bindings, char* error,
                                          size_t error_len);

/* Checks `bindings` as kforge_vendor_check does and writes into `call` the library calls the
 * routine would make on them, with every size, leading dimension, transpose flag and operand
 * (by the task's tensor names) that run() and stage() pass, e.g. "cublasGemmEx transa=N transb=N
 * m=80 n=48 k=112 A=B lda=80 B=A ldb=112 C=C ldc=80 alpha=1 beta=0". Calls are separated by "; ",
 * each is "name key=value ...". Needs no GPU; the tests replay these calls on the host. */
KFORGE_VENDOR_API int kforge_vendor_describe(const char* name, const KforgeVendorBindings* bindings, char* call,
                                             size_t call_len);

/* Enqueues on `cu_stream` (a CUstream, which is a cudaStream_t) the work that must precede every
 * run and is not part of the measured routine: nothing for most routines; cublas_saxpy copies y
 * into z; cusparse_spmv_csr zeroes y. Call it before every run, after the outputs were reset. */
KFORGE_VENDOR_API int kforge_vendor_stage(void* state, void* cu_stream, char* error, size_t error_len);

/* Enqueues the routine itself on `cu_stream`; no synchronization, no allocation. */
KFORGE_VENDOR_API int kforge_vendor_run(void* state, void* cu_stream, char* error, size_t error_len);

/* Frees the workspace and handles (synchronizes the device). NULL is ignored. Do not call it after
 * a sticky CUDA error: leave everything to process exit. */
KFORGE_VENDOR_API void kforge_vendor_release(void* state);

/* Runs routine `name` on small generated problems (several sizes, outputs NaN-poisoned first,
 * stage + run twice) in the current context, compares each result with a host computation under
 * the bundled task's tolerance and writes a summary ("cublas_sgemm: 3 shapes ok") or the first
 * failure (shape, index, expected, got) into `report`. Returns KFORGE_VENDOR_OK,
 * KFORGE_VENDOR_MISMATCH, or the error of the failing call. Needs a GPU; for tests. */
KFORGE_VENDOR_API int kforge_vendor_selftest(const char* name, char* report, size_t report_len);

/* ---- Library steps ----------------------------------------------------------------------------
 *
 * A candidate's plan may call cuBLASLt or cuDNN between its kernels (docs/library-steps.md, the
 * contract; kforge resolves every number and checks every operand's extent before it gets here).
 * Per step and per shape and param point the GPU worker prepares a state once (descriptors, the
 * heuristic's allowed candidates, the chosen algorithm or execution plan), then runs it with the
 * run's operand addresses as often as it likes, and releases it.
 *
 * matmul, row-major, for every batch index i:
 *     D[i] = act(alpha * op(A[i]) @ op(B[i]) + beta * C[i] + bias)        m x n
 * op(A) is m x k (A stored [m, k], or [k, m] when transpose_a); op(B) is k x n (B stored [k, n], or
 * [n, k] when transpose_b); C, D [m, n]; rows packed; batch matrices stride_* elements apart (0
 * repeats one); bias n elements, one per column of D, before the activation, not scaled by alpha.
 * cuBLASLt is column-major: the call computes D^T = op(B)^T op(A)^T, cuBLASLt's m = n, n = m,
 * A = the B buffer, B = the A buffer, and the bias is per row of D^T (the BIAS epilogue's rule).
 * fp32 operands compute in CUBLAS_COMPUTE_32F with an implementation mask that excludes TF32, BF16
 * and FP16 inputs, checked on the chosen algorithm; bf16/f16 inputs compute in 32F with no
 * reduced-precision reduction. Split-K reductions that keep state in the workspace are excluded
 * (the workspace is a candidate's scratch, garbage before every run).
 *
 * conv (cuDNN 9 graph API): a forward convolution (cross-correlation) of x [n, c, size...] (or
 * channels last) with w [k, c / groups, kernel...] into y [n, k, out...]; transposed: the data
 * gradient of a forward convolution, w [c, k / groups, kernel...], y's size from output_padding.
 * Engine configurations whose numerical notes say tensor core (TF32 for fp32) or down-converted
 * inputs are left out for fp32; the rest, within the workspace, are the candidates `algo` indexes.
 */

enum { KFORGE_STEP_MATMUL = 1, KFORGE_STEP_CONV = 2 };
enum { KFORGE_EPILOGUE_NONE = 0, KFORGE_EPILOGUE_RELU = 1, KFORGE_EPILOGUE_GELU_TANH = 2 };

typedef struct {
    long long m, n, k, batch;                        /* batch >= 1 */
    long long stride_a, stride_b, stride_c, stride_d; /* elements between batch matrices */
    int transpose_a, transpose_b;
    double alpha, beta;
    int has_c, has_bias;                            /* C is read only when has_c (beta != 0) */
    int epilogue;                                   /* KFORGE_EPILOGUE_* */
    const char* a_dtype;                            /* "f32", "bf16" or "f16" */
    const char* b_dtype;
    const char* c_dtype;                            /* D's when there is no C */
    const char* d_dtype;
    const char* bias_dtype;                         /* D's when there is no bias */
} KforgeMatmulStep;

typedef struct {
    int spatial_dims;                               /* 1, 2 or 3 */
    long long n, c, k, groups;
    long long size[3], kernel[3], stride[3], padding[3], dilation[3], output_padding[3];
    int transposed;                                 /* ConvTranspose: the data gradient */
    int channels_last;                              /* x and y NHWC (NWC, NDHWC); w as in PyTorch either way */
    const char* dtype;                              /* x, w and y: "f32", "bf16" or "f16" */
} KforgeConvStep;

typedef struct {
    int op;                                         /* KFORGE_STEP_MATMUL or KFORGE_STEP_CONV */
    KforgeMatmulStep matmul;                        /* op == KFORGE_STEP_MATMUL */
    KforgeConvStep conv;                            /* op == KFORGE_STEP_CONV */
    long long algo;                                 /* index into the allowed candidates, >= 0 */
    unsigned long long workspace_bytes;             /* the step's workspace buffer; 0: none */
} KforgeStep;

/* Operand addresses of one run (CUdeviceptr values), in this order:
 *   matmul: A, B, C (0 without C), D, bias (0 without a bias), workspace (0 without one)
 *   conv:   x, w, y, workspace (0 without one) */
#define KFORGE_STEP_MATMUL_OPERANDS 6
#define KFORGE_STEP_CONV_OPERANDS 4

/* Writes into `text` the library calls the step makes, with every number derived from it (the
 * column-major translation of a matmul: transposes, m, n, k, leading dimensions, batch strides,
 * epilogue, compute type; a conv's tensor dims and strides, the operation, padding, stride,
 * dilation), e.g. "cublasLtMatmul transa=T transb=N m=512 n=128 k=256 A=b lda=256 B=a ldb=256
 * D=d ldd=512 batch=1 epilogue=RELU_BIAS compute=32F". Checks what can be checked without a GPU:
 * KFORGE_VENDOR_BAD_BINDINGS with the reason for dtypes not allowed together, a dimension out of
 * the library's range, an epilogue the dtype lacks. Needs no GPU. */
KFORGE_VENDOR_API int kforge_vendor_step_describe(const KforgeStep* step, char* text, size_t text_len);

/* Prepares a step in the current context: the descriptors, the heuristic's allowed candidates and
 * the one `algo` picks (KFORGE_VENDOR_NO_ALGORITHM, saying how many there are, when the index is
 * past them; KFORGE_VENDOR_UNAVAILABLE when this build lacks the library). On failure *state is
 * NULL. Not timed; may take milliseconds (a cuDNN execution plan). */
KFORGE_VENDOR_API int kforge_vendor_step_prepare(const KforgeStep* step, void** state, char* error, size_t error_len);

/* What was chosen, for the record: "cuBLASLt algo 21 (tile 128x128, stages 3, no split-K, FMA),
 * 1 of 8 candidates, workspace 0 B" or "cuDNN engine 12 (knobs ...), 3 of 5 allowed configurations".
 * The string lives as long as the state. */
KFORGE_VENDOR_API const char* kforge_vendor_step_chosen(void* state);

/* Enqueues the step on `cu_stream` with the run's operand addresses (`count` of them, in the order
 * above); no synchronization, no allocation. */
KFORGE_VENDOR_API int kforge_vendor_step_run(void* state, const unsigned long long* operands, size_t count,
                                             void* cu_stream, char* error, size_t error_len);

/* Frees a step's descriptors and plan (no synchronization needed: nothing of it is in flight once the
 * stream that ran it is idle). NULL is ignored. */
KFORGE_VENDOR_API void kforge_vendor_step_release(void* state);

/* Runs every kind of step on small generated problems (matmul: each transpose pair, batched and
 * strided, alpha and beta, bias, each epilogue, fp32 and bf16; conv: 1D/2D/3D, stride, padding,
 * dilation, groups, transposed, NCHW and NHWC, fp32), outputs NaN-poisoned first, against a host
 * computation in fp64 under fp32 tolerances, and writes a summary or the first failure. Needs a GPU;
 * for tests. */
KFORGE_VENDOR_API int kforge_vendor_step_selftest(char* report, size_t report_len);

#ifdef __cplusplus
}
#endif

#endif /* KFORGE_VENDOR_H */
