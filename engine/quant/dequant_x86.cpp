// AVX2 decoders of the block types (all but Q1_0, Q2_0, Q8_1 and Q8_K):
// eight values at a time, each the portable decoder's float operations in the same order (this file is
// compiled without contracting a multiply and an add into one), so they give the same bits.
#include "quant/dequant_detail.h"
#include "quant/iq_groups.h"

#if defined(__x86_64__) || defined(__i386__)
#include "quant/x86_intrinsics.h"

namespace organ::detail {
namespace {

#define ORGAN_TARGET __attribute__((target("avx2,fma,f16c")))

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
        const auto* q = reinterpret_cast<const std::int8_t*>(src + 2);
        for (int i = 0; i < 32; i += 8) {
            const __m128i eight = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i));
            _mm256_storeu_ps(out + i, _mm256_mul_ps(d, toFloats(_mm256_cvtepi8_epi32(eight))));
        }
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

// Q2_K: per 16 elements, dl · ((q >> shift) & 3) − ml, dl and ml from a scale byte's nibbles.
ORGAN_TARGET void decodeQ2_KAvx2(const std::byte* src, std::size_t blocks, float* out) {
    const __m256i pair = _mm256_set1_epi32(3);
    for (std::size_t b = 0; b < blocks; ++b, src += 84) {
        const std::uint8_t* scales = bytes(src);
        const std::uint8_t* q = bytes(src + 16);
        const float d = halfAt(src + 80);
        const float dmin = halfAt(src + 82);
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                const __m128i by = _mm_cvtsi32_si128(shift);
                for (int part = 0; part < 2; ++part, out += 16) {
                    const std::uint8_t sc = *scales++;
                    const __m256 dl = _mm256_set1_ps(d * (sc & 0xF));
                    const __m256 ml = _mm256_set1_ps(dmin * (sc >> 4));
                    for (int l = 0; l < 16; l += 8) {
                        const __m256i level =
                            _mm256_and_si256(_mm256_srl_epi32(eightBytes(q + 16 * part + l), by), pair);
                        _mm256_storeu_ps(out + l, _mm256_sub_ps(_mm256_mul_ps(dl, toFloats(level)), ml));
                    }
                }
            }
        }
    }
}

// Q3_K: per 16 elements, dl · (((q >> shift) & 3) − 4 where the element's hmask bit is clear).
ORGAN_TARGET void decodeQ3_KAvx2(const std::byte* src, std::size_t blocks, float* out) {
    const __m256i pair = _mm256_set1_epi32(3);
    const __m256i four = _mm256_set1_epi32(4);
    for (std::size_t b = 0; b < blocks; ++b, src += 110) {
        const std::uint8_t* hmask = bytes(src);
        const std::uint8_t* q = bytes(src + 32);
        const float d = halfAt(src + 108);
        int scales[16];
        q3KScales(bytes(src + 96), scales);
        const int* scale = scales;
        int m = 1;
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                const __m128i by = _mm_cvtsi32_si128(shift);
                const __m256i bit = _mm256_set1_epi32(m);
                for (int part = 0; part < 2; ++part, out += 16) {
                    const __m256 dl = _mm256_set1_ps(d * *scale++);
                    for (int l = 0; l < 16; l += 8) {
                        const int k = l + 16 * part;
                        const __m256i level = _mm256_and_si256(_mm256_srl_epi32(eightBytes(q + k), by), pair);
                        const __m256i clear = _mm256_cmpeq_epi32(_mm256_and_si256(eightBytes(hmask + k), bit),
                                                                 _mm256_setzero_si256());
                        const __m256i value = _mm256_sub_epi32(level, _mm256_and_si256(clear, four));
                        _mm256_storeu_ps(out + l, _mm256_mul_ps(dl, toFloats(value)));
                    }
                }
            }
        }
    }
}

// TQ1_0: digit n of byte q is ((q · 3^n mod 256) · 3 >> 8) − 1, sixteen bytes at a time in 16-bit
// lanes: d times the digits of `q` (bytes widened to 16 bits) into sixteen floats.
ORGAN_TARGET inline void ternaryDigits(__m256i q, std::int16_t power, __m256 d, float* out) {
    const __m256i shifted =
        _mm256_and_si256(_mm256_mullo_epi16(q, _mm256_set1_epi16(power)), _mm256_set1_epi16(0xFF));
    const __m256i digit = _mm256_sub_epi16(
        _mm256_srli_epi16(_mm256_mullo_epi16(shifted, _mm256_set1_epi16(3)), 8), _mm256_set1_epi16(1));
    _mm256_storeu_ps(out, _mm256_mul_ps(d, toFloats(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(digit)))));
    _mm256_storeu_ps(out + 8,
                     _mm256_mul_ps(d, toFloats(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(digit, 1)))));
}

