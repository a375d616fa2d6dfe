#include "quant/quant_dot.h"

#include "quant/dequant.h"
#include "quant/kquant_dot.h"
#include "quant/product_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace organ {
namespace {

using detail::Q80Block;

// A Q8_0 weight block: an F16 scale and 32 int8 values (34 bytes, unaligned).
constexpr std::size_t kQ8Bytes = 34;

float weightScale(const std::byte* block) {
    std::uint16_t bits;
    std::memcpy(&bits, block, 2);
    return halfToFloat(bits);
}

// In the order the SIMD kernels add: eight lanes of four products each, every block's lane
// sums scaled and fused into the lane, the lanes added pairwise at the end — so that every
// kernel gives the same bits.
float dotPortable(const std::byte* row, const Q80Block* x, std::size_t blocks) {
    float lanes[8] = {};
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::byte* w = row + b * kQ8Bytes;
        const auto* q = reinterpret_cast<const std::int8_t*>(w + 2);
        const float scale = weightScale(w) * x[b].scale;
        for (int lane = 0; lane < 8; ++lane) {
            std::int32_t s = 0;
            for (int k = 4 * lane; k < 4 * lane + 4; ++k) {
                s += std::int32_t(q[k]) * std::int32_t(x[b].values[k]);
            }
            lanes[lane] = std::fma(scale, static_cast<float>(s), lanes[lane]);
        }
    }
    const float a = lanes[0] + lanes[4];
    const float b = lanes[1] + lanes[5];
    const float c = lanes[2] + lanes[6];
    const float d = lanes[3] + lanes[7];
    return (a + c) + (b + d);
}

} // namespace

void detail::q80TilePortable(const std::byte* const* rows, const Q80Block* const* columns, std::size_t blocks,
                             float* out) {
    *out = dotPortable(rows[0], columns[0], blocks);
}

bool hasQuantizedProduct(TensorType type) {
    return type == TensorType::Q8_0 || type == TensorType::IQ4_NL;
}

void detail::quantizeQ80Portable(const float* x, std::size_t blocks, Q80Block* out) {
    for (std::size_t b = 0; b < blocks; ++b) {
        const float* v = x + b * 32;
        float amax = 0;
        for (int i = 0; i < 32; ++i) {
            amax = std::max(amax, std::abs(v[i]));
        }
        // As llama.cpp's x86 code: times 127/amax, rounded to nearest even.
        const float inverse = amax != 0 ? 127.0f / amax : 0.0f;
        out[b].scale = halfToFloat(floatToHalf(amax / 127.0f));
        for (int i = 0; i < 32; ++i) {
            out[b].values[i] = static_cast<std::int8_t>(std::nearbyint(v[i] * inverse));
        }
    }
}

QuantizedActivations::QuantizedActivations(const float* x, std::size_t columns, std::size_t count)
    : m_columns(columns), m_count(count), m_blocks(columns / 32 * count) {
    detail::activationQuantizersOf(activeInstructionSet()).q80(x, m_blocks.size(), m_blocks.data());
}

void quantizedProduct(TensorType type, const std::byte* weights, std::size_t rows,
                      const QuantizedActivations& x, float* out, std::size_t outStride) {
    if (type == TensorType::IQ4_NL) {
        iq4NlProduct(weights, rows, x, out, outStride);
        return;
    }
    if (type != TensorType::Q8_0) {
        return;
    }
    const std::size_t blocks = x.columns() / 32;
    const std::size_t rowBytes = blocks * kQ8Bytes;
    const detail::Q80Kernels& kernels = detail::kernelsOf(activeInstructionSet()).q80;
    auto rowAt = [&](std::size_t r) { return weights + r * rowBytes; };
    auto columnAt = [&](std::size_t c) { return x.column(c); };
    detail::runProduct(kernels, rows, x.count(), blocks, rowAt, columnAt, columnAt, out, outStride);
}

} // namespace organ
