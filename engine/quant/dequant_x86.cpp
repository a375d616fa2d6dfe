// AVX2 decoders of the types most read (Q8_0, F16, BF16, Q4_0 … Q5_1, Q4_K, Q5_K, Q6_K, TQ2_0): eight values
// at a time, each the portable decoder's float operations in the same order (this file is
// compiled without contracting a multiply and an add into one), so they give the same bits.
#include "quant/dequant_detail.h"

#if defined(__x86_64__) || defined(__i386__)
#include "quant/x86_intrinsics.h"

namespace organ::detail {
namespace {

#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c")))

ORGAN_TARGET inline float halfAt(const std::byte* p) {
    return _cvtsh_ss(load16(p));
}

// Eight bytes from p, as 32-bit integers.
ORGAN_TARGET inline __m256i eightBytes(const std::uint8_t* p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

ORGAN_TARGET inline __m256 toFloats(__m256i v) {
    return _mm256_cvtepi32_ps(v);
}

ORGAN_TARGET void decodeQ8_0(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 34, out += 32) {
        const __m256 d = _mm256_set1_ps(halfAt(src));
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2));
        const __m128i low = _mm256_castsi256_si128(q);
        const __m128i high = _mm256_extracti128_si256(q, 1);
        _mm256_storeu_ps(out, _mm256_mul_ps(d, toFloats(_mm256_cvtepi8_epi32(low))));
        _mm256_storeu_ps(out + 8, _mm256_mul_ps(d, toFloats(_mm256_cvtepi8_epi32(_mm_srli_si128(low, 8)))));
        _mm256_storeu_ps(out + 16, _mm256_mul_ps(d, toFloats(_mm256_cvtepi8_epi32(high))));
        _mm256_storeu_ps(out + 24, _mm256_mul_ps(d, toFloats(_mm256_cvtepi8_epi32(_mm_srli_si128(high, 8)))));
    }
}

// Eight halves at a time by the F16C conversion, which is exact. Eight that hold an infinity or a
// NaN are decoded one by one, as the portable decoder does: the instruction would set a signalling
// NaN's quiet bit.
ORGAN_TARGET void decodeF16(const std::byte* src, std::size_t n, float* out) {
    const __m128i exponent = _mm_set1_epi16(0x7C00);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
        if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, exponent), exponent)) != 0) {
            for (std::size_t k = i; k < i + 8; ++k) {
                out[k] = halfToFloat(load16(src + 2 * k));
            }
            continue;
        }
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; ++i) {
        out[i] = halfToFloat(load16(src + 2 * i));
    }
}

// bfloat16 is the high half of a float: each 16 bits unpacked above 16 zero bits.
ORGAN_TARGET void decodeBF16(const std::byte* src, std::size_t n, float* out) {
    std::size_t i = 0;
    const __m256i zero = _mm256_setzero_si256();
    for (; i + 16 <= n; i += 16) {
        // Unpacking works within 128-bit halves: put values 0-3 and 8-11 in the low half first.
        const __m256i v =
            _mm256_permute4x64_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i)), 0xD8);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_unpacklo_epi16(zero, v));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i + 8), _mm256_unpackhi_epi16(zero, v));
    }
    for (; i < n; ++i) {
        out[i] = bfloat16ToFloat(load16(src + 2 * i));
    }
}

// Q4_0 (d · (q − 8)) and Q4_1 (d · q + m): 16 bytes of nibbles, low ones elements 0-15.
template <bool kMin> ORGAN_TARGET void decodeQ4(const std::byte* src, std::size_t blocks, float* out) {
    constexpr std::size_t kBytes = kMin ? 20 : 18;
    const __m256i nibble = _mm256_set1_epi32(0xF);
    const __m256i eight = _mm256_set1_epi32(kMin ? 0 : 8);
    for (std::size_t b = 0; b < blocks; ++b, src += kBytes, out += 32) {
        const __m256 d = _mm256_set1_ps(halfAt(src));
        const __m256 m = _mm256_set1_ps(kMin ? halfAt(src + 2) : 0.0f);
        const std::uint8_t* q = bytes(src + (kMin ? 4 : 2));
        for (int h = 0; h < 2; ++h) {
            const __m256i v = eightBytes(q + 8 * h);
            const __m256 low = toFloats(_mm256_sub_epi32(_mm256_and_si256(v, nibble), eight));
            const __m256 high = toFloats(_mm256_sub_epi32(_mm256_srli_epi32(v, 4), eight));
            _mm256_storeu_ps(out + 8 * h,
                             kMin ? _mm256_add_ps(_mm256_mul_ps(d, low), m) : _mm256_mul_ps(d, low));
            _mm256_storeu_ps(out + 16 + 8 * h,
                             kMin ? _mm256_add_ps(_mm256_mul_ps(d, high), m) : _mm256_mul_ps(d, high));
        }
    }
}

