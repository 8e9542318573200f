// The self-test of libkforge_vendor.so: small problems with host-computed answers.
//
// selftest_problems() builds, for one routine, a few problems at the bundled task's test sizes
// (odd, tiny, one past a tile), with inputs from a fixed seed and the expected outputs computed on
// the host in double precision from the very values the device sees (bf16 inputs rounded first),
// each output with the task's own tolerance. selftest.cpp runs them through the C interface.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

namespace kforge::vendor {

struct HostTensor {
    std::string name;
    std::string dtype;               // "f32", "bf16", "f16", "u8", "u32", "i32"
    uint64_t count = 0;
    std::vector<uint8_t> data;       // inputs: the contents; outputs: empty
    bool is_output = false;
    std::vector<double> expected;    // outputs: the host result
    double atol = 0, rtol = 0;       // allclose: |got - expected| <= atol + rtol * |expected|
    bool exact = false;              // exact: bit-for-bit (integers, moved floats)
    uint64_t row_length = 0;         // > 0: print mismatches as [row, column]
};

struct HostValue {
    std::string name;
    int64_t int_value = 0;
    double real_value = 0;
};

struct Problem {
    std::string label;               // "M=48,N=80,K=112"
    std::vector<HostTensor> tensors;
    std::vector<HostValue> values;
};

// Bytes of one element of a dtype used by the routines; 0 for others.
size_t element_bytes(const std::string& dtype);
// The problems for `routine`; empty for an unknown name.
std::vector<Problem> selftest_problems(const std::string& routine);

// ---- Shared by the routines' and the library steps' self-tests ----

// A fixed-seed generator (splitmix64), so every run tests the same values.
class Rng
{
public:
    explicit Rng(uint64_t seed) : m_state(seed) {}
    uint64_t next();
    // Uniform on [low, high), rounded to fp32.
    float uniform(double low, double high);

private:
    uint64_t m_state;
};

std::vector<float> uniform_floats(Rng& rng, size_t count, double low, double high);

// fp32 <-> bf16 and f16, rounding to nearest even.
uint16_t to_bf16(float value);
float from_bf16(uint16_t bits);
uint16_t to_f16(float value);
float from_f16(uint16_t bits);

// An input tensor holding `values` as bytes.
template <typename T>
HostTensor host_input(const std::string& name, const std::string& dtype, const std::vector<T>& values)
{
    HostTensor t{name, dtype, values.size(), {}, false, {}, 0, 0, false, 0};
    t.data.resize(values.size() * sizeof(T));
    std::memcpy(t.data.data(), values.data(), t.data.size());
    return t;
}

// An output compared with allclose(atol, rtol) against `expected`.
HostTensor host_output(const std::string& name, const std::string& dtype, std::vector<double> expected, double atol,
                       double rtol, uint64_t row_length = 0);

// The element at `bytes` of a tensor of `dtype`, as a double.
double decode_element(const std::string& dtype, const uint8_t* bytes);

// "" when `got` (the output's bytes) matches the tensor's expected values; otherwise the number of
// mismatches and the first, with its index, the expected and the actual value and the rule.
std::string compare_output(const HostTensor& t, const std::vector<uint8_t>& got);

// Throws a VendorFailure with `status` and "where: error" unless status is KFORGE_VENDOR_OK.
void check_call(int status, const char* error, const std::string& where);

// A stream of the runtime, destroyed at scope exit.
class SelftestStream
{
public:
    SelftestStream();
    ~SelftestStream();
    SelftestStream(const SelftestStream&) = delete;
    SelftestStream& operator=(const SelftestStream&) = delete;
    cudaStream_t get() const { return m_stream; }

private:
    cudaStream_t m_stream = nullptr;
};

} // namespace kforge::vendor
