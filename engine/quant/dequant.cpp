#include "quant/dequant.h"

#include "quant/dequant_detail.h"
#include "support/instruction_set.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <vector>

namespace organ {

using namespace detail;

float halfToFloat(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1F;
    std::uint32_t mantissa = h & 0x3FFu;
    std::uint32_t bits;
    if (exponent == 0x1F) {
        bits = sign | 0x7F800000u | (mantissa << 13); // infinity or NaN
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {
        // Subnormal half: normalise into a float.
        int shift = 0;
        while ((mantissa & 0x400u) == 0) {
            mantissa <<= 1;
            ++shift;
        }
        bits = sign | (static_cast<std::uint32_t>(113 - shift) << 23) | ((mantissa & 0x3FFu) << 13);
    }
    return std::bit_cast<float>(bits);
}

std::uint16_t floatToHalf(float value) {
    const auto bits = std::bit_cast<std::uint32_t>(value);
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) {
        return static_cast<std::uint16_t>(sign | 0x7E00u); // NaN
    }
    if (magnitude >= 0x477FF000u) {
        return static_cast<std::uint16_t>(sign | 0x7C00u); // rounds past 65504: infinity
    }
    if (magnitude < 0x38800000u) {
        // Subnormal half (or zero): the value in units of 2^-24, rounded to nearest even.
        const float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;
        return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(scaled)));
    }
    // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
    std::uint32_t half = (magnitude >> 13) - (112u << 10);
    const std::uint32_t dropped = magnitude & 0x1FFFu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u) != 0)) {
        ++half;
    }
    return static_cast<std::uint16_t>(sign | half);
}

namespace detail {

const float* halfTable() {
    static const std::vector<float> table = [] {
        std::vector<float> values(65536);
        for (std::uint32_t h = 0; h < values.size(); ++h) {
            values[h] = halfToFloat(static_cast<std::uint16_t>(h));
        }
        return values;
    }();
    return table.data();
}

// An unsigned E4M3 scale (bias 7), halved like MXFP4's; 0 and 0x7F read as zero. Read from a
// table: the decoders take one per 16 values.
float ue4m3Half(std::uint8_t x) {
    static const std::array<float, 256> table = [] {
        std::array<float, 256> values{};
        for (int v = 1; v < 256; ++v) {
            if (v == 0x7F) {
                continue;
            }
            const int exponent = (v >> 3) & 0xF;
            const int mantissa = v & 0x7;
            const float value = exponent == 0
                                    ? std::ldexp(static_cast<float>(mantissa), -9)
                                    : std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
            values[static_cast<std::size_t>(v)] = value * 0.5f;
        }
        return values;
    }();
    return table[x];
}

} // namespace detail

float bfloat16ToFloat(std::uint16_t bits) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

namespace {

template <typename T> void decodePlain(const std::byte* src, std::size_t n, float* out) {
    for (std::size_t i = 0; i < n; ++i) {
        T v;
        std::memcpy(&v, src + i * sizeof(T), sizeof(T));
        out[i] = static_cast<float>(v);
    }
}

void decodeF16(const std::byte* src, std::size_t n, float* out) {
    const float* table = halfTable();
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = table[load16(src + 2 * i)];
    }
}

void decodeBF16(const std::byte* src, std::size_t n, float* out) {
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = bfloat16ToFloat(load16(src + 2 * i));
    }
}

// Q4_0: half d, 16 bytes of nibbles; low nibbles are elements 0-15, high nibbles 16-31.
void decodeQ4_0(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 18, out += 32) {
        const float d = loadHalf(src);
        const std::uint8_t* q = bytes(src + 2);
        for (int j = 0; j < 16; ++j) {
            out[j] = d * ((q[j] & 0x0F) - 8);
            out[j + 16] = d * ((q[j] >> 4) - 8);
        }
    }
}

void decodeQ4_1(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 20, out += 32) {
        const float d = loadHalf(src);
        const float m = loadHalf(src + 2);
        const std::uint8_t* q = bytes(src + 4);
        for (int j = 0; j < 16; ++j) {
            out[j] = d * (q[j] & 0x0F) + m;
            out[j + 16] = d * (q[j] >> 4) + m;
        }
    }
}

