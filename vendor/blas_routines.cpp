// The cuBLAS baselines: sgemm, bf16 gemm, saxpy and the geam transpose.
//
// kforge's tensors are row-major and cuBLAS is column-major. A row-major R x C matrix is, byte for
// byte, the column-major C x R matrix (its transpose) with leading dimension C, so each row-major
// product is computed as the column-major product of the transposes, with the operands swapped
// (C^T = B^T A^T); kforge_vendor.h spells out each call. Every routine owns its handle and a
// workspace allocated at prepare time; cublasSetStream resets the workspace to cuBLAS's own pool,
// so run() sets the stream and then the workspace again (both are host-side bookkeeping).
#include <cublas_v2.h>
#include <fmt/format.h>

#include "vendor_routine.hpp"

namespace kforge::vendor {
namespace {

// cuBLAS's recommendation for Hopper (smaller GPUs need 4 MiB; more does no harm).
constexpr size_t k_cublas_workspace_bytes = size_t{32} << 20;

#define KF_CUBLAS_CHECK(call)                                                                      \
    do {                                                                                           \
        cublasStatus_t kf_status_ = (call);                                                        \
        if (kf_status_ != CUBLAS_STATUS_SUCCESS)                                                   \
            ::kforge::vendor::fail_cuda_call(#call, __FILE__, __LINE__,                            \
                                             fmt::format("{} ({})", cublasGetStatusName(kf_status_), \
                                                         cublasGetStatusString(kf_status_)));      \
    } while (0)

// A cuBLAS handle with its math mode and a workspace of its own.
class CublasSession
{
public:
    explicit CublasSession(cublasMath_t mode) : m_workspace(k_cublas_workspace_bytes)
    {
        KF_CUBLAS_CHECK(cublasCreate(&m_handle));
        try {
            KF_CUBLAS_CHECK(cublasSetMathMode(m_handle, mode));
            KF_CUBLAS_CHECK(cublasSetPointerMode(m_handle, CUBLAS_POINTER_MODE_HOST));
        } catch (...) {
            cublasDestroy(m_handle);
            throw;
        }
    }
    ~CublasSession()
    {
        if (m_handle)
            cublasDestroy(m_handle);
    }
    CublasSession(const CublasSession&) = delete;
    CublasSession& operator=(const CublasSession&) = delete;

