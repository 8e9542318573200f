// The candidate prelude and the standard-library shims (see prelude.hpp).
//
// The prelude takes the fixed-width integers and the integer limits from the toolkit's own
// <cuda/std/cstdint> (cheap: it defines them directly under NVRTC), so a candidate that also
// includes a <cuda/std/...> header sees identical typedefs and macros rather than a redefinition.
// The floating-point limits and INFINITY/NAN are written out here: CCCL defines none of <cfloat>
// under NVRTC, and its INFINITY needs <cuda/std/limits>, which would cost every compile a tenth of
// a second. __builtin_bit_cast keeps INFINITY and NAN constant expressions. When a candidate pulls
// in <cuda/std/cmath> (cub does), CCCL redefines INFINITY and NAN its own way; the warning that
// causes is about kforge's text, not the candidate's, so the log filter drops it (nvrtc_log.cpp).
#include "evaluator/compile/prelude.hpp"

#include "evaluator/compile/compile.hpp"

namespace kforge {

namespace {

constexpr const char* k_prelude = R"(// kforge prelude: seen before the first line of every candidate. NVRTC has no C++ standard
// library; everything below is available without any #include.
#ifndef KFORGE_PRELUDE_H
#define KFORGE_PRELUDE_H

// int8_t .. uint64_t, intptr_t, uintptr_t, INT32_MAX, INT_MAX, CHAR_BIT, ... (size_t, ptrdiff_t
// and nullptr are built into NVRTC).
#include <cuda/std/cstdint>

#define FLT_RADIX 2
#define FLT_MANT_DIG 24
#define FLT_DIG 6
#define FLT_MIN_EXP (-125)
#define FLT_MAX_EXP 128
#define FLT_MIN_10_EXP (-37)
#define FLT_MAX_10_EXP 38
#define FLT_MIN 1.17549435082228750797e-38F
#define FLT_MAX 3.40282346638528859812e+38F
#define FLT_EPSILON 1.19209289550781250000e-7F
#define FLT_TRUE_MIN 1.40129846432481707092e-45F
#define DBL_MANT_DIG 53
#define DBL_DIG 15
#define DBL_MIN_EXP (-1021)
#define DBL_MAX_EXP 1024
#define DBL_MIN_10_EXP (-307)
#define DBL_MAX_10_EXP 308
#define DBL_MIN 2.22507385850720138309e-308
#define DBL_MAX 1.79769313486231570815e+308
#define DBL_EPSILON 2.22044604925031308085e-16

#define INFINITY __builtin_bit_cast(float, 0x7f800000u)
#define NAN __builtin_bit_cast(float, 0x7fc00000u)
#define HUGE_VALF __builtin_bit_cast(float, 0x7f800000u)
#define HUGE_VAL __builtin_bit_cast(double, 0x7ff0000000000000ull)

#define M_E 2.71828182845904523536
#define M_LOG2E 1.44269504088896340736
#define M_LOG10E 0.434294481903251827651
#define M_LN2 0.693147180559945309417
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.785398163397448309616
#define M_1_PI 0.318309886183790671538
#define M_2_PI 0.636619772367581343076
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.707106781186547524401

// __half, __half2, __nv_bfloat16, __nv_bfloat162 and their intrinsics.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#endif
)";

// Shims that add nothing: the prelude already holds what the standard header would declare.
std::string note_only(const char* header, const char* what)
{
    return std::string("// kforge shim for <") + header + ">: " + what + "\n";
}

constexpr const char* k_cstdint_shim = R"(// kforge shim for <cstdint>: the types are in kforge's prelude; this adds their std:: names.
#ifndef KFORGE_SHIM_CSTDINT
#define KFORGE_SHIM_CSTDINT
namespace std {
using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t;
using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t;
using ::int_least8_t; using ::int_least16_t; using ::int_least32_t; using ::int_least64_t;
using ::uint_least8_t; using ::uint_least16_t; using ::uint_least32_t; using ::uint_least64_t;
using ::int_fast8_t; using ::int_fast16_t; using ::int_fast32_t; using ::int_fast64_t;
using ::uint_fast8_t; using ::uint_fast16_t; using ::uint_fast32_t; using ::uint_fast64_t;
using ::intptr_t; using ::uintptr_t; using ::intmax_t; using ::uintmax_t;
}
#endif
)";