// Q5: the fifth bit of element j is bit j of the 32-bit qh.
void decodeQ5_0(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 22, out += 32) {
        const float d = loadHalf(src);
        const std::uint32_t qh = load32(src + 2);
        const std::uint8_t* q = bytes(src + 6);
        for (int j = 0; j < 16; ++j) {
            const int lo = (q[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
            const int hi = (q[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
            out[j] = d * (lo - 16);
            out[j + 16] = d * (hi - 16);
        }
    }
}

void decodeQ5_1(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 24, out += 32) {
        const float d = loadHalf(src);
        const float m = loadHalf(src + 2);
        const std::uint32_t qh = load32(src + 4);
        const std::uint8_t* q = bytes(src + 8);
        for (int j = 0; j < 16; ++j) {
            const int lo = (q[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
            const int hi = (q[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
            out[j] = d * lo + m;
            out[j + 16] = d * hi + m;
        }
    }
}

// Q8_0 and Q8_1 share the quants; Q8_1 also stores the block sum (unused for values).
template <std::size_t kBlockBytes, std::size_t kQuantOffset>
void decodeQ8(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += kBlockBytes, out += 32) {
        const float d = loadHalf(src);
        const auto* q = reinterpret_cast<const std::int8_t*>(src + kQuantOffset);
        for (int j = 0; j < 32; ++j) {
            out[j] = d * q[j];
        }
    }
}

// MXFP4: an E8M0 exponent, then 16 bytes of e2m1 nibbles (low: 0-15, high: 16-31).
void decodeMXFP4(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 17, out += 32) {
        const float d = mxfp4HalfScale(bytes(src)[0]); // 2^(e-127), halved
        const std::uint8_t* q = bytes(src + 1);
        for (int j = 0; j < 16; ++j) {
            out[j] = d * detail::kFp4Doubled[q[j] & 0x0F];
            out[j + 16] = d * detail::kFp4Doubled[q[j] >> 4];
        }
    }
}

// NVFP4: four UE4M3 scales, one per 16 elements, then 32 bytes of e2m1 nibbles; within a
// 16-element group the low nibbles are elements 0-7, the high nibbles 8-15.
void decodeNVFP4(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 36, out += 64) {
        const std::uint8_t* scales = bytes(src);
        const std::uint8_t* q = bytes(src + 4);
        for (int s = 0; s < 4; ++s) {
            const float d = detail::ue4m3Half(scales[s]);
            for (int j = 0; j < 8; ++j) {
                out[s * 16 + j] = d * detail::kFp4Doubled[q[s * 8 + j] & 0x0F];
                out[s * 16 + j + 8] = d * detail::kFp4Doubled[q[s * 8 + j] >> 4];
            }
        }
    }
}

// Q1_0: half d, then one bit per element (bit j%8 of byte j/8): +d or -d.
void decodeQ1_0(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 18, out += 128) {
        const float d = loadHalf(src);
        const std::uint8_t* q = bytes(src + 2);
        for (int j = 0; j < 128; ++j) {
            out[j] = d * (2.0f * static_cast<float>((q[j / 8] >> (j % 8)) & 1) - 1.0f); // branch-free
        }
    }
}

// Q2_0: half d, then two bits per element (bits 2(j%4) of byte j/4): (q - 1) d.
void decodeQ2_0(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 18, out += 64) {
        const float d = loadHalf(src);
        const std::uint8_t* q = bytes(src + 2);
        for (int j = 0; j < 64; ++j) {
            out[j] = d * (((q[j / 4] >> (2 * (j % 4))) & 3) - 1);
        }
    }
}

// TQ1_0: ternary digits packed five to a byte as a base-3 fraction (48 bytes), then four
// to a byte (4 bytes), then half d. Digit n of byte q is floor(3 · (q · 3^n mod 256) / 256).
void decodeTQ1_0(const std::byte* src, std::size_t blocks, float* out) {
    static constexpr std::uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    auto digit = [](std::uint8_t q, int n) {
        const auto shifted = static_cast<std::uint8_t>(q * kPow3[n]);
        return ((static_cast<std::uint16_t>(shifted) * 3) >> 8) - 1;
    };
    for (std::size_t b = 0; b < blocks; ++b, src += 54) {
        const std::uint8_t* qs = bytes(src);
        const std::uint8_t* qh = bytes(src + 48);
        const float d = loadHalf(src + 52);
        // 32 bytes give 160 values (5 × 32), 16 bytes give 80 (5 × 16), 4 bytes give 16 (4 × 4).
        for (int n = 0; n < 5; ++n) {
            for (int m = 0; m < 32; ++m) {
                *out++ = d * digit(qs[m], n);
            }
        }
        for (int n = 0; n < 5; ++n) {
            for (int m = 0; m < 16; ++m) {
                *out++ = d * digit(qs[32 + m], n);
            }
        }
        for (int n = 0; n < 4; ++n) {
            for (int m = 0; m < 4; ++m) {
                *out++ = d * digit(qh[m], n);
            }
        }
    }
}

// TQ2_0: 64 bytes of 2-bit values (element 32l + m of each 128 is bits 2l of byte m), half d.
void decodeTQ2_0(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 66) {
        const std::uint8_t* q = bytes(src);
        const float d = loadHalf(src + 64);
        for (int j = 0; j < 64; j += 32) {
            for (int l = 0; l < 4; ++l) {
                for (int m = 0; m < 32; ++m) {
                    *out++ = d * (((q[j + m] >> (2 * l)) & 3) - 1);
                }
            }
        }
    }
}

