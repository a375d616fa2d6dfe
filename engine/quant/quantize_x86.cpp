// The Q8_0 writer in AVX2: the portable encoder's float operations (quantize.cpp), eight values at
// a time, so the bytes are the same.
#include "quant/dequant.h"
#include "quant/quantize_detail.h"

#if defined(__x86_64__) || defined(__i386__)
#include "quant/x86_intrinsics.h"

#include <cstring>

namespace organ::detail {
namespace {

#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c")))

// round(v) with halves away from zero, as 32-bit integers: the truncation, one further from zero
// where the dropped fraction (exact) is at least a half. NaN gives 0x80000000, as the portable
// code's conversion does.
ORGAN_TARGET inline __m256i roundedAway(__m256 v) {
    const __m256 magnitudeMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 whole = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 half = _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(v, whole), magnitudeMask),
                                      _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 step = _mm256_or_ps(_mm256_andnot_ps(magnitudeMask, v), _mm256_set1_ps(1.0f));
    return _mm256_cvttps_epi32(_mm256_add_ps(whole, _mm256_and_ps(half, step)));
}

} // namespace

ORGAN_TARGET void quantizeQ8_0Avx2(const float* x, std::size_t blocks, std::byte* out) {
    const __m256 magnitudeMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256i lowByte = _mm256_set1_epi32(0xFF);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (std::size_t b = 0; b < blocks; ++b, x += 32, out += 34) {
        __m256 v[4];
        // The largest magnitude: a NaN never replaces what is kept (max takes its second operand
        // when either is NaN), as std::max(amax, |x|) in the portable code.
        __m256 amax = _mm256_setzero_ps();
        for (int k = 0; k < 4; ++k) {
            v[k] = _mm256_loadu_ps(x + 8 * k);
            amax = _mm256_max_ps(_mm256_and_ps(v[k], magnitudeMask), amax);
        }
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
        const float d = _mm_cvtss_f32(m) / 127.0f;
        const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
        const std::uint16_t half = floatToHalf(d);
        std::memcpy(out, &half, 2);
        const __m256 id = _mm256_set1_ps(inverse);
        __m256i q[4];
        for (int k = 0; k < 4; ++k) {
            q[k] = _mm256_and_si256(roundedAway(_mm256_mul_ps(v[k], id)), lowByte);
        }
        // Low bytes only (as a conversion to int8 keeps them), packed without saturating.
        const __m256i words = _mm256_packus_epi32(q[0], q[1]);
        const __m256i words2 = _mm256_packus_epi32(q[2], q[3]);
        const __m256i packed = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(words, words2), order);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2), packed);
    }
}

#undef ORGAN_TARGET

} // namespace organ::detail

#endif
