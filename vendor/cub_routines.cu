// The CUB baselines: sum of floats, inclusive scan of uint32 and a 256-bin byte histogram.
//
// CUB is templates, so this is the one file nvcc compiles, and it instantiates exactly one
// dispatch per routine (the CUB headers are included per algorithm, not as cub/cub.cuh, to keep
// the compile short). Each routine asks CUB for its temporary storage size at prepare time,
// allocates it once, and then only enqueues. Reduce and scan take 32-bit item counts (the
// offsets CUB picks for them are 32-bit unsigned, so n < 2^32); the histogram takes a 64-bit
// count, as its task allows n up to 2^32 - 1, and CUB itself narrows it to int when it fits.
#include <climits>
#include <cstdint>
#include <string>

#include <cub/device/device_histogram.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/version.cuh>

#include "vendor_routine.hpp"

namespace kforge::vendor {
namespace {

uint32_t item_count(const Operands& operands)
{
    int64_t n = operands.integer("n");
    if (n < 1 || n > static_cast<int64_t>(UINT32_MAX))
        fail(Status::bad_bindings, operands.routine() + ": n = " + std::to_string(n) + " is outside 1 .. 2^32 - 1");
    return static_cast<uint32_t>(n);
}

// Temporary storage sized by a first call of the CUB algorithm with no storage.
class TempStorage
{
public:
    template <typename Query>
    explicit TempStorage(Query query)
    {
        size_t bytes = 0;
        KF_CUDART_CHECK(query(bytes));
        m_buffer = std::make_unique<DeviceBuffer>(bytes);
    }
    void* get() const { return m_buffer->get(); }
    size_t bytes() const { return m_buffer->bytes(); }

private:
    std::unique_ptr<DeviceBuffer> m_buffer;
};

class CubReduceSum : public VendorRoutine
{
public:
    struct Args {
        explicit Args(const Operands& operands)
            : n(item_count(operands)), x(static_cast<const float*>(operands.tensor("x", "f32", n).ptr)),
              out(static_cast<float*>(operands.tensor("out", "f32", 1).ptr))
        {
        }
        uint32_t n;
        const float* x;
        float* out;
    };
    static std::string describe(const Args& a)
    {
        return "cub::DeviceReduce::Sum in=x out=out n=" + std::to_string(a.n);
    }
    explicit CubReduceSum(const Args& args) : m_args(args), m_temp([this](size_t& bytes) { return sum(nullptr, bytes, nullptr); })
    {
    }
    void run(cudaStream_t stream) override
    {
        size_t bytes = m_temp.bytes();
        KF_CUDART_CHECK(sum(m_temp.get(), bytes, stream));
    }

private:
    cudaError_t sum(void* temp, size_t& bytes, cudaStream_t stream) const
    {
        return cub::DeviceReduce::Sum(temp, bytes, m_args.x, m_args.out, m_args.n, stream);
    }

    Args m_args;
    AttachedContext m_context;
    TempStorage m_temp;
};

class CubInclusiveScan : public VendorRoutine
{
public:
    struct Args {
        explicit Args(const Operands& operands)
            : n(item_count(operands)), in(static_cast<const uint32_t*>(operands.tensor("in", "u32", n).ptr)),
              out(static_cast<uint32_t*>(operands.tensor("out", "u32", n).ptr))
        {
        }
        uint32_t n;
        const uint32_t* in;
        uint32_t* out;
    };
    static std::string describe(const Args& a)
    {
        return "cub::DeviceScan::InclusiveSum in=in out=out n=" + std::to_string(a.n);
    }
    explicit CubInclusiveScan(const Args& args)
        : m_args(args), m_temp([this](size_t& bytes) { return scan(nullptr, bytes, nullptr); })
    {
    }
    void run(cudaStream_t stream) override
    {
        size_t bytes = m_temp.bytes();
        KF_CUDART_CHECK(scan(m_temp.get(), bytes, stream));
    }

private:
    cudaError_t scan(void* temp, size_t& bytes, cudaStream_t stream) const
    {
        return cub::DeviceScan::InclusiveSum(temp, bytes, m_args.in, m_args.out, m_args.n, stream);
    }

    Args m_args;
    AttachedContext m_context;
    TempStorage m_temp;
};

// Levels 0, 1, ..., 256 make bin b the byte value b.
constexpr int k_histogram_levels = 257;

class CubHistogramEven : public VendorRoutine
{
public:
    struct Args {
        explicit Args(const Operands& operands)
            : n(item_count(operands)), data(static_cast<const uint8_t*>(operands.tensor("data", "u8", n).ptr)),
              hist(static_cast<uint32_t*>(operands.tensor("hist", "u32", k_histogram_levels - 1).ptr))
        {
        }
        uint32_t n;
        const uint8_t* data;
        uint32_t* hist;
    };
    static std::string describe(const Args& a)
    {
        return "cub::DeviceHistogram::HistogramEven in=data out=hist levels=" + std::to_string(k_histogram_levels) +
               " lower=0 upper=256 n=" + std::to_string(a.n);
    }
    explicit CubHistogramEven(const Args& args)
        : m_args(args), m_temp([this](size_t& bytes) { return histogram(nullptr, bytes, nullptr); })
    {
    }
    void run(cudaStream_t stream) override
    {
        size_t bytes = m_temp.bytes();
        KF_CUDART_CHECK(histogram(m_temp.get(), bytes, stream));
    }

private:
    cudaError_t histogram(void* temp, size_t& bytes, cudaStream_t stream) const
    {
        return cub::DeviceHistogram::HistogramEven(temp, bytes, m_args.data, m_args.hist, k_histogram_levels, 0, 256,
                                                   static_cast<int64_t>(m_args.n), stream);
    }

    Args m_args;
    AttachedContext m_context;
    TempStorage m_temp;
};

} // namespace

std::unique_ptr<VendorRoutine> make_cub_reduce_sum(const Operands& operands, Mode mode, std::string* call)
{
    return make_routine<CubReduceSum>(operands, mode, call);
}
std::unique_ptr<VendorRoutine> make_cub_inclusive_scan(const Operands& operands, Mode mode, std::string* call)
{
    return make_routine<CubInclusiveScan>(operands, mode, call);
}
std::unique_ptr<VendorRoutine> make_cub_histogram_even(const Operands& operands, Mode mode, std::string* call)
{
    return make_routine<CubHistogramEven>(operands, mode, call);
}

std::string cub_version()
{
    return "CUB " + std::to_string(CUB_MAJOR_VERSION) + "." + std::to_string(CUB_MINOR_VERSION) + "." +
           std::to_string(CUB_SUBMINOR_VERSION);
}

} // namespace kforge::vendor
