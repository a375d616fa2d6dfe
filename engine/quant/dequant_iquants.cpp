// IQ quants: indices into lattice codebooks (iq_codebooks.cpp) with sign bits and scales,
// and the non-linear IQ4 formats.
#include "quant/dequant_detail.h"
#include "quant/iq_codebooks.h"

#include <bit>

namespace organ::detail {
namespace {

// Byte j of a codebook entry.
inline int gridByte(std::uint64_t entry, int j) {
    return static_cast<int>((entry >> (8 * j)) & 0xFF);
}
inline int gridSigned(std::uint64_t entry, int j) {
    return static_cast<std::int8_t>(gridByte(entry, j));
}

// Seven stored sign bits select eight signs: the eighth makes the count of minuses even.
inline std::uint8_t signsOf(std::uint32_t seven) {
    const auto s = static_cast<std::uint8_t>(seven & 127);
    return static_cast<std::uint8_t>(s | ((std::popcount(static_cast<unsigned>(s)) & 1) << 7));
}

// ±1 without a branch: sign bits are random, so a branch would mispredict half the time.
inline float sign(std::uint8_t signs, int j) {
    return 1.0f - 2.0f * static_cast<float>((signs >> j) & 1);
}

constexpr float kIq1Delta = 0.125f;

// IQ2_XXS: half d, then per 32 elements two u32: four 8-bit grid indices, then four
// 7-bit sign groups and a 4-bit scale in the top bits.
void decodeIQ2_XXS(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 66) {
        const float d = loadHalf(src);
        for (int ib = 0; ib < 8; ++ib) {
            const std::uint32_t indices = load32(src + 2 + 8 * ib);
            const std::uint32_t signsAndScale = load32(src + 6 + 8 * ib);
            const float db = d * (0.5f + static_cast<float>(signsAndScale >> 28)) * 0.25f;
            for (int l = 0; l < 4; ++l) {
                const std::uint64_t grid = iq::kIq2xxsGrid[(indices >> (8 * l)) & 0xFF];
                const std::uint8_t signs = signsOf(signsAndScale >> (7 * l));
                for (int j = 0; j < 8; ++j) {
                    *out++ = db * gridByte(grid, j) * sign(signs, j);
                }
            }
        }
    }
}

// IQ2_XS: half d, 32 u16 (9-bit grid index, 7 sign bits), 8 bytes of two 4-bit scales.
void decodeIQ2_XS(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 74) {
        const float d = loadHalf(src);
        const std::uint8_t* scales = bytes(src + 66);
        for (int ib = 0; ib < 8; ++ib) {
            const float db[2] = {d * (0.5f + (scales[ib] & 0xF)) * 0.25f,
                                 d * (0.5f + (scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; ++l) {
                const std::uint16_t q = load16(src + 2 + 2 * (4 * ib + l));
                const std::uint64_t grid = iq::kIq2xsGrid[q & 511];
                const std::uint8_t signs = signsOf(q >> 9);
                for (int j = 0; j < 8; ++j) {
                    *out++ = db[l / 2] * gridByte(grid, j) * sign(signs, j);
                }
            }
        }
    }
}

// IQ2_S: half d, qs[32] (low index bits), signs[32], qh[8] (2 high bits per index), scales[8].
void decodeIQ2_S(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 82) {
        const float d = loadHalf(src);
        const std::uint8_t* qs = bytes(src + 2);
        const std::uint8_t* signs = bytes(src + 34);
        const std::uint8_t* qh = bytes(src + 66);
        const std::uint8_t* scales = bytes(src + 74);
        for (int ib = 0; ib < 8; ++ib, qs += 4, signs += 4) {
            const float db[2] = {d * (0.5f + (scales[ib] & 0xF)) * 0.25f,
                                 d * (0.5f + (scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; ++l) {
                const int index = qs[l] | ((qh[ib] << (8 - 2 * l)) & 0x300);
                const std::uint64_t grid = iq::kIq2sGrid[index];
                for (int j = 0; j < 8; ++j) {
                    *out++ = db[l / 2] * gridByte(grid, j) * sign(signs[l], j);
                }
            }
        }
    }
}

// IQ3_XXS: half d, 64 grid indices (4 values each), then per 32 elements a u32 of four
// 7-bit sign groups and a 4-bit scale.
void decodeIQ3_XXS(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 98) {
        const float d = loadHalf(src);
        const std::uint8_t* qs = bytes(src + 2);
        for (int ib = 0; ib < 8; ++ib, qs += 8) {
            const std::uint32_t signsAndScale = load32(src + 66 + 4 * ib);
            const float db = d * (0.5f + static_cast<float>(signsAndScale >> 28)) * 0.5f;
            for (int l = 0; l < 4; ++l) {
                const std::uint8_t signs = signsOf(signsAndScale >> (7 * l));
                const std::uint32_t g1 = iq::kIq3xxsGrid[qs[2 * l]];
                const std::uint32_t g2 = iq::kIq3xxsGrid[qs[2 * l + 1]];
                for (int j = 0; j < 4; ++j) {
                    out[j] = db * gridByte(g1, j) * sign(signs, j);
                    out[j + 4] = db * gridByte(g2, j) * sign(signs, j + 4);
                }
                out += 8;
            }
        }
    }
}

// IQ3_S: half d, qs[64] (low index bits), qh[8] (ninth bits), signs[32], scales[4].
void decodeIQ3_S(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 110) {
        const float d = loadHalf(src);
        const std::uint8_t* qs = bytes(src + 2);
        const std::uint8_t* qh = bytes(src + 66);
        const std::uint8_t* signs = bytes(src + 74);
        const std::uint8_t* scales = bytes(src + 106);
        for (int ib = 0; ib < 8; ++ib, qs += 8, signs += 4) {
            const int scale = ib % 2 == 0 ? (scales[ib / 2] & 0xF) : (scales[ib / 2] >> 4);
            const float db = d * static_cast<float>(1 + 2 * scale);
            for (int l = 0; l < 4; ++l) {
                const int i1 = qs[2 * l] | ((qh[ib] << (8 - 2 * l)) & 256);
                const int i2 = qs[2 * l + 1] | ((qh[ib] << (7 - 2 * l)) & 256);
                const std::uint32_t g1 = iq::kIq3sGrid[i1];
                const std::uint32_t g2 = iq::kIq3sGrid[i2];
                for (int j = 0; j < 4; ++j) {
                    out[j] = db * gridByte(g1, j) * sign(signs[l], j);
                    out[j + 4] = db * gridByte(g2, j) * sign(signs[l], j + 4);
                }
                out += 8;
            }
        }
    }
}

// IQ1_S: half d, qs[32] (low index bits), qh[8] u16: 3 index bits per group of 8, a 3-bit
// scale and the sign of a ±1/8 shift.
void decodeIQ1_S(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 50) {
        const float d = loadHalf(src);
        const std::uint8_t* qs = bytes(src + 2);
        for (int ib = 0; ib < 8; ++ib, qs += 4) {
            const std::uint16_t qh = load16(src + 34 + 2 * ib);
            const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
            const float delta = (qh & 0x8000) != 0 ? -kIq1Delta : kIq1Delta;
            for (int l = 0; l < 4; ++l) {
                const std::uint64_t grid = iq::kIq1sGrid[qs[l] | (((qh >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; ++j) {
                    *out++ = dl * (static_cast<float>(gridSigned(grid, j)) + delta);
                }
            }
        }
    }
}

// IQ1_M: qs[32], qh[16], scales[8]; the half super-scale is spread over the top nibbles
// of the four u16 scale words.
void decodeIQ1_M(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 56) {
        const std::uint8_t* qs = bytes(src);
        const std::uint8_t* qh = bytes(src + 32);
        std::uint16_t sc[4];
        for (int i = 0; i < 4; ++i) {
            sc[i] = load16(src + 48 + 2 * i);
        }
        const auto superScale = static_cast<std::uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                                           ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
        const float d = halfToFloat(superScale);
        for (int ib = 0; ib < 8; ++ib, qs += 4, qh += 2) {
            const float dl1 = d * static_cast<float>(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 7) + 1);
            const float dl2 = d * static_cast<float>(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1);
            const int index[4] = {qs[0] | ((qh[0] << 8) & 0x700), qs[1] | ((qh[0] << 4) & 0x700),
                                  qs[2] | ((qh[1] << 8) & 0x700), qs[3] | ((qh[1] << 4) & 0x700)};
            const float delta[4] = {
                (qh[0] & 0x08) != 0 ? -kIq1Delta : kIq1Delta, (qh[0] & 0x80) != 0 ? -kIq1Delta : kIq1Delta,
                (qh[1] & 0x08) != 0 ? -kIq1Delta : kIq1Delta, (qh[1] & 0x80) != 0 ? -kIq1Delta : kIq1Delta};
            for (int l = 0; l < 4; ++l) {
                const std::uint64_t grid = iq::kIq1sGrid[index[l]];
                const float dl = l < 2 ? dl1 : dl2;
                for (int j = 0; j < 8; ++j) {
                    *out++ = dl * (static_cast<float>(gridSigned(grid, j)) + delta[l]);
                }
            }
        }
    }
}

// IQ4_NL: half d, 16 bytes of nibbles indexing the non-linear levels.
void decodeIQ4_NL(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 18, out += 32) {
        const float d = loadHalf(src);
        const std::uint8_t* q = bytes(src + 2);
        for (int j = 0; j < 16; ++j) {
            out[j] = d * iq::kIq4Levels[q[j] & 0xF];
            out[j + 16] = d * iq::kIq4Levels[q[j] >> 4];
        }
    }
}

