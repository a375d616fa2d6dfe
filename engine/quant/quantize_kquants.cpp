// K-quant writers: Q2_K … Q6_K super-blocks of 256 values, encoded as llama-quantize encodes
// them (ggml-quants.c's quantize_row_qN_K_ref without an importance matrix, the _impl variants
// with one). The layouts are those dequant_kquants.cpp reads.
#include "quant/dequant.h"
#include "quant/quantize_detail.h"
#include "quant/scale_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace organ::detail {
namespace {

constexpr int kSuper = 256;

// Stores a float as half and gives back the half's value, which the levels are fitted to.
float putHalf(std::byte* p, float v) {
    const std::uint16_t h = floatToHalf(v);
    std::memcpy(p, &h, 2);
    return halfToFloat(h);
}

std::uint8_t* u8(std::byte* p) {
    return reinterpret_cast<std::uint8_t*>(p);
}

// Four 2-bit levels per byte: byte l of each 32-byte half holds elements l, l+32, l+64, l+96.
void packTwoBit(const std::uint8_t* L, std::uint8_t* qs) {
    for (int j = 0; j < kSuper; j += 128) {
        for (int l = 0; l < 32; ++l) {
            qs[j / 4 + l] = static_cast<std::uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                                      (L[j + l + 96] << 6));
        }
    }
}

// σ² of a super-block for the weights importance · √(σ² + x²): `factor` · Σx² / 256.
float superSigma2(const float* x, float factor) {
    float sumx2 = 0;
    for (int j = 0; j < kSuper; ++j) {
        sumx2 += x[j] * x[j];
    }
    return factor * sumx2 / kSuper;
}

// The weights importance · √(σ² + x²) of n values, and their sum.
float importanceWeights(const float* importance, const float* x, float sigma2, int n, float* weights) {
    for (int l = 0; l < n; ++l) {
        weights[l] = importance[l] * std::sqrt(sigma2 + x[l] * x[l]);
    }
    float sum = 0;
    for (int l = 0; l < n; ++l) {
        sum += weights[l];
    }
    return sum;
}

// Q4_K and Q5_K: eight 6-bit scales and eight 6-bit minimums in 12 bytes.
void packScalesMins(const std::uint8_t* ls, const std::uint8_t* lm, std::uint8_t* scales) {
    std::fill(scales, scales + 12, std::uint8_t(0));
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            scales[j] = ls[j];
            scales[j + 4] = lm[j];
        } else {
            scales[j + 4] = static_cast<std::uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
            scales[j - 4] |= static_cast<std::uint8_t>((ls[j] >> 4) << 6);
            scales[j] |= static_cast<std::uint8_t>((lm[j] >> 4) << 6);
        }
    }
}