constexpr TypeEntry<DecodeFn> kPortableDecoders[] = {
    {TensorType::F32, decodePlain<float>},
    {TensorType::F64, decodePlain<double>},
    {TensorType::F16, decodeF16},
    {TensorType::BF16, decodeBF16},
    {TensorType::I8, decodePlain<std::int8_t>},
    {TensorType::I16, decodePlain<std::int16_t>},
    {TensorType::I32, decodePlain<std::int32_t>},
    {TensorType::I64, decodePlain<std::int64_t>},
    {TensorType::Q4_0, decodeQ4_0},
    {TensorType::Q4_1, decodeQ4_1},
    {TensorType::Q5_0, decodeQ5_0},
    {TensorType::Q5_1, decodeQ5_1},
    {TensorType::Q8_0, decodeQ8<34, 2>},
    {TensorType::Q8_1, decodeQ8<36, 4>},
    {TensorType::MXFP4, decodeMXFP4},
    {TensorType::NVFP4, decodeNVFP4},
    {TensorType::Q1_0, decodeQ1_0},
    {TensorType::Q2_0, decodeQ2_0},
    {TensorType::TQ1_0, decodeTQ1_0},
    {TensorType::TQ2_0, decodeTQ2_0},
};

DecodeFn decoderFor(TensorType type) {
    if (const InstructionSet set = activeInstructionSet(); set != InstructionSet::Portable) {
        if (const DecodeFn fast = x86Decoder(type, set)) {
            return fast;
        }
    }
    if (const DecodeFn plain = entryOf(kPortableDecoders, type)) {
        return plain;
    }
    if (const DecodeFn k = kQuantDecoder(type)) {
        return k;
    }
    return iQuantDecoder(type);
}

} // namespace

void dequantizeBlocks(TensorType type, const std::byte* src, std::size_t blocks, float* out) {
    decoderFor(type)(src, blocks, out);
}

void dequantizeRange(TensorType type, std::span<const std::byte> data, std::uint64_t first, std::size_t count,
                     float* out) {
    if (count == 0) {
        return;
    }
    const auto& traits = traitsOf(type);
    const DecodeFn decode = decoderFor(type);
    const std::uint64_t blockSize = traits.blockSize;
    std::uint64_t block = first / blockSize;
    std::uint64_t skip = first % blockSize;
    std::vector<float> scratch;
    while (count > 0) {
        const std::byte* src = data.data() + block * traits.bytesPerBlock;
        if (skip == 0 && count >= blockSize) {
            const std::size_t whole = static_cast<std::size_t>(count / blockSize);
            decode(src, whole, out);
            out += whole * blockSize;
            count -= whole * blockSize;
            block += whole;
            continue;
        }
        scratch.resize(static_cast<std::size_t>(blockSize));
        decode(src, 1, scratch.data());
        const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(blockSize - skip, count));
        std::copy_n(scratch.begin() + static_cast<std::ptrdiff_t>(skip), take, out);
        out += take;
        count -= take;
        ++block;
        skip = 0;
    }
}

} // namespace organ
