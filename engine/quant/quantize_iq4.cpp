// IQ4_NL and IQ4_XS writers: blocks of 32 values on the 16 non-linear levels, the scale
// searched around the one that puts the largest value on the lowest level (ggml-quants.c's
// quantize_row_iq4_nl_impl with 7 tries each way, which llama-quantize uses with and without an
// importance matrix). IQ4_XS stores eight such scales as 6-bit multiples of a super-block scale.
#include "quant/dequant.h"
#include "quant/iq_codebooks.h"
#include "quant/quantize_detail.h"
#include "quant/scale_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace organ::detail {
namespace {

constexpr int kTries = 7;
const std::int8_t* const kLevels = iq::kIq4Levels;

// The index of the level nearest to v (the lower one on a tie), by bisection.
int nearestLevel(float v) {
    if (v <= kLevels[0]) {
        return 0;
    }
    if (v >= kLevels[15]) {
        return 15;
    }
    int lo = 0;
    int hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (v < kLevels[mid]) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    return v - static_cast<float>(kLevels[hi - 1]) < static_cast<float>(kLevels[hi]) - v ? hi - 1 : hi;
}

// The least-squares scale of one block of 32 and its levels in L; 0 for an all-zero block
// (whose L is then left as it was).
float fitBlock(const float* xb, const float* weight, std::uint8_t* L) {
    float amax = 0;
    float max = 0;
    for (int j = 0; j < 32; ++j) {
        const float ax = std::fabs(xb[j]);
        if (ax > amax) {
            amax = ax;
            max = xb[j];
        }
    }
    if (amax < kGroupMaxEps) {
        return 0;
    }
    float d = -max / static_cast<float>(kLevels[0]);
    float id = 1 / d;
    float sumqx = 0;
    float sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
        const int l = nearestLevel(id * xb[j]);
        L[j] = static_cast<std::uint8_t>(l);
        const float q = kLevels[l];
        const float w = weight[j];
        sumqx += w * q * xb[j];
        sumq2 += w * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int attempt = -kTries; attempt <= kTries; ++attempt) {
        id = static_cast<float>(attempt + kLevels[0]) / max;
        sumqx = 0;
        sumq2 = 0;
        for (int j = 0; j < 32; ++j) {
            const float q = kLevels[nearestLevel(id * xb[j])];
            const float w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

// Fits the blocks of `n` values (32 or 256): their scales in `scales`, levels in L.
void fitBlocks(const float* x, const float* importance, int n, float* scales, std::uint8_t* L) {
    float sigma2 = 0;
    for (int j = 0; j < n; ++j) {
        sigma2 += x[j] * x[j];
    }
    sigma2 *= 2.0f / static_cast<float>(n);
    float weight[32];
    for (int ib = 0; ib < n / 32; ++ib) {
        const float* xb = x + 32 * ib;
        for (int j = 0; j < 32; ++j) {
            weight[j] = importance != nullptr ? importance[32 * ib + j] * std::sqrt(sigma2 + xb[j] * xb[j])
                                              : xb[j] * xb[j];
        }
        scales[ib] = fitBlock(xb, weight, L + 32 * ib);
    }
}

// Two levels per byte: byte j of each 16 holds elements j and j + 16 of a block.
void packNibbles(const std::uint8_t* L, int n, std::uint8_t* q) {
    for (int i = 0; i < n / 32; ++i) {
        for (int j = 0; j < 16; ++j) {
            q[16 * i + j] = static_cast<std::uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
        }
    }
}

void putHalf(std::byte* p, float v) {
    const std::uint16_t h = floatToHalf(v);
    std::memcpy(p, &h, 2);
}

} // namespace

void encodeIQ4_NL(const float* x, const float* importance, std::byte* out) {
    std::uint8_t L[32];
    float scale = 0;
    fitBlocks(x, importance, 32, &scale, L);
    putHalf(out, scale);
    // The levels again for the final scale, unrounded (ggml does not round it to half first).
    const float id = scale != 0.0f ? 1 / scale : 0.0f;
    for (int j = 0; j < 32; ++j) {
        L[j] = static_cast<std::uint8_t>(nearestLevel(id * x[j]));
    }
    packNibbles(L, 32, reinterpret_cast<std::uint8_t*>(out + 2));
}

void encodeIQ4_XS(const float* x, const float* importance, std::byte* out) {
    std::uint8_t L[256];
    float scales[8];
    fitBlocks(x, importance, 256, scales, L);
    float maxScale = 0;
    float amaxScale = 0;
    for (float s : scales) {
        if (std::fabs(s) > amaxScale) {
            amaxScale = std::fabs(s);
            maxScale = s;
        }
    }
    const float d = -maxScale / 32;
    putHalf(out, d);
    const float id = d != 0.0f ? 1 / d : 0.0f;
    std::uint16_t scalesHigh = 0;
    auto* scalesLow = reinterpret_cast<std::uint8_t*>(out + 4);
    std::fill(scalesLow, scalesLow + 4, std::uint8_t(0));
    for (int ib = 0; ib < 8; ++ib) {
        const int l = std::clamp(nearestInt(id * scales[ib]), -32, 31);
        const float dl = d * static_cast<float>(l);
        const float idl = dl != 0.0f ? 1 / dl : 0.0f;
        for (int j = 0; j < 32; ++j) {
            L[32 * ib + j] = static_cast<std::uint8_t>(nearestLevel(idl * x[32 * ib + j]));
        }
        const int stored = l + 32;
        scalesLow[ib / 2] |= static_cast<std::uint8_t>((stored & 0xF) << (4 * (ib % 2)));
        scalesHigh = static_cast<std::uint16_t>(scalesHigh | ((stored >> 4) << (2 * ib)));
    }
    std::memcpy(out + 2, &scalesHigh, 2);
    packNibbles(L, 256, reinterpret_cast<std::uint8_t*>(out + 8));
}

} // namespace organ::detail
