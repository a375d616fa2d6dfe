// The Q8_0, F16 and BF16 writers in AVX2: the portable encoders' operations (quantize.cpp), eight or
// sixteen values at a time, so the bytes are the same.
#include "quant/quantize_detail.h"

#include "quant/dequant.h"
#include "quant/quantize.h"

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
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            v[k] = _mm256_loadu_ps(x + 8 * k);
            amax = _mm256_max_ps(_mm256_and_ps(v[k], magnitudeMask), amax);
        }
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
        const float d = _mm_cvtss_f32(m) / 127.0f;
        const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
        // d is never NaN (nor negative): F16C's rounding to nearest even is floatToHalf's.
        const auto half = static_cast<std::uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(d), 0), 0));
        std::memcpy(out, &half, 2);
        const __m256 id = _mm256_set1_ps(inverse);
        __m256i q[4];
#pragma GCC unroll 4
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

// floatToHalf's halves, eight at a time (halvesOf).
ORGAN_TARGET void encodeF16Avx2(const float* x, std::size_t count, std::byte* out) {
    std::size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), halvesOf(_mm256_loadu_ps(x + i)));
    }
    for (; i < count; ++i) {
        const std::uint16_t half = floatToHalf(x[i]);
        std::memcpy(out + 2 * i, &half, 2);
    }
}

// floatToBfloat16 on 32-bit lanes: the high half rounded to nearest even, a NaN's high half made
// quiet.
ORGAN_TARGET inline __m256i bfloat16Lanes(const float* x) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
    const __m256i high = _mm256_srli_epi32(bits, 16);
    const __m256i odd = _mm256_and_si256(high, _mm256_set1_epi32(1));
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF))), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF)),
                                           _mm256_set1_epi32(0x7F800000));
    return _mm256_blendv_epi8(rounded, _mm256_or_si256(high, _mm256_set1_epi32(64)), nan);
}

ORGAN_TARGET void encodeBF16Avx2(const float* x, std::size_t count, std::byte* out) {
    std::size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        // The lanes hold 0 … 0xFFFF: packing them saturates nothing; the packing interleaves
        // 128-bit halves, which the permutation puts back in order.
        const __m256i packed = _mm256_packus_epi32(bfloat16Lanes(x + i), bfloat16Lanes(x + i + 8));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), _mm256_permute4x64_epi64(packed, 0xD8));
    }
    for (; i < count; ++i) {
        const std::uint16_t value = floatToBfloat16(x[i]);
        std::memcpy(out + 2 * i, &value, 2);
    }
}

#undef ORGAN_TARGET

} // namespace organ::detail

#endif
