#pragma once
// The x86 intrinsics, for the files that compile kernels per instruction set (each function with
// its set's target attribute). Include it inside `#if defined(__x86_64__) || defined(__i386__)`.
#include "quant/dequant_detail.h"

#include <immintrin.h>

// GCC 12's AVX-512 headers build some intrinsics (_mm512_broadcast_i64x4, _mm512_cvtepi32_ps, …)
// on a deliberately undefined register, which its own -Wuninitialized then reports.
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifndef __clang__ // GCC's own warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace organ::detail {

// The half at p by the F16C conversion (exact; a signalling NaN comes out quiet, as the products it
// enters would make it anyway).
__attribute__((target("f16c"))) inline float halfAt(const std::byte* p) {
    return _cvtsh_ss(load16(p));
}

// Eight floats as halves, as floatToHalf rounds them: F16C's conversion rounds to nearest even as
// it does; only a NaN's bits differ, so a NaN is first made floatToHalf's (a quiet NaN with the sign
// and no payload).
__attribute__((target("avx2,f16c"))) inline __m128i halvesOf(__m256 v) {
    const __m256 quietNan = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000));
    const __m256 nan = _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)), quietNan);
    const __m256 clean = _mm256_blendv_ps(v, nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_cvtps_ph(clean, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

} // namespace organ::detail