ORGAN_TARGET inline __m256i sixteenBytes(const std::uint8_t* p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// The last four bytes' sixteen digits as the portable decoder takes them.
ORGAN_TARGET void decodeTQ1_0Avx2(const std::byte* src, std::size_t blocks, float* out) {
    static constexpr std::int16_t kPow3[5] = {1, 3, 9, 27, 81};
    for (std::size_t b = 0; b < blocks; ++b, src += 54) {
        const std::uint8_t* qs = bytes(src);
        const std::uint8_t* qh = bytes(src + 48);
        const float scale = halfAt(src + 52);
        const __m256 d = _mm256_set1_ps(scale);
        const __m256i first = sixteenBytes(qs);
        const __m256i second = sixteenBytes(qs + 16);
        const __m256i third = sixteenBytes(qs + 32);
        for (int n = 0; n < 5; ++n, out += 32) {
            ternaryDigits(first, kPow3[n], d, out);
            ternaryDigits(second, kPow3[n], d, out + 16);
        }
        for (int n = 0; n < 5; ++n, out += 16) {
            ternaryDigits(third, kPow3[n], d, out);
        }
        for (int n = 0; n < 4; ++n) {
            for (int m = 0; m < 4; ++m) {
                const auto shifted = static_cast<std::uint8_t>(qh[m] * kPow3[n]);
                *out++ = scale * static_cast<float>(((static_cast<int>(shifted) * 3) >> 8) - 1);
            }
        }
    }
}

// NVFP4: per 16 elements a UE4M3 scale (from its table) times the doubled e2m1 levels, looked up
// sixteen at a time with a byte shuffle.
ORGAN_TARGET void decodeNVFP4Avx2(const std::byte* src, std::size_t blocks, float* out) {
    const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kFp4Doubled));
    const __m128i nibble = _mm_set1_epi8(0x0F);
    for (std::size_t b = 0; b < blocks; ++b, src += 36) {
        const std::uint8_t* scales = bytes(src);
        const std::uint8_t* q = bytes(src + 4);
        for (int s = 0; s < 4; ++s, out += 16) {
            const __m256 d = _mm256_set1_ps(ue4m3Half(scales[s]));
            const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 8 * s));
            const __m128i lowLevels = _mm_shuffle_epi8(levels, _mm_and_si128(v, nibble));
            const __m128i highLevels = _mm_shuffle_epi8(levels, _mm_and_si128(_mm_srli_epi16(v, 4), nibble));
            _mm256_storeu_ps(out, _mm256_mul_ps(d, toFloats(_mm256_cvtepi8_epi32(lowLevels))));
            _mm256_storeu_ps(out + 8, _mm256_mul_ps(d, toFloats(_mm256_cvtepi8_epi32(highLevels))));
        }
    }
}

// 32 values of a block of nibbles (low: values 0-15, high: 16-31) from their 16 levels, times d.
ORGAN_TARGET inline void decodeNibbles(const __m128i levels, const std::uint8_t* q, float d, float* out) {
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i low = _mm_shuffle_epi8(levels, _mm_and_si128(v, nibble));
    const __m128i high = _mm_shuffle_epi8(levels, _mm_and_si128(_mm_srli_epi16(v, 4), nibble));
    const __m256 scale = _mm256_set1_ps(d);
    _mm256_storeu_ps(out, _mm256_mul_ps(scale, toFloats(_mm256_cvtepi8_epi32(low))));
    _mm256_storeu_ps(out + 8, _mm256_mul_ps(scale, toFloats(_mm256_cvtepi8_epi32(_mm_srli_si128(low, 8)))));
    _mm256_storeu_ps(out + 16, _mm256_mul_ps(scale, toFloats(_mm256_cvtepi8_epi32(high))));
    _mm256_storeu_ps(out + 24, _mm256_mul_ps(scale, toFloats(_mm256_cvtepi8_epi32(_mm_srli_si128(high, 8)))));
}

ORGAN_TARGET inline __m128i levelsOf(const std::int8_t* table) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(table));
}

// MXFP4: its halved scale times the doubled e2m1 levels.
ORGAN_TARGET void decodeMXFP4Avx2(const std::byte* src, std::size_t blocks, float* out) {
    const __m128i levels = levelsOf(kFp4Doubled);
    for (std::size_t b = 0; b < blocks; ++b, src += 17, out += 32) {
        decodeNibbles(levels, bytes(src + 1), mxfp4HalfScale(bytes(src)[0]), out);
    }
}

// IQ4_NL: half d times the non-linear levels.
ORGAN_TARGET void decodeIQ4_NLAvx2(const std::byte* src, std::size_t blocks, float* out) {
    const __m128i levels = levelsOf(kIq4Levels);
    for (std::size_t b = 0; b < blocks; ++b, src += 18, out += 32) {
        decodeNibbles(levels, bytes(src + 2), halfAt(src), out);
    }
}

