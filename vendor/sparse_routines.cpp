// The cuSPARSE baseline: y = A x with A in CSR form (32-bit indices, zero-based, fp32 values).
//
// The sizes come from the tensors themselves, as the CSR generator defines them (R is the row
// pointer's count minus one, NNZ the column index's count, C the length of x); size values the
// task passes must agree. Descriptors hold addresses only, and no analysis of the sparsity pattern
// is kept (cusparseSpMV_preprocess is not used), because the evaluator regenerates the matrix for
// every input trial while the buffers stay where they are.
#include <cusparse.h>
#include <fmt/format.h>

#include "vendor_routine.hpp"

namespace kforge::vendor {
namespace {

#define KF_CUSPARSE_CHECK(call)                                                                    \
    do {                                                                                           \
        cusparseStatus_t kf_status_ = (call);                                                      \
        if (kf_status_ != CUSPARSE_STATUS_SUCCESS)                                                 \
            ::kforge::vendor::fail_cuda_call(#call, __FILE__, __LINE__,                            \
                                             fmt::format("{} ({})", cusparseGetErrorName(kf_status_), \
                                                         cusparseGetErrorString(kf_status_)));     \
    } while (0)

int64_t size_from(const Operands& operands, const std::string& symbol, uint64_t from_tensor, const std::string& how)
{
    auto size = static_cast<int64_t>(from_tensor);
    if (operands.has_value(symbol) && operands.integer(symbol) != size)
        fail(Status::bad_bindings, fmt::format("{}: {} = {} but {} gives {}", operands.routine(), symbol,
                                               operands.integer(symbol), how, size));
    return size;
}

class CusparseSpmvCsr : public VendorRoutine
{
public:
    struct Args {
        explicit Args(const Operands& operands)
            : row_ptr(operands.tensor("row_ptr", "i32")), col_idx(operands.tensor("col_idx", "i32")),
              x(operands.tensor("x", "f32")), rows(size_from(operands, "R", row_ptr.count - 1, "row_ptr's length - 1")),
              cols(size_from(operands, "C", x.count, "x's length")),
              nnz(size_from(operands, "NNZ", col_idx.count, "col_idx's length")),
              vals(operands.tensor("vals", "f32", col_idx.count)), y(operands.tensor("y", "f32", row_ptr.count - 1))
        {
            if (rows < 1)
                fail(Status::bad_bindings, operands.routine() + ": row_ptr needs at least 2 elements");
        }
        TensorOperand row_ptr, col_idx, x;
        int64_t rows, cols, nnz;
        TensorOperand vals, y;
    };
    static std::string describe(const Args& a)
    {
        return fmt::format("cudaMemsetAsync dst={} bytes={}; cusparseCreateConstCsr rows={} cols={} nnz={} row_ptr={} "
                           "col_idx={} vals={} index=32I base=0; cusparseSpMV op=N alpha=1 x={} beta=0 y={} "
                           "alg=default",
                           a.y.name, static_cast<size_t>(a.rows) * sizeof(float), a.rows, a.cols, a.nnz,
                           a.row_ptr.name, a.col_idx.name, a.vals.name, a.x.name, a.y.name);
    }
    explicit CusparseSpmvCsr(const Args& args) : m_args(args)
    {
        attach_to_primary_context();
        try {
            create();
        } catch (...) {
            destroy();
            throw;
        }
    }
    ~CusparseSpmvCsr() override { destroy(); }
    CusparseSpmvCsr(const CusparseSpmvCsr&) = delete;
    CusparseSpmvCsr& operator=(const CusparseSpmvCsr&) = delete;

    void stage(cudaStream_t stream) override
    {
        KF_CUDART_CHECK(cudaMemsetAsync(m_args.y.ptr, 0, static_cast<size_t>(m_args.rows) * sizeof(float), stream));
    }
    void run(cudaStream_t stream) override
    {
        KF_CUSPARSE_CHECK(cusparseSetStream(m_handle, stream));
        KF_CUSPARSE_CHECK(cusparseSpMV(m_handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &m_alpha, m_matrix, m_vec_x,
                                       &m_beta, m_vec_y, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, m_buffer->get()));
    }

private:
    void create()
    {
        KF_CUSPARSE_CHECK(cusparseCreate(&m_handle));
        const Args& a = m_args;
        KF_CUSPARSE_CHECK(cusparseCreateConstCsr(&m_matrix, a.rows, a.cols, a.nnz, a.row_ptr.ptr, a.col_idx.ptr,
                                                 a.vals.ptr, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                                 CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
        KF_CUSPARSE_CHECK(cusparseCreateConstDnVec(&m_vec_x, a.cols, a.x.ptr, CUDA_R_32F));
        KF_CUSPARSE_CHECK(cusparseCreateDnVec(&m_vec_y, a.rows, a.y.ptr, CUDA_R_32F));
        size_t bytes = 0;
        KF_CUSPARSE_CHECK(cusparseSpMV_bufferSize(m_handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &m_alpha, m_matrix,
                                                  m_vec_x, &m_beta, m_vec_y, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT,
                                                  &bytes));
        m_buffer = std::make_unique<DeviceBuffer>(bytes);
    }
    void destroy()
    {
        if (m_vec_y)
            cusparseDestroyDnVec(m_vec_y);
        if (m_vec_x)
            cusparseDestroyDnVec(m_vec_x);
        if (m_matrix)
            cusparseDestroySpMat(m_matrix);
        if (m_handle)
            cusparseDestroy(m_handle);
        m_vec_y = nullptr;
        m_vec_x = nullptr;
        m_matrix = nullptr;
        m_handle = nullptr;
    }

    Args m_args;
    const float m_alpha = 1.0f, m_beta = 0.0f;
    cusparseHandle_t m_handle = nullptr;
    cusparseConstSpMatDescr_t m_matrix = nullptr;
    cusparseConstDnVecDescr_t m_vec_x = nullptr;
    cusparseDnVecDescr_t m_vec_y = nullptr;
    std::unique_ptr<DeviceBuffer> m_buffer;
};

} // namespace

std::unique_ptr<VendorRoutine> make_cusparse_spmv_csr(const Operands& operands, Mode mode, std::string* call)
{
    return make_routine<CusparseSpmvCsr>(operands, mode, call);
}

std::string cusparse_version()
{
    int major = 0, minor = 0, patch = 0;
    if (cusparseGetProperty(MAJOR_VERSION, &major) != CUSPARSE_STATUS_SUCCESS ||
        cusparseGetProperty(MINOR_VERSION, &minor) != CUSPARSE_STATUS_SUCCESS ||
        cusparseGetProperty(PATCH_LEVEL, &patch) != CUSPARSE_STATUS_SUCCESS)
        return "cuSPARSE (version unknown)";
    return fmt::format("cuSPARSE {}.{}.{}", major, minor, patch);
}

} // namespace kforge::vendor