    // The handle, bound to `stream` and to this session's workspace.
    cublasHandle_t on(cudaStream_t stream)
    {
        KF_CUBLAS_CHECK(cublasSetStream(m_handle, stream));
        KF_CUBLAS_CHECK(cublasSetWorkspace(m_handle, m_workspace.get(), m_workspace.bytes()));
        return m_handle;
    }

private:
    AttachedContext m_context; // first: the context is checked before anything is allocated
    DeviceBuffer m_workspace;
    cublasHandle_t m_handle = nullptr;
};

uint64_t product(int x, int y) { return static_cast<uint64_t>(x) * static_cast<uint64_t>(y); }

const char* op_name(cublasOperation_t op) { return op == CUBLAS_OP_N ? "N" : "T"; }

// B is K x N (sgemm) or N x K (the bf16 "TN" gemm), row-major either way.
enum class BShape { k_by_n, n_by_k };

struct GemmArgs {
    GemmArgs(const Operands& operands, const std::string& dtype, BShape b_shape)
        : m(operands.positive_int("M", operands.integer("M"))), n(operands.positive_int("N", operands.integer("N"))),
          k(operands.positive_int("K", operands.integer("K"))), a(operands.tensor("A", dtype, product(m, k))),
          b(operands.tensor("B", dtype, b_shape == BShape::n_by_k ? product(n, k) : product(k, n))),
          c(operands.tensor("C", dtype, product(m, n)))
    {
    }
    int m, n, k;
    TensorOperand a, b, c;
};

// The column-major cublasGemmEx operands a row-major product maps to: C^T = op(B)^T op(A)^T, so
// cuBLAS's A is the task's B and cuBLAS's B the task's A. run() passes exactly these values and
// describe() prints them, so the CPU tests check the very call that is made.
struct GemmCall {
    cublasOperation_t op_a, op_b;
    int m, n, k;
    const TensorOperand* a;
    int lda;
    const TensorOperand* b;
    int ldb;
    const TensorOperand* c;
    int ldc;
    std::string describe() const
    {
        return fmt::format("cublasGemmEx transa={} transb={} m={} n={} k={} A={} lda={} B={} ldb={} C={} ldc={} "
                           "alpha=1 beta=0",
                           op_name(op_a), op_name(op_b), m, n, k, a->name, lda, b->name, ldb, c->name, ldc);
    }
};

// Row-major C (M x N) = A (M x K) * B (K x N), fp32, no TF32.
class CublasSgemm : public VendorRoutine
{
public:
    struct Args : GemmArgs {
        explicit Args(const Operands& operands) : GemmArgs(operands, "f32", BShape::k_by_n) {}
        // B is N-contiguous (ld N) and A K-contiguous (ld K); both untransposed in column-major terms.
        GemmCall call() const { return GemmCall{CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &b, n, &a, k, &c, n}; }
    };
    static std::string describe(const Args& args) { return args.call().describe(); }
    explicit CublasSgemm(const Args& args) : m_args(args), m_session(CUBLAS_DEFAULT_MATH) {}
    void run(cudaStream_t stream) override
    {
        const float alpha = 1.0f, beta = 0.0f;
        GemmCall g = m_args.call();
        KF_CUBLAS_CHECK(cublasGemmEx(m_session.on(stream), g.op_a, g.op_b, g.m, g.n, g.k, &alpha, g.a->ptr, CUDA_R_32F,
                                     g.lda, g.b->ptr, CUDA_R_32F, g.ldb, &beta, g.c->ptr, CUDA_R_32F, g.ldc,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }

private:
    Args m_args;
    CublasSession m_session;
};

// Row-major C (M x N) = A (M x K) * B^T with B (N x K), bf16 operands, fp32 accumulation.
class CublasGemmBf16 : public VendorRoutine
{
public:
    struct Args : GemmArgs {
        explicit Args(const Operands& operands) : GemmArgs(operands, "bf16", BShape::n_by_k) {}
        // B (N x K row-major) is the column-major K x N matrix, transposed to N x K; ld K.
        GemmCall call() const { return GemmCall{CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &b, k, &a, k, &c, n}; }
    };
    static std::string describe(const Args& args) { return args.call().describe(); }
    explicit CublasGemmBf16(const Args& args)
        : m_args(args),
          m_session(static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION))
    {
    }
    void run(cudaStream_t stream) override
    {
        const float alpha = 1.0f, beta = 0.0f;
        GemmCall g = m_args.call();
        KF_CUBLAS_CHECK(cublasGemmEx(m_session.on(stream), g.op_a, g.op_b, g.m, g.n, g.k, &alpha, g.a->ptr, CUDA_R_16BF,
                                     g.lda, g.b->ptr, CUDA_R_16BF, g.ldb, &beta, g.c->ptr, CUDA_R_16BF, g.ldc,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }

private:
    Args m_args;
    CublasSession m_session;
};

// z = a x + y out of place: stage copies y into z, run is the in-place saxpy on z.
class CublasSaxpy : public VendorRoutine
{
public:
    struct Args {
        explicit Args(const Operands& operands)
            : n(operands.positive_int("n", operands.integer("n"))), a(static_cast<float>(operands.real("a"))),
              x(operands.tensor("x", "f32", static_cast<uint64_t>(n))),
              y(operands.tensor("y", "f32", static_cast<uint64_t>(n))),
              z(operands.tensor("z", "f32", static_cast<uint64_t>(n)))
        {
        }
        int n;
        float a;
        TensorOperand x, y, z;
    };
    static std::string describe(const Args& args)
    {
        return fmt::format("cudaMemcpyAsync dst={} src={} bytes={}; cublasSaxpy n={} alpha={} x={} incx=1 y={} incy=1",
                           args.z.name, args.y.name, static_cast<size_t>(args.n) * sizeof(float), args.n, args.a,
                           args.x.name, args.z.name);
    }
    explicit CublasSaxpy(const Args& args) : m_args(args), m_session(CUBLAS_DEFAULT_MATH) {}
    void stage(cudaStream_t stream) override
    {
        KF_CUDART_CHECK(cudaMemcpyAsync(m_args.z.ptr, m_args.y.ptr, static_cast<size_t>(m_args.n) * sizeof(float),
                                        cudaMemcpyDeviceToDevice, stream));
    }
    void run(cudaStream_t stream) override
    {
        KF_CUBLAS_CHECK(cublasSaxpy(m_session.on(stream), m_args.n, &m_args.a, static_cast<const float*>(m_args.x.ptr),
                                    1, static_cast<float*>(m_args.z.ptr), 1));
    }

private:
    Args m_args;
    CublasSession m_session;
};

// The cublasSgeam operands of out = in^T: in (M x N row-major) is column-major N x M with ld N,
// transposed to M x N; out (N x M row-major) is column-major M x N with ld M. B is scaled by 0 and
// points at `in` (finite, in bounds) rather than at the NaN-poisoned output.
struct GeamCall {
    cublasOperation_t op_a, op_b;
    int m, n;
    const TensorOperand* a;
    int lda;
    const TensorOperand* b;
    int ldb;
    const TensorOperand* c;
    int ldc;
    std::string describe() const
    {
        return fmt::format("cublasSgeam transa={} transb={} m={} n={} alpha=1 A={} lda={} beta=0 B={} ldb={} C={} ldc={}",
                           op_name(op_a), op_name(op_b), m, n, a->name, lda, b->name, ldb, c->name, ldc);
    }
};

// out (N x M) = in (M x N)^T, both row-major.
class CublasGeamTranspose : public VendorRoutine
{
public:
    struct Args {
        explicit Args(const Operands& operands)
            : rows(operands.positive_int("M", operands.integer("M"))), cols(operands.positive_int("N", operands.integer("N"))),
              in(operands.tensor("in", "f32", product(rows, cols))),
              out(operands.tensor("out", "f32", product(rows, cols)))
        {
        }
        GeamCall call() const { return GeamCall{CUBLAS_OP_T, CUBLAS_OP_N, rows, cols, &in, cols, &in, rows, &out, rows}; }
        int rows, cols;
        TensorOperand in, out;
    };
    static std::string describe(const Args& args) { return args.call().describe(); }
    explicit CublasGeamTranspose(const Args& args) : m_args(args), m_session(CUBLAS_DEFAULT_MATH) {}
    void run(cudaStream_t stream) override
    {
        const float alpha = 1.0f, beta = 0.0f;
        GeamCall g = m_args.call();
        KF_CUBLAS_CHECK(cublasSgeam(m_session.on(stream), g.op_a, g.op_b, g.m, g.n, &alpha,
                                    static_cast<const float*>(g.a->ptr), g.lda, &beta, static_cast<const float*>(g.b->ptr),
                                    g.ldb, static_cast<float*>(g.c->ptr), g.ldc));
    }

private:
    Args m_args;
    CublasSession m_session;
};

} // namespace

std::unique_ptr<VendorRoutine> make_cublas_sgemm(const Operands& operands, Mode mode, std::string* call)
{
    return make_routine<CublasSgemm>(operands, mode, call);
}
std::unique_ptr<VendorRoutine> make_cublas_gemm_bf16(const Operands& operands, Mode mode, std::string* call)
{
    return make_routine<CublasGemmBf16>(operands, mode, call);
}
std::unique_ptr<VendorRoutine> make_cublas_saxpy(const Operands& operands, Mode mode, std::string* call)
{
    return make_routine<CublasSaxpy>(operands, mode, call);
}
std::unique_ptr<VendorRoutine> make_cublas_geam_transpose(const Operands& operands, Mode mode, std::string* call)
{
    return make_routine<CublasGeamTranspose>(operands, mode, call);
}

std::string cublas_version()
{
    int major = 0, minor = 0, patch = 0;
    if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
        cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
        cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS)
        return "cuBLAS (version unknown)";
    return fmt::format("cuBLAS {}.{}.{}", major, minor, patch);
}

} // namespace kforge::vendor
