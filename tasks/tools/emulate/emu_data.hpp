// The emulator's data side (emu_data.cpp): host buffers guarded by canaries, a task's inputs drawn
// as tasks/README.md's generators describe, an fp64 ground truth written independently of the
// CUDA references, and the check of an output against it with the task's own tolerance.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/task.hpp"

using namespace kforge;

// Canary bytes on each side of every buffer: 64 KiB, the GPU worker's guard band
// (evaluator/worker/workspace.hpp), so a stray write the GPU would see is seen here too.
constexpr size_t k_canary = 64 * 1024;
struct Buffer {
    std::vector<unsigned char> bytes;   // canary + data + canary
    DType dtype = DType::u8;
    int64_t count = 0;
    unsigned char* data() { return bytes.data() + k_canary; }
    size_t size() const { return dtype_size(dtype); }
};

Buffer make_buffer(DType dtype, int64_t count, unsigned char fill);
// False when a write strayed outside the buffer's data.
bool canaries_intact(const Buffer& b);
// One element at `p` read as `dtype`, as a double; `v` stored at `p` as `dtype` (rounded to nearest
// even, once for f16; bf16 through fp32, as a GPU rounds an fp32 accumulator). A scratch buffer is
// u8 to the plan, so library steps read and write it in the step operand's own dtype.
double load_element(const unsigned char* p, DType dtype);
void store_element(unsigned char* p, DType dtype, double v);
// Every element of `b` as a double.
std::vector<double> buffer_values(Buffer& b);
std::map<std::string, Buffer> make_inputs(const Task& task, const Shape& shape, uint64_t seed);
// The task's output computed in fp64 from `in`; throws std::runtime_error for a task it does not know.
std::vector<double> ground_truth(const Task& task, const Shape& shape, std::map<std::string, Buffer>& in);

struct CheckResult {
    bool ok = true;
    double worst = 0;   // max |got - ref| / (atol + rtol |ref|), or mismatches for exact
    std::string first;
};

CheckResult check_output(const Task& task, const Shape& shape, const ArgSpec& out, Buffer& got,
                         const std::vector<double>& truth, std::map<std::string, Buffer>& inputs);