// Q5_0 (d · (q − 16)) and Q5_1 (d · q + m): nibbles as Q4's, the fifth bit of element j bit j of
// the 32-bit qh.
template <bool kMin> ORGAN_TARGET void decodeQ5(const std::byte* src, std::size_t blocks, float* out) {
    constexpr std::size_t kBytes = kMin ? 24 : 22;
    const __m256i nibble = _mm256_set1_epi32(0xF);
    const __m256i sixteen = _mm256_set1_epi32(kMin ? 0 : 16);
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i shifts = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (std::size_t b = 0; b < blocks; ++b, src += kBytes, out += 32) {
        const __m256 d = _mm256_set1_ps(halfAt(src));
        const __m256 m = _mm256_set1_ps(kMin ? halfAt(src + 2) : 0.0f);
        const __m256i qh = _mm256_set1_epi32(static_cast<int>(load32(src + (kMin ? 4 : 2))));
        const std::uint8_t* q = bytes(src + (kMin ? 8 : 6));
        for (int h = 0; h < 2; ++h) {
            const __m256i v = eightBytes(q + 8 * h);
            // Bits 8h … 8h + 7 of qh for the low nibbles, 16 + 8h … for the high ones.
            const __m256i lowBits = _mm256_srlv_epi32(qh, _mm256_add_epi32(shifts, _mm256_set1_epi32(8 * h)));
            const __m256i highBits =
                _mm256_srlv_epi32(qh, _mm256_add_epi32(shifts, _mm256_set1_epi32(16 + 8 * h)));
            const __m256i lowLevel = _mm256_or_si256(_mm256_and_si256(v, nibble),
                                                     _mm256_slli_epi32(_mm256_and_si256(lowBits, one), 4));
            const __m256i highLevel = _mm256_or_si256(_mm256_srli_epi32(v, 4),
                                                      _mm256_slli_epi32(_mm256_and_si256(highBits, one), 4));
            const __m256 low = toFloats(_mm256_sub_epi32(lowLevel, sixteen));
            const __m256 high = toFloats(_mm256_sub_epi32(highLevel, sixteen));
            _mm256_storeu_ps(out + 8 * h,
                             kMin ? _mm256_add_ps(_mm256_mul_ps(d, low), m) : _mm256_mul_ps(d, low));
            _mm256_storeu_ps(out + 16 + 8 * h,
                             kMin ? _mm256_add_ps(_mm256_mul_ps(d, high), m) : _mm256_mul_ps(d, high));
        }
    }
}

// TQ2_0: 64 bytes of 2-bit levels (run l of 32 takes bits 2l, 2l + 1), then half d: d · (q − 1).
ORGAN_TARGET void decodeTQ2_0(const std::byte* src, std::size_t blocks, float* out) {
    const __m256i pair = _mm256_set1_epi32(3);
    const __m256i one = _mm256_set1_epi32(1);
    for (std::size_t b = 0; b < blocks; ++b, src += 66) {
        const std::uint8_t* q = bytes(src);
        const __m256 d = _mm256_set1_ps(halfAt(src + 64));
        for (int j = 0; j < 64; j += 32) {
            for (int l = 0; l < 4; ++l, out += 32) {
                for (int m = 0; m < 32; m += 8) {
                    const __m256i level = _mm256_and_si256(
                        _mm256_srl_epi32(eightBytes(q + j + m), _mm_cvtsi32_si128(2 * l)), pair);
                    _mm256_storeu_ps(out + m, _mm256_mul_ps(d, toFloats(_mm256_sub_epi32(level, one))));
                }
            }
        }
    }
}

// Q4_K and Q5_K: per 64 elements, d1 · level − m1 for the low nibbles, d2 · level − m2 for the
// high ones (plus 16 where the fifth bit is set).
template <bool kFifthBit>
ORGAN_TARGET void decodeQ4orQ5_K(const std::byte* src, std::size_t blocks, float* out) {
    constexpr std::size_t kBlockBytes = kFifthBit ? 176 : 144;
    const __m256i nibble = _mm256_set1_epi32(0xF);
    const __m256i one = _mm256_set1_epi32(1);
    for (std::size_t b = 0; b < blocks; ++b, src += kBlockBytes) {
        const float d = halfAt(src);
        const float dmin = halfAt(src + 2);
        const std::uint8_t* scales = bytes(src + 4);
        const std::uint8_t* qh = bytes(src + 16);
        const std::uint8_t* q = bytes(src + (kFifthBit ? 48 : 16));
        for (int j = 0; j < 8; j += 2, q += 32, out += 64) {
            int sc = 0;
            int mn = 0;
            scaleMin(j, scales, sc, mn);
            const __m256 d1 = _mm256_set1_ps(d * sc);
            const __m256 m1 = _mm256_set1_ps(dmin * mn);
            scaleMin(j + 1, scales, sc, mn);
            const __m256 d2 = _mm256_set1_ps(d * sc);
            const __m256 m2 = _mm256_set1_ps(dmin * mn);
            for (int l = 0; l < 32; l += 8) {
                const __m256i v = eightBytes(q + l);
                __m256i low = _mm256_and_si256(v, nibble);
                __m256i high = _mm256_srli_epi32(v, 4);
                if constexpr (kFifthBit) {
                    const __m256i h = eightBytes(qh + l);
                    low = _mm256_add_epi32(
                        low, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, j), one), 4));
                    high = _mm256_add_epi32(
                        high, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, j + 1), one), 4));
                }
                _mm256_storeu_ps(out + l, _mm256_sub_ps(_mm256_mul_ps(d1, toFloats(low)), m1));
                _mm256_storeu_ps(out + 32 + l, _mm256_sub_ps(_mm256_mul_ps(d2, toFloats(high)), m2));
            }
        }
    }
}