// IQ4_XS: half d, u16 high scale bits, 4 bytes of low scale nibbles, 128 bytes of nibbles.
void decodeIQ4_XS(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 136) {
        const float d = loadHalf(src);
        const std::uint16_t scalesHigh = load16(src + 2);
        const std::uint8_t* scalesLow = bytes(src + 4);
        const std::uint8_t* q = bytes(src + 8);
        for (int ib = 0; ib < 8; ++ib, q += 16, out += 32) {
            const int ls =
                ((scalesLow[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((scalesHigh >> (2 * ib)) & 3) << 4);
            const float dl = d * static_cast<float>(ls - 32);
            for (int j = 0; j < 16; ++j) {
                out[j] = dl * iq::kIq4Levels[q[j] & 0xF];
                out[j + 16] = dl * iq::kIq4Levels[q[j] >> 4];
            }
        }
    }
}

} // namespace

DecodeFn iQuantDecoder(TensorType type) {
    switch (type) {
    case TensorType::IQ2_XXS:
        return decodeIQ2_XXS;
    case TensorType::IQ2_XS:
        return decodeIQ2_XS;
    case TensorType::IQ2_S:
        return decodeIQ2_S;
    case TensorType::IQ3_XXS:
        return decodeIQ3_XXS;
    case TensorType::IQ3_S:
        return decodeIQ3_S;
    case TensorType::IQ1_S:
        return decodeIQ1_S;
    case TensorType::IQ1_M:
        return decodeIQ1_M;
    case TensorType::IQ4_NL:
        return decodeIQ4_NL;
    case TensorType::IQ4_XS:
        return decodeIQ4_XS;
    default:
        return nullptr;
    }
}

} // namespace organ::detail
