// Element types of task arguments.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kforge {

enum class DType { f16, bf16, f32, f64, i8, u8, i16, u16, i32, u32, i64, u64 };

// "f32", "bf16", ... (the spelling used in task specs).
std::string_view dtype_name(DType type);
std::optional<DType> parse_dtype(std::string_view name);
// The list accepted by parse_dtype, for error messages.
std::string dtype_names();
size_t dtype_size(DType type);
bool dtype_is_float(DType type);
bool dtype_is_signed(DType type);
// The CUDA C++ spelling used in prompts and exported code: float, __nv_bfloat16, uint32_t, ...
std::string_view dtype_cuda_name(DType type);

} // namespace kforge
