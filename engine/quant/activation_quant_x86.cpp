// Activations prepared for the products with AVX2 and F16C, 8 floats at a time: q8_0 blocks,
// q8_K super-blocks and values rounded to F16, each giving the portable code's bits (maxima of
// magnitudes are exact in any order, the scales are the portable code's own scalar steps, and
// rounding to an integer or to F16 is round-to-nearest-even in both).
#include "quant/dequant.h"
#include "quant/f16_dot.h"
#include "quant/product_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include "quant/x86_intrinsics.h"

namespace organ::detail {
namespace {

#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c")))

ORGAN_TARGET inline __m256 magnitude(__m256 v) {
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

// The largest of the magnitudes of n × 8 floats; a NaN is passed over, as std::max(amax, NaN)
// keeps amax (vmaxps gives its second operand when either is NaN).
ORGAN_TARGET inline float largestMagnitude(const float* x, int n) {
    __m256 top = _mm256_setzero_ps();
    for (int i = 0; i < n; ++i) {
        top = _mm256_max_ps(magnitude(_mm256_loadu_ps(x + 8 * i)), top);
    }
    __m128 half = _mm_max_ps(_mm256_castps256_ps128(top), _mm256_extractf128_ps(top, 1));
    half = _mm_max_ps(half, _mm_movehl_ps(half, half));
    half = _mm_max_ss(half, _mm_movehdup_ps(half));
    return _mm_cvtss_f32(half);
}

// Eight values × factor rounded to the nearest integer, ties to even (std::nearbyint).
ORGAN_TARGET inline __m256i levels(const float* x, __m256 factor) {
    return _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x), factor),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// 32 int32 levels in [−127, 127], in four registers, as 32 bytes in order.
ORGAN_TARGET inline void storeBytes(const __m256i* v, std::int8_t* out) {
    const __m256i words = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permutevar8x32_epi32(words, order));
}

ORGAN_TARGET void quantizeQ80Avx2(const float* x, std::size_t blocks, Q80Block* out) {
    for (std::size_t b = 0; b < blocks; ++b, x += 32) {
        const float amax = largestMagnitude(x, 4);
        const float inverse = amax != 0 ? 127.0f / amax : 0.0f;
        out[b].scale = halfToFloat(floatToHalf(amax / 127.0f));
        const __m256 factor = _mm256_set1_ps(inverse);
        __m256i v[4];
        for (int i = 0; i < 4; ++i) {
            v[i] = levels(x + 8 * i, factor);
        }
        storeBytes(v, out[b].values);
    }
}

// Lane k: the sum of the eight int32 lanes of v[k].
ORGAN_TARGET inline __m256i laneTotals(const __m256i* v) {
    const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

ORGAN_TARGET void quantizeQ8KAvx2(const float* x, std::size_t count, Q8KBlock* out) {
    for (std::size_t b = 0; b < count / 256; ++b, x += 256) {
        Q8KBlock& block = out[b];
        const float amax = largestMagnitude(x, 32);
        if (amax == 0) {
            block = Q8KBlock{};
            continue;
        }
        // The first value of that magnitude (a NaN equals nothing).
        const __m256 top = _mm256_set1_ps(amax);
        int first = 0;
        for (int i = 0; i < 32; ++i) {
            const int equal =
                _mm256_movemask_ps(_mm256_cmp_ps(magnitude(_mm256_loadu_ps(x + 8 * i)), top, _CMP_EQ_OQ));
            if (equal != 0) {
                first = 8 * i + __builtin_ctz(static_cast<unsigned>(equal));
                break;
            }
        }
        const float inverse = -127.0f / x[first];
        const __m256 factor = _mm256_set1_ps(inverse);
        const __m256 highest = _mm256_set1_ps(127.0f);
        const __m256 lowest = _mm256_set1_ps(-127.0f);
        __m256i groupSums[16];
        for (int k = 0; k < 8; ++k) {
            __m256i v[4];
            for (int i = 0; i < 4; ++i) {
                const __m256 scaled =
                    _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * k + 8 * i), factor),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                // At most 127, and a NaN 127 (vminps gives its second operand); at least −127.
                v[i] = _mm256_cvtps_epi32(_mm256_max_ps(_mm256_min_ps(scaled, highest), lowest));
            }
            storeBytes(v, block.values + 32 * k);
            groupSums[2 * k] = _mm256_add_epi32(v[0], v[1]);
            groupSums[2 * k + 1] = _mm256_add_epi32(v[2], v[3]);
        }
        const __m256i sums = _mm256_packs_epi32(laneTotals(groupSums), laneTotals(groupSums + 8));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(block.sums), _mm256_permute4x64_epi64(sums, 0xD8));
        block.d = 1.0f / inverse;
    }
}

// floatToHalf's halves (halvesOf), stored in HalfActivations' layout: a column's block b at 16 b
// from its start.
ORGAN_TARGET void halvesAvx2(const float* x, std::size_t size, std::size_t count, std::uint16_t* out) {
    for (std::size_t c = 0; c < count; ++c) {
        std::uint16_t* column = out + HalfActivations::columnOffset(size, c);
        const float* values = x + c * size;
        for (std::size_t b = 0; b < size / 8; ++b) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(column + 16 * b),
                             halvesOf(_mm256_loadu_ps(values + 8 * b)));
        }
    }
}

#undef ORGAN_TARGET

} // namespace

const ActivationQuantizers* activationQuantizersX86() {
    static const ActivationQuantizers kAvx2{quantizeQ80Avx2, quantizeQ8KAvx2, halvesAvx2};
    return &kAvx2;
}

} // namespace organ::detail

#else

namespace organ::detail {

const ActivationQuantizers* activationQuantizersX86() {
    return nullptr;
}

} // namespace organ::detail

#endif
