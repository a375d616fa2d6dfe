// The levels of Q4_K and Q6_K super-blocks unpacked 32 bytes at a time (AVX2), and their rows'
// products with one column of activations (generation) straight from the packed bytes: a row that
// meets one column only would cost more to unpack than to multiply.
#include "quant/dequant_detail.h"
#include "quant/kquant_unpack.h"

#include <cmath>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace organ::detail {
namespace {

#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c")))

// A half by the F16C conversion (exact; a signalling NaN comes out quiet, as the product it
// enters would make it anyway).
ORGAN_TARGET inline float halfScale(const std::byte* p) {
    return _cvtsh_ss(load16(p));
}

ORGAN_TARGET inline __m256i load256(const std::byte* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

ORGAN_TARGET inline void store256(std::uint8_t* p, __m256i v) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(p), v);
}

// qs[128] from byte 16: 32 bytes give 32 levels in their low nibbles, then 32 in their high ones.
ORGAN_TARGET void unpackQ4KAvx2(const std::byte* src, Unpacked& u) {
    q4KFactors(src, u);
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    for (int k = 0; k < 4; ++k) {
        const __m256i v = load256(src + 16 + 32 * k);
        store256(u.q + 64 * k, _mm256_and_si256(v, nibble));
        store256(u.q + 64 * k + 32, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
    }
}

// Per half of 128 levels: ql[64] and qh[32]; run t of 32 takes nibble t / 2 of ql[32 · (t % 2) …]
// and bits 2t, 2t + 1 of qh as its bits 4 and 5.
ORGAN_TARGET void unpackQ6KAvx2(const std::byte* src, Unpacked& u) {
    q6KFactors(src, u);
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    const __m256i high = _mm256_set1_epi8(0x30);
    for (int half = 0; half < 2; ++half) {
        const __m256i a = load256(src + 64 * half);
        const __m256i b = load256(src + 64 * half + 32);
        const __m256i h = load256(src + 128 + 32 * half);
        std::uint8_t* out = u.q + 128 * half;
        store256(out, _mm256_or_si256(_mm256_and_si256(a, nibble),
                                      _mm256_and_si256(_mm256_slli_epi16(h, 4), high)));
        store256(out + 32, _mm256_or_si256(_mm256_and_si256(b, nibble),
                                           _mm256_and_si256(_mm256_slli_epi16(h, 2), high)));
        store256(out + 64, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), nibble),
                                           _mm256_and_si256(h, high)));
        store256(out + 96, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), nibble),
                                           _mm256_and_si256(_mm256_srli_epi16(h, 2), high)));
    }
}

ORGAN_TARGET inline std::int32_t total(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// Σ over 32 levels q (bytes, q ≤ 63) · x, times the scale of each 16 (low, high): int32 lanes.
ORGAN_TARGET inline __m256i scaledSum(__m256i q, const std::int8_t* x, int low, int high) {
    const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(static_cast<std::int16_t>(high)),
                                            _mm_set1_epi16(static_cast<std::int16_t>(low)));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, load256(reinterpret_cast<const std::byte*>(x))), scales);
}

// A Q4_K row · a q8_K column as kQuantTilePortable computes it from the unpacked row: per
// super-block the same exact integer sums, then the same two fused multiply-adds.
ORGAN_TARGET float dotQ4KAvx2(const std::byte* row, const Q8KBlock* x, std::size_t blocks) {
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    float acc = 0;
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::byte* src = row + b * 144;
        int scales[8];
        int mins[8];
        for (int sub = 0; sub < 8; ++sub) {
            scaleMin(sub, bytes(src + 4), scales[sub], mins[sub]);
        }
        __m256i sum = _mm256_setzero_si256();
        for (int k = 0; k < 4; ++k) {
            const __m256i v = load256(src + 16 + 32 * k);
            const std::int8_t* xs = x[b].values + 64 * k;
            sum = _mm256_add_epi32(sum,
                                   scaledSum(_mm256_and_si256(v, nibble), xs, scales[2 * k], scales[2 * k]));
            sum = _mm256_add_epi32(sum, scaledSum(_mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), xs + 32,
                                                  scales[2 * k + 1], scales[2 * k + 1]));
        }
        // Each minimum meets the sums of its two 16s.
        alignas(32) std::int16_t pairs[16];
        for (int j = 0; j < 16; ++j) {
            pairs[j] = static_cast<std::int16_t>(mins[j / 2]);
        }
        const __m256i minSums = _mm256_madd_epi16(load256(reinterpret_cast<const std::byte*>(x[b].sums)),
                                                  _mm256_load_si256(reinterpret_cast<const __m256i*>(pairs)));
        acc = std::fma(halfScale(src) * x[b].d, static_cast<float>(total(sum)), acc);
        acc = std::fma(-(halfScale(src + 2) * x[b].d), static_cast<float>(total(minSums)), acc);
    }
    return acc;
}

// A Q6_K row · a q8_K column, the same way: levels q = level + 32 as unpackQ6KAvx2 makes them, less
// 32 · Σ scale · (sums of 16 x).
ORGAN_TARGET float dotQ6KAvx2(const std::byte* row, const Q8KBlock* x, std::size_t blocks) {
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    const __m256i high = _mm256_set1_epi8(0x30);
    float acc = 0;
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::byte* src = row + b * 210;
        const auto* scales = reinterpret_cast<const std::int8_t*>(src + 192);
        __m256i sum = _mm256_setzero_si256();
        for (int half = 0; half < 2; ++half) {
            const __m256i a = load256(src + 64 * half);
            const __m256i c = load256(src + 64 * half + 32);
            const __m256i h = load256(src + 128 + 32 * half);
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(a, nibble), _mm256_and_si256(_mm256_slli_epi16(h, 4), high)),
                _mm256_or_si256(_mm256_and_si256(c, nibble), _mm256_and_si256(_mm256_slli_epi16(h, 2), high)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), nibble), _mm256_and_si256(h, high)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), nibble),
                                _mm256_and_si256(_mm256_srli_epi16(h, 2), high))};
            for (int k = 0; k < 4; ++k) {
                const int chunk = 4 * half + k;
                sum = _mm256_add_epi32(
                    sum, scaledSum(q[k], x[b].values + 32 * chunk, scales[2 * chunk], scales[2 * chunk + 1]));
            }
        }
        const __m256i scales16 =
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
        const __m256i biasSums =
            _mm256_madd_epi16(load256(reinterpret_cast<const std::byte*>(x[b].sums)), scales16);
        acc = std::fma(halfScale(src + 208) * x[b].d, static_cast<float>(total(sum) - 32 * total(biasSums)),
                       acc);
    }
    return acc;
}

#undef ORGAN_TARGET

} // namespace

UnpackFn superBlockUnpackerX86(TensorType type) {
    if (type == TensorType::Q4_K) {
        return unpackQ4KAvx2;
    }
    return type == TensorType::Q6_K ? unpackQ6KAvx2 : nullptr;
}

PackedRowDotFn packedRowDotX86(TensorType type) {
    if (type == TensorType::Q4_K) {
        return dotQ4KAvx2;
    }
    return type == TensorType::Q6_K ? dotQ6KAvx2 : nullptr;
}

} // namespace organ::detail

#else

namespace organ::detail {

UnpackFn superBlockUnpackerX86(TensorType) {
    return nullptr;
}

PackedRowDotFn packedRowDotX86(TensorType) {
    return nullptr;
}

} // namespace organ::detail

#endif