constexpr const char* k_cmath_shim = R"(// kforge shim for <cmath>: NVRTC declares the math functions (with float and double
// overloads) globally, and INFINITY/NAN are in kforge's prelude; this adds their std:: names.
#ifndef KFORGE_SHIM_CMATH
#define KFORGE_SHIM_CMATH
namespace std {
using ::abs; using ::fabs; using ::fmod; using ::remainder; using ::fma; using ::fmax; using ::fmin;
using ::fdim; using ::exp; using ::exp2; using ::expm1; using ::log; using ::log2; using ::log10;
using ::log1p; using ::pow; using ::sqrt; using ::cbrt; using ::hypot; using ::sin; using ::cos;
using ::tan; using ::asin; using ::acos; using ::atan; using ::atan2; using ::sinh; using ::cosh;
using ::tanh; using ::erf; using ::erfc; using ::ceil; using ::floor; using ::trunc; using ::round;
using ::lround; using ::llround; using ::rint; using ::lrint; using ::llrint; using ::nearbyint;
using ::ldexp; using ::frexp; using ::modf; using ::scalbn; using ::ilogb; using ::logb;
using ::nextafter; using ::copysign; using ::isnan; using ::isinf; using ::isfinite;
using ::signbit;
}
#endif
)";

constexpr const char* k_cstddef_shim = R"(// kforge shim for <cstddef>: size_t and ptrdiff_t are built into NVRTC.
#ifndef KFORGE_SHIM_CSTDDEF
#define KFORGE_SHIM_CSTDDEF
namespace std {
using ::size_t; using ::ptrdiff_t;
}
#endif
)";

std::vector<ShimHeader> make_shims()
{
    const char* ints = "the fixed-width integer types and limits are in kforge's prelude.";
    const char* floats = "FLT_MAX, FLT_EPSILON, DBL_MAX, ... are in kforge's prelude.";
    const char* limits = "INT_MAX, CHAR_BIT, LLONG_MAX, ... are in kforge's prelude.";
    const char* math = "NVRTC declares the math functions; INFINITY and NAN are in kforge's prelude.";
    const char* stddef = "size_t and ptrdiff_t are built into NVRTC.";
    const char* assert_note = "assert() is built into NVRTC.";
    const char* printf_note = "device printf() is built into NVRTC.";
    return {
        {"cassert", note_only("cassert", assert_note)},
        {"assert.h", note_only("assert.h", assert_note)},
        {"cfloat", note_only("cfloat", floats)},
        {"float.h", note_only("float.h", floats)},
        {"climits", note_only("climits", limits)},
        {"limits.h", note_only("limits.h", limits)},
        {"cmath", k_cmath_shim},
        {"math.h", note_only("math.h", math)},
        {"cstddef", k_cstddef_shim},
        {"stddef.h", note_only("stddef.h", stddef)},
        {"cstdint", k_cstdint_shim},
        {"stdint.h", note_only("stdint.h", ints)},
        {"cstdio", note_only("cstdio", printf_note)},
        {"stdio.h", note_only("stdio.h", printf_note)},
    };
}

} // namespace

const std::string& candidate_prelude()
{
    static const std::string prelude = k_prelude;
    return prelude;
}

const std::vector<ShimHeader>& shim_headers()
{
    static const std::vector<ShimHeader> shims = make_shims();
    return shims;
}

bool is_shim_header(std::string_view name)
{
    for (const auto& shim : shim_headers())
        if (shim.name == name)
            return true;
    return false;
}

std::string describe_shim_headers()
{
    std::string out;
    for (const auto& shim : shim_headers()) {
        if (!out.empty())
            out += ' ';
        out += '<' + shim.name + '>';
    }
    return out;
}

} // namespace kforge
