// The self-test of libkforge_vendor.so: small problems with host-computed answers.
//
// selftest_problems() builds, for one routine, a few problems at the bundled task's test sizes
// (odd, tiny, one past a tile), with inputs from a fixed seed and the expected outputs computed on
// the host in double precision from the very values the device sees (bf16 inputs rounded first),
// each output with the task's own tolerance. selftest.cpp runs them through the C interface.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kforge::vendor {

struct HostTensor {
    std::string name;
    std::string dtype;               // "f32", "bf16", "u8", "u32", "i32"
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

} // namespace kforge::vendor
