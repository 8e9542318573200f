// Element access shared by host C++ and kforge's internal device kernels.
//
// This header is compiled twice: by the host compiler (tests, CPU re-computation for debugging) and,
// embedded as text, by NVRTC inside the GPU worker. So it uses only builtin types and arithmetic —
// no CUDA intrinsics, no standard library — and both sides compute the same bits. Element types are
// the codes of kforge::DType (core/dtype.hpp); a static_assert on the host keeps them in sync.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define KF_HD __host__ __device__ __forceinline__
#else
#define KF_HD inline
#include <cmath>
#endif

typedef unsigned long long kf_u64;
typedef long long kf_i64;
typedef unsigned int kf_u32;

enum KfDType {
    KF_F16 = 0, KF_BF16 = 1, KF_F32 = 2, KF_F64 = 3, KF_I8 = 4, KF_U8 = 5,
    KF_I16 = 6, KF_U16 = 7, KF_I32 = 8, KF_U32 = 9, KF_I64 = 10, KF_U64 = 11
};

KF_HD int kf_dtype_size(int dtype)
{
    switch (dtype) {
    case KF_I8: case KF_U8: return 1;
    case KF_F16: case KF_BF16: case KF_I16: case KF_U16: return 2;
    case KF_F32: case KF_I32: case KF_U32: return 4;
    default: return 8;
    }
}

KF_HD int kf_dtype_is_float(int dtype) { return dtype <= KF_F64; }

KF_HD float kf_bits_to_float(kf_u32 bits)
{
    union { kf_u32 u; float f; } v;
    v.u = bits;
    return v.f;
}

KF_HD kf_u32 kf_float_to_bits(float f)
{
    union { kf_u32 u; float f; } v;
    v.f = f;
    return v.u;
}

KF_HD double kf_bits_to_double(kf_u64 bits)
{
    union { kf_u64 u; double d; } v;
    v.u = bits;
    return v.d;
}

KF_HD kf_u64 kf_double_to_bits(double d)
{
    union { kf_u64 u; double d; } v;
    v.d = d;
    return v.u;
}

KF_HD int kf_is_nan(double x)
{
    kf_u64 b = kf_double_to_bits(x);
    return ((b >> 52) & 0x7ff) == 0x7ff && (b & 0xfffffffffffffULL) != 0;
}

KF_HD int kf_is_inf(double x)
{
    kf_u64 b = kf_double_to_bits(x);
    return ((b >> 52) & 0x7ff) == 0x7ff && (b & 0xfffffffffffffULL) == 0;
}

KF_HD double kf_abs(double x) { return x < 0 ? -x : x; }

// Round-to-nearest-even float -> bf16, NaN kept NaN.
KF_HD unsigned short kf_float_to_bf16(float f)
{
    kf_u32 u = kf_float_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (unsigned short)((u >> 16) | 0x40);
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

KF_HD float kf_bf16_to_float(unsigned short h) { return kf_bits_to_float(((kf_u32)h) << 16); }

// Round-to-nearest-even float -> IEEE half, with subnormals, overflow to inf and NaN.
KF_HD unsigned short kf_float_to_f16(float f)
{
    kf_u32 u = kf_float_to_bits(f);
    kf_u32 sign = (u >> 16) & 0x8000u;
    kf_u32 abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u)
        return (unsigned short)(sign | 0x7e00u);
    if (abs >= 0x477ff000u) // rounds to >= 65520: infinity
        return (unsigned short)(sign | 0x7c00u);
    if (abs < 0x38800000u) { // below the smallest normal half: subnormal or zero
        if (abs < 0x33000000u)
            return (unsigned short)sign;
        kf_u32 exp = abs >> 23;
        kf_u32 mant = (abs & 0x7fffffu) | 0x800000u;
        kf_u32 shift = 126 - exp; // 14 + (112 - exp) ... aligns to the half subnormal scale
        kf_u32 value = mant >> shift;
        kf_u32 rest = mant & ((1u << shift) - 1u);
        kf_u32 half = 1u << (shift - 1);
        if (rest > half || (rest == half && (value & 1u)))
            ++value;
        return (unsigned short)(sign | value);
    }
    kf_u32 value = ((abs - 0x38000000u) >> 13);
    kf_u32 rest = abs & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (value & 1u)))
        ++value;
    return (unsigned short)(sign | value);
}

KF_HD float kf_f16_to_float(unsigned short h)
{
    kf_u32 sign = ((kf_u32)h & 0x8000u) << 16;
    kf_u32 exp = ((kf_u32)h >> 10) & 0x1fu;
    kf_u32 mant = (kf_u32)h & 0x3ffu;
    if (exp == 0x1fu)
        return kf_bits_to_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0)
            return kf_bits_to_float(sign);
        // Subnormal: value = mant * 2^-24.
        float v = (float)mant * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return kf_bits_to_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

// Raw bits of element `i` (zero-extended).
KF_HD kf_u64 kf_load_bits(const void* base, int dtype, kf_u64 i)
{
    switch (kf_dtype_size(dtype)) {
    case 1: return ((const unsigned char*)base)[i];
    case 2: return ((const unsigned short*)base)[i];
    case 4: return ((const kf_u32*)base)[i];
    default: return ((const kf_u64*)base)[i];
    }
}

KF_HD void kf_store_bits(void* base, int dtype, kf_u64 i, kf_u64 bits)
{
    switch (kf_dtype_size(dtype)) {
    case 1: ((unsigned char*)base)[i] = (unsigned char)bits; break;
    case 2: ((unsigned short*)base)[i] = (unsigned short)bits; break;
    case 4: ((kf_u32*)base)[i] = (kf_u32)bits; break;
    default: ((kf_u64*)base)[i] = bits; break;
    }
}

// The value of an element of any type as a double (integers of 64 bits may round).
KF_HD double kf_bits_to_value(kf_u64 bits, int dtype)
{
    switch (dtype) {
    case KF_F16: return kf_f16_to_float((unsigned short)bits);
    case KF_BF16: return kf_bf16_to_float((unsigned short)bits);
    case KF_F32: return kf_bits_to_float((kf_u32)bits);
    case KF_F64: return kf_bits_to_double(bits);
    case KF_I8: return (double)(signed char)bits;
    case KF_U8: return (double)(unsigned char)bits;
    case KF_I16: return (double)(short)bits;
    case KF_U16: return (double)(unsigned short)bits;
    case KF_I32: return (double)(int)bits;
    case KF_U32: return (double)(kf_u32)bits;
    case KF_I64: return (double)(kf_i64)bits;
    default: return (double)bits;
    }
}

// The bits of `value` stored as `dtype` (round to nearest for floats, truncation toward zero and
// wrap-around for integers).
KF_HD kf_u64 kf_value_to_bits(double value, int dtype)
{
    switch (dtype) {
    case KF_F16: return kf_float_to_f16((float)value);
    case KF_BF16: return kf_float_to_bf16((float)value);
    case KF_F32: return kf_float_to_bits((float)value);
    case KF_F64: return kf_double_to_bits(value);
    default: {
        kf_i64 v = (kf_i64)value;
        return (kf_u64)v;
    }
    }
}
