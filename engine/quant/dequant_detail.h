#pragma once

// Shared by the dequantizer's and the quantized products' translation units: loads from unaligned
// block bytes, and the packings of scales that both unpack.
#include "quant/dequant.h"
#include "support/instruction_set.h"

#include <cstring>

namespace organ::detail {

inline std::uint16_t load16(const std::byte* p) {
    std::uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

inline std::uint32_t load32(const std::byte* p) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

inline float loadHalf(const std::byte* p) {
    return halfToFloat(load16(p));
}

inline const std::uint8_t* bytes(const std::byte* p) {
    return reinterpret_cast<const std::uint8_t*>(p);
}

// Q4_K / Q5_K pack eight 6-bit scales and eight 6-bit mins into 12 bytes: sub-block j's pair.
inline void scaleMin(int j, const std::uint8_t* q, int& scale, int& min) {
    if (j < 4) {
        scale = q[j] & 63;
        min = q[j + 4] & 63;
    } else {
        scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// Q3_K's sixteen 6-bit signed scales (−32 … 31) from their 12 bytes: the low 4 bits in bytes 0-7
// (two scales each), the high 2 bits in bytes 8-11 (four each).
inline void q3KScales(const std::uint8_t* packed, int scales[16]) {
    for (int i = 0; i < 16; ++i) {
        const int low = (packed[i % 8] >> (4 * (i / 8))) & 0xF;
        const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
        scales[i] = (low | (high << 4)) - 32;
    }
}

// The 16 non-linear levels of IQ4_NL and IQ4_XS.
inline constexpr std::int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                               1,    13,   25,  38,  53,  69,  89,  113};

// The signed scale (its 6 bits − 32) of sub-block ib of an IQ4_XS super-block at src.
inline int iq4XsScale(const std::byte* src, int ib) {
    const std::uint16_t high = load16(src + 2);
    const std::uint8_t low = bytes(src + 4)[ib / 2];
    return (((low >> (4 * (ib % 2))) & 0xF) | (((high >> (2 * ib)) & 3) << 4)) - 32;
}

// MXFP4's E8M0 scale byte e as a float, halved like the doubled levels: 2^(e − 128), made from its
// bits (subnormal for e < 2), as std::ldexp(1.0f, e - 128) gives it.
inline float mxfp4HalfScale(std::uint8_t e) {
    const std::uint32_t bits = e >= 2 ? static_cast<std::uint32_t>(e - 1) << 23 : 0x00400000u >> (1 - e);
    float d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
}

// The e2m1 values of MXFP4 and NVFP4, doubled (their scales are halved to match).
inline constexpr std::int8_t kFp4Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// NVFP4's unsigned E4M3 scale byte as a float, halved like MXFP4's; 0 and 0x7F read as zero.
float ue4m3Half(std::uint8_t x);

using DecodeFn = void (*)(const std::byte* src, std::size_t blocks, float* out);

// A function of one type, in a table of them.
template <class Fn> struct TypeEntry {
    TensorType type;
    Fn fn;
};

// The function of `type` in `table`; nullptr when it has none.
template <class Fn, std::size_t N> Fn entryOf(const TypeEntry<Fn> (&table)[N], TensorType type) {
    for (const TypeEntry<Fn>& entry : table) {
        if (entry.type == type) {
            return entry.fn;
        }
    }
    return nullptr;
}

// Per family, in their own files.
DecodeFn kQuantDecoder(TensorType type);
DecodeFn iQuantDecoder(TensorType type);
// The SIMD decoders of `set` (dequant_x86.cpp), which give the portable ones' bits; nullptr for
// the types without one.
DecodeFn x86Decoder(TensorType type, InstructionSet set);

} // namespace organ::detail