// Q6_K: per half of 128, runs of 32 from nibbles of ql and bit pairs of qh, (d · scale) · (q − 32).
ORGAN_TARGET void decodeQ6_K(const std::byte* src, std::size_t blocks, float* out) {
    const __m256i nibble = _mm256_set1_epi32(0xF);
    const __m256i pair = _mm256_set1_epi32(3);
    const __m256i bias = _mm256_set1_epi32(32);
    for (std::size_t b = 0; b < blocks; ++b, src += 210, out += 256) {
        const float d = halfAt(src + 208);
        for (int half = 0; half < 2; ++half) {
            const std::uint8_t* ql = bytes(src) + 64 * half;
            const std::uint8_t* qh = bytes(src + 128) + 32 * half;
            const auto* sc = reinterpret_cast<const std::int8_t*>(src + 192) + 8 * half;
            for (int l = 0; l < 32; l += 8) {
                const int is = l / 16;
                const __m256i a = eightBytes(ql + l);
                const __m256i c = eightBytes(ql + l + 32);
                const __m256i h = eightBytes(qh + l);
                const __m256i q[4] = {
                    _mm256_or_si256(_mm256_and_si256(a, nibble),
                                    _mm256_slli_epi32(_mm256_and_si256(h, pair), 4)),
                    _mm256_or_si256(_mm256_and_si256(c, nibble),
                                    _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 2), pair), 4)),
                    _mm256_or_si256(_mm256_srli_epi32(a, 4),
                                    _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 4), pair), 4)),
                    _mm256_or_si256(_mm256_srli_epi32(c, 4), _mm256_slli_epi32(_mm256_srli_epi32(h, 6), 4))};
                for (int t = 0; t < 4; ++t) {
                    const __m256 scale = _mm256_set1_ps(d * sc[is + 2 * t]);
                    _mm256_storeu_ps(out + 128 * half + l + 32 * t,
                                     _mm256_mul_ps(scale, toFloats(_mm256_sub_epi32(q[t], bias))));
                }
            }
        }
    }
}

#undef ORGAN_TARGET

// 512-bit registers: sixteen bfloat16 become sixteen floats in one step.
__attribute__((target("avx2,avx512f,avx512bw"))) void decodeBF16Avx512(const std::byte* src, std::size_t n,
                                                                       float* out) {
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i v =
            _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i)));
        _mm512_storeu_si512(out + i, _mm512_slli_epi32(v, 16));
    }
    decodeBF16(src + 2 * i, n - i, out + i);
}

constexpr TypeEntry<DecodeFn> kDecoders[] = {
    {TensorType::Q8_0, decodeQ8_0},
    {TensorType::BF16, decodeBF16},
    {TensorType::F16, decodeF16},
    {TensorType::Q4_0, decodeQ4<false>},
    {TensorType::Q4_1, decodeQ4<true>},
    {TensorType::Q4_K, decodeQ4orQ5_K<false>},
    {TensorType::Q5_K, decodeQ4orQ5_K<true>},
    {TensorType::Q6_K, decodeQ6_K},
    {TensorType::Q5_0, decodeQ5<false>},
    {TensorType::Q5_1, decodeQ5<true>},
    {TensorType::TQ2_0, decodeTQ2_0},
};

} // namespace

DecodeFn x86Decoder(TensorType type, InstructionSet set) {
    if (type == TensorType::BF16 && (set == InstructionSet::Avx512 || set == InstructionSet::Avx512Vnni)) {
        return decodeBF16Avx512;
    }
    return entryOf(kDecoders, type);
}

} // namespace organ::detail

#else

namespace organ::detail {

DecodeFn x86Decoder(TensorType, InstructionSet) {
    return nullptr;
}

} // namespace organ::detail

#endif
