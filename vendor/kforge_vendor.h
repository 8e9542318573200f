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
#define KFORGE_VENDOR_ABI_VERSION 2 /* 2: kforge_vendor_describe */

enum {
    KFORGE_VENDOR_OK = 0,
    KFORGE_VENDOR_UNAVAILABLE = 1,  /* unknown name, or this build lacks the library it needs */
    KFORGE_VENDOR_BAD_BINDINGS = 2, /* an operand is missing or has the wrong dtype or size */
    KFORGE_VENDOR_LIBRARY_ERROR = 3, /* a CUDA runtime, cuBLAS, cuSPARSE or CUB call failed */
    KFORGE_VENDOR_MISMATCH = 4      /* kforge_vendor_selftest: the result is wrong */
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

#ifdef __cplusplus
}
#endif

#endif /* KFORGE_VENDOR_H */
