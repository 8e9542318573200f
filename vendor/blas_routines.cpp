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

// Row-major C (M x N) = A (M x K) * B (K x N), fp32, no TF32.
class CublasSgemm : public VendorRoutine
{
public:
    struct Args : GemmArgs {
        explicit Args(const Operands& operands) : GemmArgs(operands, "f32", BShape::k_by_n) {}
    };
    explicit CublasSgemm(const Args& args) : m_args(args), m_session(CUBLAS_DEFAULT_MATH) {}
    void run(cudaStream_t stream) override
    {
        const float alpha = 1.0f, beta = 0.0f;
        const Args& g = m_args;
        KF_CUBLAS_CHECK(cublasGemmEx(m_session.on(stream), CUBLAS_OP_N, CUBLAS_OP_N, g.n, g.m, g.k, &alpha, g.b.ptr,
                                     CUDA_R_32F, g.n, g.a.ptr, CUDA_R_32F, g.k, &beta, g.c.ptr, CUDA_R_32F, g.n,
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
    };
    explicit CublasGemmBf16(const Args& args)
        : m_args(args),
          m_session(static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION))
    {
    }
    void run(cudaStream_t stream) override
    {
        const float alpha = 1.0f, beta = 0.0f;
        const Args& g = m_args;
        KF_CUBLAS_CHECK(cublasGemmEx(m_session.on(stream), CUBLAS_OP_T, CUBLAS_OP_N, g.n, g.m, g.k, &alpha, g.b.ptr,
                                     CUDA_R_16BF, g.k, g.a.ptr, CUDA_R_16BF, g.k, &beta, g.c.ptr, CUDA_R_16BF, g.n,
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
        int rows, cols;
        TensorOperand in, out;
    };
    explicit CublasGeamTranspose(const Args& args) : m_args(args), m_session(CUBLAS_DEFAULT_MATH) {}
    void run(cudaStream_t stream) override
    {
        const float alpha = 1.0f, beta = 0.0f;
        const auto* in = static_cast<const float*>(m_args.in.ptr);
        KF_CUBLAS_CHECK(cublasSgeam(m_session.on(stream), CUBLAS_OP_T, CUBLAS_OP_N, m_args.rows, m_args.cols, &alpha, in,
                                    m_args.cols, &beta, in, m_args.rows, static_cast<float*>(m_args.out.ptr),
                                    m_args.rows));
    }

private:
    Args m_args;
    CublasSession m_session;
};

} // namespace

std::unique_ptr<VendorRoutine> make_cublas_sgemm(const Operands& operands, Mode mode)
{
    return make_routine<CublasSgemm>(operands, mode);
}
std::unique_ptr<VendorRoutine> make_cublas_gemm_bf16(const Operands& operands, Mode mode)
{
    return make_routine<CublasGemmBf16>(operands, mode);
}
std::unique_ptr<VendorRoutine> make_cublas_saxpy(const Operands& operands, Mode mode)
{
    return make_routine<CublasSaxpy>(operands, mode);
}
std::unique_ptr<VendorRoutine> make_cublas_geam_transpose(const Operands& operands, Mode mode)
{
    return make_routine<CublasGeamTranspose>(operands, mode);
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