void unpackScaleMin(int j, const std::uint8_t* q, std::uint8_t& scale, std::uint8_t& min) {
    if (j < 4) {
        scale = q[j] & 63;
        min = q[j + 4] & 63;
    } else {
        scale = static_cast<std::uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        min = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// Sub-block scales and minimums fitted, the levels of Q4_K/Q5_K (nmax 15 or 31) again from
// the stored half scales. Fills scales[12] at `scaleBytes` and L; d and dmin at `dBytes`.
void fitQ4Q5(const float* x, const float* importance, int nmax, std::byte* dBytes, std::uint8_t* scaleBytes,
             std::uint8_t* L) {
    std::uint8_t scratch[32];
    float weights[32];
    float mins[8];
    float scales[8];
    std::uint8_t ls[8];
    std::uint8_t lm[8];
    float d = 0;
    float dmin = 0;
    if (importance == nullptr) {
        float maxScale = 0;
        float maxMin = 0;
        const bool q4 = nmax == 15;
        for (int j = 0; j < 8; ++j) {
            const float* xb = x + 32 * j;
            float sumX2 = 0;
            for (int l = 0; l < 32; ++l) {
                sumX2 += xb[l] * xb[l];
            }
            const float avX = std::sqrt(sumX2 / 32);
            for (int l = 0; l < 32; ++l) {
                weights[l] = avX + std::fabs(xb[l]);
            }
            scales[j] = fitWithMin(32, nmax, xb, weights, L + 32 * j, &mins[j], scratch, q4 ? -1.0f : -0.5f,
                                   0.1f, q4 ? 20 : 15, false);
            if (scales[j] > maxScale) {
                maxScale = scales[j];
            }
            if (mins[j] > maxMin) {
                maxMin = mins[j];
            }
        }
        const float invScale = maxScale > 0 ? 63.0f / maxScale : 0.0f;
        const float invMin = maxMin > 0 ? 63.0f / maxMin : 0.0f;
        for (int j = 0; j < 8; ++j) {
            ls[j] = std::min<std::uint8_t>(63, static_cast<std::uint8_t>(nearestInt(invScale * scales[j])));
            lm[j] = std::min<std::uint8_t>(63, static_cast<std::uint8_t>(nearestInt(invMin * mins[j])));
        }
        d = maxScale / 63.0f;
        dmin = maxMin / 63.0f;
    } else {
        float sw[8];
        const float sigma2 = superSigma2(x, 2);
        for (int j = 0; j < 8; ++j) {
            const float* xb = x + 32 * j;
            sw[j] = importanceWeights(importance + 32 * j, xb, sigma2, 32, weights);
            scales[j] =
                fitWithMin(32, nmax, xb, weights, L + 32 * j, &mins[j], scratch, -0.9f, 0.05f, 36, false);
        }
        d = fitPositive(8, 63, scales, ls, sw);
        dmin = fitPositive(8, 63, mins, lm, sw);
        // Only Q5_K caps levels that wrapped around (a negative fit); Q4_K packs them as they are.
        for (int j = 0; j < 8 && nmax == 31; ++j) {
            ls[j] = std::min<std::uint8_t>(63, ls[j]);
            lm[j] = std::min<std::uint8_t>(63, lm[j]);
        }
    }
    packScalesMins(ls, lm, scaleBytes);
    const float dq = putHalf(dBytes, d);
    const float mq = putHalf(dBytes + 2, dmin);
    for (int j = 0; j < 8; ++j) {
        std::uint8_t sc = 0;
        std::uint8_t m = 0;
        unpackScaleMin(j, scaleBytes, sc, m);
        const float ds = dq * static_cast<float>(sc);
        if (ds == 0.0f) {
            continue;
        }
        const float dm = mq * static_cast<float>(m);
        for (int ii = 0; ii < 32; ++ii) {
            L[32 * j + ii] =
                static_cast<std::uint8_t>(std::clamp(nearestInt((x[32 * j + ii] + dm) / ds), 0, nmax));
        }
    }
}

// Q3_K's sixteen 6-bit scales (stored + 32): low nibbles in bytes 0-7, high pairs in 8-11.
void packQ3Scales(const int* levels, std::uint8_t* scales) {
    std::fill(scales, scales + 12, std::uint8_t(0));
    for (int j = 0; j < 16; ++j) {
        int l = levels[j];
        if (j < 8) {
            scales[j] = static_cast<std::uint8_t>(l & 0xF);
        } else {
            scales[j - 8] |= static_cast<std::uint8_t>((l & 0xF) << 4);
        }
        l >>= 4;
        scales[j % 4 + 8] |= static_cast<std::uint8_t>(l << (2 * (j / 4)));
    }
}

} // namespace

void encodeQ2_K(const float* x, const float* importance, std::byte* out) {
    std::uint8_t L[kSuper];
    std::uint8_t scratch[16];
    float weights[16];
    float mins[16];
    float scales[16];
    std::uint8_t* packed = u8(out);
    if (importance == nullptr) {
        float maxScale = 0;
        float maxMin = 0;
        for (int j = 0; j < 16; ++j) {
            for (int l = 0; l < 16; ++l) {
                weights[l] = std::fabs(x[16 * j + l]);
            }
            scales[j] =
                fitWithMin(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], scratch, -0.5f, 0.1f, 15, true);
            if (scales[j] > maxScale) {
                maxScale = scales[j];
            }
            if (mins[j] > maxMin) {
                maxMin = mins[j];
            }
        }
        if (maxScale > 0) {
            const float iscale = 15.0f / maxScale;
            for (int j = 0; j < 16; ++j) {
                packed[j] = static_cast<std::uint8_t>(nearestInt(iscale * scales[j]));
            }
            putHalf(out + 80, maxScale / 15.0f);
        } else {
            std::fill(packed, packed + 16, std::uint8_t(0));
            putHalf(out + 80, 0.0f);
        }
        if (maxMin > 0) {
            const float iscale = 15.0f / maxMin;
            for (int j = 0; j < 16; ++j) {
                packed[j] |= static_cast<std::uint8_t>(nearestInt(iscale * mins[j]) << 4);
            }
            putHalf(out + 82, maxMin / 15.0f);
        } else {
            putHalf(out + 82, 0.0f);
        }
    } else {
        float sw[16];
        std::uint8_t ls[16];
        std::uint8_t lm[16];
        const float sigma2 = superSigma2(x, 1);
        for (int j = 0; j < 16; ++j) {
            sw[j] = importanceWeights(importance + 16 * j, x + 16 * j, sigma2, 16, weights);
            scales[j] = fitWithMin(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], scratch, -0.9f, 0.05f,
                                   36, false);
        }
        putHalf(out + 80, fitPositive(16, 15, scales, ls, sw));
        putHalf(out + 82, fitPositive(16, 15, mins, lm, sw));
        for (int j = 0; j < 16; ++j) {
            packed[j] = static_cast<std::uint8_t>(ls[j] | (lm[j] << 4));
        }
    }
    std::uint16_t halves[2];
    std::memcpy(halves, out + 80, 4);
    const float dq = halfToFloat(halves[0]);
    const float mq = halfToFloat(halves[1]);
    for (int j = 0; j < 16; ++j) {
        const float d = dq * static_cast<float>(packed[j] & 0xF);
        if (d == 0.0f) {
            continue;
        }
        const float m = mq * static_cast<float>(packed[j] >> 4);
        for (int ii = 0; ii < 16; ++ii) {
            L[16 * j + ii] =
                static_cast<std::uint8_t>(std::clamp(nearestInt((x[16 * j + ii] + m) / d), 0, 3));
        }
    }
    packTwoBit(L, packed + 16);
}

