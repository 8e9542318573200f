// Stand-in for kforge's candidate prelude (DESIGN.md §4): fixed-width ints, INFINITY, FLT_MAX,
// fp16/bf16 types via the toolkit headers. No C++ standard library.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef signed char int8_t; typedef unsigned char uint8_t;
typedef short int16_t; typedef unsigned short uint16_t;
typedef int int32_t; typedef unsigned int uint32_t;
typedef long long int64_t; typedef unsigned long long uint64_t;
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38f
#endif
