#pragma once

// The codebook formats' blocks read as 32 groups of eight values each, for the portable and the
// SIMD decoders alike (dequant_iquants.cpp, dequant_x86.cpp): only how the groups become floats
// differs between them.
#include "quant/dequant_detail.h"
#include "quant/iq_codebooks.h"

#include <bit>

namespace organ::detail {

// IQ2 and IQ3: value j of group g is (scale[g] · byte j of entry[g]) · (−1 where bit j of signs[g]
// is set, else 1).
struct SignedGroups {
    std::uint64_t entry[32];
    std::uint32_t signs[32];
    float scale[32];

    // The sign as a factor: sign bits are random, so a branch would mispredict half the time.
    float value(int i, int j) const {
        return scale[i] * static_cast<int>((entry[i] >> (8 * j)) & 0xFF) *
               (1.0f - 2.0f * static_cast<float>((signs[i] >> j) & 1));
    }
};

// IQ1: value j of group g is scale[g] · (signed byte j of entry[g] + shift[g]).
struct ShiftedGroups {
    std::uint64_t entry[32];
    float shift[32];
    float scale[32];

    float value(int i, int j) const {
        return scale[i] *
               (static_cast<float>(static_cast<std::int8_t>((entry[i] >> (8 * j)) & 0xFF)) + shift[i]);
    }
};

// Seven stored sign bits select eight signs: the eighth makes the count of minuses even.
inline std::uint32_t iqSigns(std::uint32_t seven) {
    const std::uint32_t s = seven & 127;
    return s | ((static_cast<std::uint32_t>(std::popcount(s)) & 1) << 7);
}

// Two IQ3 entries of four bytes as one of eight.
inline std::uint64_t iqPair(std::uint32_t first, std::uint32_t second) {
    return first | (static_cast<std::uint64_t>(second) << 32);
}

// IQ1's shift of a group, chosen by a sign bit: looked up, since a branch on random bits would
// mispredict half the time.
inline constexpr float kIq1Shifts[2] = {0.125f, -0.125f};

// IQ2_XXS (66 bytes): half d, then per 32 elements two u32: four 8-bit grid indices, then four
// 7-bit sign groups and a 4-bit scale in the top bits.
inline void readIQ2_XXS(const std::byte* src, SignedGroups& g) {
    const float d = loadHalf(src);
    for (int ib = 0; ib < 8; ++ib) {
        const std::uint32_t indices = load32(src + 2 + 8 * ib);
        const std::uint32_t signsAndScale = load32(src + 6 + 8 * ib);
        const float db = d * (0.5f + static_cast<float>(signsAndScale >> 28)) * 0.25f;
        for (int l = 0; l < 4; ++l) {
            g.entry[4 * ib + l] = iq::kIq2xxsGrid[(indices >> (8 * l)) & 0xFF];
            g.signs[4 * ib + l] = iqSigns(signsAndScale >> (7 * l));
            g.scale[4 * ib + l] = db;
        }
    }
}

// IQ2_XS (74 bytes): half d, 32 u16 (9-bit grid index, 7 sign bits), 8 bytes of two 4-bit scales.
inline void readIQ2_XS(const std::byte* src, SignedGroups& g) {
    const float d = loadHalf(src);
    const std::uint8_t* scales = bytes(src + 66);
    for (int i = 0; i < 32; ++i) {
        const std::uint16_t q = load16(src + 2 + 2 * i);
        const int nibble = (scales[i / 4] >> (4 * ((i / 2) % 2))) & 0xF;
        g.entry[i] = iq::kIq2xsGrid[q & 511];
        g.signs[i] = iqSigns(q >> 9);
        g.scale[i] = d * (0.5f + nibble) * 0.25f;
    }
}

// IQ2_S (82 bytes): half d, then at 2 qs[32] (low index bits), at 34 signs[32], at 66 qh[8] (2
// high bits per index), at 74 scales[8].
inline void readIQ2_S(const std::byte* src, SignedGroups& g) {
    const float d = loadHalf(src);
    const std::uint8_t* block = bytes(src);
    for (int i = 0; i < 32; ++i) {
        const int high = (block[66 + i / 4] << (8 - 2 * (i % 4))) & 0x300;
        g.entry[i] = iq::kIq2sGrid[block[2 + i] | high];
        g.signs[i] = block[34 + i];
        g.scale[i] = d * (0.5f + ((block[74 + i / 4] >> (4 * ((i / 2) % 2))) & 0xF)) * 0.25f;
    }
}

// IQ3_XXS (98 bytes): half d, 64 grid indices (4 values each), then per 32 elements a u32 of four
// 7-bit sign groups and a 4-bit scale.
inline void readIQ3_XXS(const std::byte* src, SignedGroups& g) {
    const float d = loadHalf(src);
    const std::uint8_t* qs = bytes(src + 2);
    for (int ib = 0; ib < 8; ++ib) {
        const std::uint32_t signsAndScale = load32(src + 66 + 4 * ib);
        const float db = d * (0.5f + static_cast<float>(signsAndScale >> 28)) * 0.5f;
        for (int l = 0; l < 4; ++l) {
            const int i = 4 * ib + l;
            g.entry[i] = iqPair(iq::kIq3xxsGrid[qs[2 * i]], iq::kIq3xxsGrid[qs[2 * i + 1]]);
            g.signs[i] = iqSigns(signsAndScale >> (7 * l));
            g.scale[i] = db;
        }
    }
}

// IQ3_S (110 bytes): half d, qs[64] (low index bits), qh[8] (ninth bits), signs[32], scales[4].
inline void readIQ3_S(const std::byte* src, SignedGroups& g) {
    const float d = loadHalf(src);
    const std::uint8_t* qs = bytes(src + 2);
    const std::uint8_t* qh = bytes(src + 66);
    const std::uint8_t* signs = bytes(src + 74);
    const std::uint8_t* scales = bytes(src + 106);
    for (int i = 0; i < 32; ++i) {
        const int ib = i / 4;
        const int l = i % 4;
        const int scale = (scales[ib / 2] >> (4 * (ib % 2))) & 0xF;
        const int i1 = qs[2 * i] | ((qh[ib] << (8 - 2 * l)) & 256);
        const int i2 = qs[2 * i + 1] | ((qh[ib] << (7 - 2 * l)) & 256);
        g.entry[i] = iqPair(iq::kIq3sGrid[i1], iq::kIq3sGrid[i2]);
        g.signs[i] = signs[i];
        g.scale[i] = d * static_cast<float>(1 + 2 * scale);
    }
}

// IQ1_S (50 bytes): half d, qs[32] (low index bits), qh[8] u16: 3 index bits per group of 8, a
// 3-bit scale and the sign of a ±1/8 shift.
inline void readIQ1_S(const std::byte* src, ShiftedGroups& g) {
    const float d = loadHalf(src);
    const std::uint8_t* qs = bytes(src + 2);
    for (int ib = 0; ib < 8; ++ib) {
        const std::uint16_t qh = load16(src + 34 + 2 * ib);
        const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
        const float shift = kIq1Shifts[qh >> 15];
        for (int l = 0; l < 4; ++l) {
            const int i = 4 * ib + l;
            g.entry[i] = iq::kIq1sGrid[qs[i] | (((qh >> (3 * l)) & 7) << 8)];
            g.shift[i] = shift;
            g.scale[i] = dl;
        }
    }
}

// IQ1_M (56 bytes): qs[32], qh[16], scales[8]; the half super-scale is spread over the top nibbles
// of the four u16 scale words.
inline void readIQ1_M(const std::byte* src, ShiftedGroups& g) {
    const std::uint8_t* qs = bytes(src);
    const std::uint8_t* qh = bytes(src + 32);
    std::uint16_t sc[4];
    for (int i = 0; i < 4; ++i) {
        sc[i] = load16(src + 48 + 2 * i);
    }
    const float d = halfToFloat(static_cast<std::uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                                           ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000)));
    for (int ib = 0; ib < 8; ++ib) {
        const int scales = sc[ib / 2] >> (6 * (ib % 2));
        const float dl[2] = {d * static_cast<float>(2 * (scales & 7) + 1),
                             d * static_cast<float>(2 * ((scales >> 3) & 7) + 1)};
        for (int l = 0; l < 4; ++l) {
            const int i = 4 * ib + l;
            const int high = qh[2 * ib + l / 2] >> (4 * (l % 2));
            g.entry[i] = iq::kIq1sGrid[qs[i] | ((high & 7) << 8)];
            g.shift[i] = kIq1Shifts[(high >> 3) & 1];
            g.scale[i] = dl[l / 2];
        }
    }
}

} // namespace organ::detail