void encodeQ3_K(const float* x, const float* importance, std::byte* out) {
    std::int8_t L[kSuper];
    float scales[16];
    int levels[16];
    std::uint8_t* hmask = u8(out);
    std::uint8_t* qs = u8(out + 32);
    std::uint8_t* packed = u8(out + 96);
    float d = 0;
    if (importance == nullptr) {
        float maxScale = 0;
        float amax = 0;
        for (int j = 0; j < 16; ++j) {
            scales[j] = fitSymmetricRefined(16, 4, x + 16 * j, L + 16 * j);
            const float scale = std::fabs(scales[j]);
            if (scale > amax) {
                amax = scale;
                maxScale = scales[j];
            }
        }
        if (maxScale != 0.0f) {
            const float iscale = -32.0f / maxScale;
            for (int j = 0; j < 16; ++j) {
                const auto l = static_cast<std::int8_t>(nearestInt(iscale * scales[j]));
                levels[j] = std::clamp<int>(l, -32, 31) + 32;
            }
            d = 1 / iscale;
        } else {
            std::fill(levels, levels + 16, 0);
        }
    } else {
        float weights[16];
        float sw[16];
        std::int8_t ls[16];
        const float sigma2 = superSigma2(x, 2);
        for (int j = 0; j < 16; ++j) {
            sw[j] = importanceWeights(importance + 16 * j, x + 16 * j, sigma2, 16, weights);
            scales[j] = fitSymmetric(16, 4, x + 16 * j, L + 16 * j, weights);
        }
        d = fitSymmetric(16, 32, scales, ls, sw);
        for (int j = 0; j < 16; ++j) {
            levels[j] = ls[j];
        }
    }
    packQ3Scales(levels, packed);
    const float dq = putHalf(out + 108, d);
    for (int j = 0; j < 16; ++j) {
        int sc = j < 8 ? packed[j] & 0xF : packed[j - 8] >> 4;
        sc = (sc | (((packed[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
        const float ds = dq * static_cast<float>(sc);
        if (ds == 0.0f) {
            continue;
        }
        for (int ii = 0; ii < 16; ++ii) {
            L[16 * j + ii] = static_cast<std::int8_t>(std::clamp(nearestInt(x[16 * j + ii] / ds), -4, 3) + 4);
        }
    }
    // The third bit of the first 32 values in bit 0 of hmask[0..31], of the next 32 in bit 1…
    std::fill(hmask, hmask + 32, std::uint8_t(0));
    std::uint8_t levels2[kSuper];
    for (int j = 0; j < kSuper; ++j) {
        int l = L[j];
        if (l > 3) {
            hmask[j % 32] |= static_cast<std::uint8_t>(1u << (j / 32));
            l -= 4;
        }
        levels2[j] = static_cast<std::uint8_t>(l);
    }
    packTwoBit(levels2, qs);
}

void encodeQ4_K(const float* x, const float* importance, std::byte* out) {
    std::uint8_t L[kSuper];
    fitQ4Q5(x, importance, 15, out, u8(out + 4), L);
    std::uint8_t* q = u8(out + 16);
    for (int j = 0; j < kSuper; j += 64, q += 32) {
        for (int l = 0; l < 32; ++l) {
            q[l] = static_cast<std::uint8_t>(L[j + l] | (L[j + l + 32] << 4));
        }
    }
}

void encodeQ5_K(const float* x, const float* importance, std::byte* out) {
    std::uint8_t L[kSuper];
    fitQ4Q5(x, importance, 31, out, u8(out + 4), L);
    std::uint8_t* qh = u8(out + 16);
    std::uint8_t* ql = u8(out + 48);
    std::fill(qh, qh + 32, std::uint8_t(0));
    std::uint8_t m1 = 1;
    std::uint8_t m2 = 2;
    for (int n = 0; n < kSuper; n += 64, ql += 32, m1 <<= 2, m2 <<= 2) {
        for (int j = 0; j < 32; ++j) {
            int l1 = L[n + j];
            if (l1 > 15) {
                l1 -= 16;
                qh[j] |= m1;
            }
            int l2 = L[n + j + 32];
            if (l2 > 15) {
                l2 -= 16;
                qh[j] |= m2;
            }
            ql[j] = static_cast<std::uint8_t>(l1 | (l2 << 4));
        }
    }
}

void encodeQ6_K(const float* x, const float* importance, std::byte* out) {
    std::int8_t L[kSuper];
    float scales[16];
    float maxScale = 0;
    float maxAbsScale = 0;
    for (int ib = 0; ib < 16; ++ib) {
        // With an importance matrix its weights are used as they are (ggml leaves σ out here).
        scales[ib] =
            fitSymmetric(16, 32, x + 16 * ib, L + 16 * ib, importance ? importance + 16 * ib : nullptr);
        const float absScale = std::fabs(scales[ib]);
        if (absScale > maxAbsScale) {
            maxAbsScale = absScale;
            maxScale = scales[ib];
        }
    }
    if (maxAbsScale < kGroupMaxEps) {
        std::memset(out, 0, 210);
        return;
    }
    const float iscale = -128.0f / maxScale;
    const float dq = putHalf(out + 208, 1 / iscale);
    auto* sc = reinterpret_cast<std::int8_t*>(out + 192);
    for (int ib = 0; ib < 16; ++ib) {
        sc[ib] = static_cast<std::int8_t>(std::min(127, nearestInt(iscale * scales[ib])));
    }
    for (int j = 0; j < 16; ++j) {
        const float d = dq * static_cast<float>(sc[j]);
        if (d == 0.0f) {
            continue;
        }
        for (int ii = 0; ii < 16; ++ii) {
            L[16 * j + ii] =
                static_cast<std::int8_t>(std::clamp(nearestInt(x[16 * j + ii] / d), -32, 31) + 32);
        }
    }
    std::uint8_t* ql = u8(out);
    std::uint8_t* qh = u8(out + 128);
    for (int j = 0; j < kSuper; j += 128, ql += 64, qh += 32) {
        for (int l = 0; l < 32; ++l) {
            const int q1 = L[j + l] & 0xF;
            const int q2 = L[j + l + 32] & 0xF;
            const int q3 = L[j + l + 64] & 0xF;
            const int q4 = L[j + l + 96] & 0xF;
            ql[l] = static_cast<std::uint8_t>(q1 | (q3 << 4));
            ql[l + 32] = static_cast<std::uint8_t>(q2 | (q4 << 4));
            qh[l] = static_cast<std::uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                              ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
        }
    }
}

} // namespace organ::detail
