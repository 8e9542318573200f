// Turning a kforge candidate (written for NVRTC) into a file nvcc compiles as is.
//
// Two things differ. kforge compiles with NVRTC's -default-device, under which a function or a
// namespace-scope variable without an execution space is device code; nvcc has no such switch and
// treats it as host code, so a kernel calling an unannotated helper fails to compile. And kforge
// gives candidates a prelude (fixed-width ints, INFINITY, FLT_MAX, fp16/bf16 types); under nvcc the
// toolkit's standard headers provide the same names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge {

struct DeviceAnnotation
{
    std::string source;                 // the input with `__device__ ` inserted where needed
    std::vector<std::string> annotated; // names of what was marked, in source order
};

// Marks as __device__ what -default-device would have made device code: function declarations and
// definitions at namespace scope or inside extern "C" blocks, member functions of classes, and
// namespace-scope variables (except const or constexpr scalars, which nvcc already lets device code
// read). Declarations that name any execution or memory space are left alone, as are comments,
// strings, preprocessor lines, typedefs, using-declarations and the bodies of functions.
DeviceAnnotation annotate_default_device(std::string_view source);

// The #include lines that give nvcc-compiled code the names kforge's NVRTC prelude provides.
std::string nvcc_prelude();

} // namespace kforge
