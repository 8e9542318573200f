// The element check, shared by host and device: one definition of "right" for every output.
//
// Floating outputs pass when |got - expected| <= atol + rtol * |expected| (numpy.allclose's rule),
// where a NaN or infinity in the reference must be matched exactly and a NaN or infinity where the
// reference is finite fails (so leftover NaN poison always fails). Integer outputs and `exact`
// checks compare bits.
#pragma once

#include "element.cuh"

KF_HD int kf_element_matches(kf_u64 got_bits, kf_u64 expected_bits, int dtype, int exact, double atol,
                             double rtol)
{
    if (exact || !kf_dtype_is_float(dtype))
        return got_bits == expected_bits;
    double got = kf_bits_to_value(got_bits, dtype);
    double expected = kf_bits_to_value(expected_bits, dtype);
    if (kf_is_nan(expected))
        return kf_is_nan(got);
    if (kf_is_inf(expected))
        return got == expected;
    if (kf_is_nan(got) || kf_is_inf(got))
        return 0;
    return kf_abs(got - expected) <= atol + rtol * kf_abs(expected);
}