// IQ4_XS: per 32 values d · (its 6-bit scale − 32) times the non-linear levels.
ORGAN_TARGET void decodeIQ4_XSAvx2(const std::byte* src, std::size_t blocks, float* out) {
    const __m128i levels = levelsOf(kIq4Levels);
    for (std::size_t b = 0; b < blocks; ++b, src += 136) {
        const float d = halfAt(src);
        const std::uint8_t* q = bytes(src + 8);
        for (int ib = 0; ib < 8; ++ib, q += 16, out += 32) {
            decodeNibbles(levels, q, d * static_cast<float>(iq4XsScale(src, ib)), out);
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

// IQ2 and IQ3: each group's eight values (scale · byte) · (±1 by sign bit).
template <std::size_t kBytes, void (*kRead)(const std::byte*, SignedGroups&)>
ORGAN_TARGET void decodeSignedAvx2(const std::byte* src, std::size_t blocks, float* out) {
    const __m256i bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256 plus = _mm256_set1_ps(1.0f);
    const __m256 minus = _mm256_set1_ps(-1.0f);
    SignedGroups g;
    for (std::size_t b = 0; b < blocks; ++b, src += kBytes) {
        kRead(src, g);
        for (int i = 0; i < 32; ++i, out += 8) {
            const __m256i set = _mm256_cmpeq_epi32(
                _mm256_and_si256(_mm256_set1_epi32(static_cast<int>(g.signs[i])), bits), bits);
            const __m256 sign = _mm256_blendv_ps(plus, minus, _mm256_castsi256_ps(set));
            const __m256 values =
                toFloats(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(g.entry[i]))));
            _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(g.scale[i]), values), sign));
        }
    }
}

// IQ1: each group's eight values scale · (signed byte + shift).
template <std::size_t kBytes, void (*kRead)(const std::byte*, ShiftedGroups&)>
ORGAN_TARGET void decodeShiftedAvx2(const std::byte* src, std::size_t blocks, float* out) {
    ShiftedGroups g;
    for (std::size_t b = 0; b < blocks; ++b, src += kBytes) {
        kRead(src, g);
        for (int i = 0; i < 32; ++i, out += 8) {
            const __m256 values =
                toFloats(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(static_cast<long long>(g.entry[i]))));
            _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_set1_ps(g.scale[i]),
                                                _mm256_add_ps(values, _mm256_set1_ps(g.shift[i]))));
        }
    }
}

#undef ORGAN_TARGET

// BF16 in 512-bit registers: sixteen bfloat16 become sixteen floats in one step.
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

// Q8_0 in 512-bit registers: a block's 32 values in two steps.
__attribute__((target("avx2,f16c,avx512f,avx512bw"))) void decodeQ8_0Avx512(const std::byte* src,
                                                                            std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 34, out += 32) {
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(load16(src)));
        const __m128i low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2));
        const __m128i high = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 18));
        _mm512_storeu_ps(out, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(low))));
        _mm512_storeu_ps(out + 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(high))));
    }
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
    {TensorType::Q2_K, decodeQ2_KAvx2},
    {TensorType::Q3_K, decodeQ3_KAvx2},
    {TensorType::TQ1_0, decodeTQ1_0Avx2},
    {TensorType::NVFP4, decodeNVFP4Avx2},
    {TensorType::MXFP4, decodeMXFP4Avx2},
    {TensorType::IQ4_NL, decodeIQ4_NLAvx2},
    {TensorType::IQ4_XS, decodeIQ4_XSAvx2},
    {TensorType::IQ2_XXS, decodeSignedAvx2<66, readIQ2_XXS>},
    {TensorType::IQ2_XS, decodeSignedAvx2<74, readIQ2_XS>},
    {TensorType::IQ2_S, decodeSignedAvx2<82, readIQ2_S>},
    {TensorType::IQ3_XXS, decodeSignedAvx2<98, readIQ3_XXS>},
    {TensorType::IQ3_S, decodeSignedAvx2<110, readIQ3_S>},
    {TensorType::IQ1_S, decodeShiftedAvx2<50, readIQ1_S>},
    {TensorType::IQ1_M, decodeShiftedAvx2<56, readIQ1_M>},
};

} // namespace

DecodeFn x86Decoder(TensorType type, InstructionSet set) {
    if (set == InstructionSet::Avx512 || set == InstructionSet::Avx512Vnni) {
        if (type == TensorType::BF16) {
            return decodeBF16Avx512;
        }
        if (type == TensorType::Q8_0) {
            return decodeQ8_0Avx512;
        }
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
