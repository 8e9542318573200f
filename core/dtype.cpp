// Element-type table.
#include "core/dtype.hpp"

#include <array>

namespace kforge {
namespace {
struct DTypeInfo {
    DType type;
    std::string_view name;
    size_t size;
    bool is_float;
    bool is_signed;
    std::string_view cuda;
};
constexpr std::array<DTypeInfo, 12> k_dtypes{{
    {DType::f16, "f16", 2, true, true, "__half"},
    {DType::bf16, "bf16", 2, true, true, "__nv_bfloat16"},
    {DType::f32, "f32", 4, true, true, "float"},
    {DType::f64, "f64", 8, true, true, "double"},
    {DType::i8, "i8", 1, false, true, "int8_t"},
    {DType::u8, "u8", 1, false, false, "uint8_t"},
    {DType::i16, "i16", 2, false, true, "int16_t"},
    {DType::u16, "u16", 2, false, false, "uint16_t"},
    {DType::i32, "i32", 4, false, true, "int32_t"},
    {DType::u32, "u32", 4, false, false, "uint32_t"},
    {DType::i64, "i64", 8, false, true, "int64_t"},
    {DType::u64, "u64", 8, false, false, "uint64_t"},
}};
const DTypeInfo& info(DType type) { return k_dtypes[static_cast<size_t>(type)]; }
} // namespace

std::string_view dtype_name(DType type) { return info(type).name; }
size_t dtype_size(DType type) { return info(type).size; }
bool dtype_is_float(DType type) { return info(type).is_float; }
bool dtype_is_signed(DType type) { return info(type).is_signed; }
std::string_view dtype_cuda_name(DType type) { return info(type).cuda; }

std::optional<DType> parse_dtype(std::string_view name)
{
    for (const auto& entry : k_dtypes)
        if (entry.name == name)
            return entry.type;
    return std::nullopt;
}

std::string dtype_names()
{
    std::string out;
    for (const auto& entry : k_dtypes)
        out += (out.empty() ? "" : ", ") + std::string(entry.name);
    return out;
}

} // namespace kforge
