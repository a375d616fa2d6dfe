#include "quant/quantize.h"

#include "quant/dequant.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace organ {
namespace {

void putHalf(std::byte* p, float v) {
    const std::uint16_t h = floatToHalf(v);
    std::memcpy(p, &h, 2);
}

// The value of largest magnitude in a block, with its sign.
float signedAbsMax(const float* x, int n) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

void minMax(const float* x, int n, float& min, float& max) {
    min = x[0];
    max = x[0];
    for (int j = 1; j < n; ++j) {
        min = std::min(min, x[j]);
        max = std::max(max, x[j]);
    }
}

// Q4_0: d = max / -8 (max: the value of largest magnitude), q = x/d + 8, truncated, at most 15.
void quantizeQ4_0(const float* x, std::byte* out) {
    const float d = signedAbsMax(x, 32) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    putHalf(out, d);
    for (int j = 0; j < 16; ++j) {
        const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
        const int hi = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
        out[2 + j] = std::byte(static_cast<std::uint8_t>(lo | (hi << 4)));
    }
}

void quantizeQ4_1(const float* x, std::byte* out) {
    float min = 0;
    float max = 0;
    minMax(x, 32, min, max);
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    putHalf(out, d);
    putHalf(out + 2, min);
    for (int j = 0; j < 16; ++j) {
        const int lo = std::min(15, static_cast<int>((x[j] - min) * id + 0.5f));
        const int hi = std::min(15, static_cast<int>((x[j + 16] - min) * id + 0.5f));
        out[4 + j] = std::byte(static_cast<std::uint8_t>(lo | (hi << 4)));
    }
}

// Q5: low 4 bits in the nibbles, the fifth bit of element j in bit j of qh.
void packQ5(const int (&q)[32], std::byte* qhOut, std::byte* qsOut) {
    std::uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
        qsOut[j] = std::byte(static_cast<std::uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4)));
        qh |= static_cast<std::uint32_t>((q[j] >> 4) & 1) << j;
        qh |= static_cast<std::uint32_t>((q[j + 16] >> 4) & 1) << (j + 16);
    }
    std::memcpy(qhOut, &qh, 4);
}

void quantizeQ5_0(const float* x, std::byte* out) {
    const float d = signedAbsMax(x, 32) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    putHalf(out, d);
    int q[32];
    for (int j = 0; j < 32; ++j) {
        q[j] = std::min(31, static_cast<int>(x[j] * id + 16.5f));
    }
    packQ5(q, out + 2, out + 6);
}

void quantizeQ5_1(const float* x, std::byte* out) {
    float min = 0;
    float max = 0;
    minMax(x, 32, min, max);
    const float d = (max - min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    putHalf(out, d);
    putHalf(out + 2, min);
    int q[32];
    for (int j = 0; j < 32; ++j) {
        q[j] = static_cast<int>((x[j] - min) * id + 0.5f) & 0xFF;
    }
    packQ5(q, out + 4, out + 8);
}

// Q8_0: d = absmax / 127, q = round(x / d), ties away from zero.
void quantizeQ8_0(const float* x, std::byte* out) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
        amax = std::max(amax, std::fabs(x[j]));
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    putHalf(out, d);
    for (int j = 0; j < 32; ++j) {
        out[2 + j] = std::byte(static_cast<std::uint8_t>(static_cast<std::int8_t>(std::round(x[j] * id))));
    }
}

} // namespace

std::uint16_t floatToBfloat16(float value) {
    const auto bits = std::bit_cast<std::uint32_t>(value);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
        return static_cast<std::uint16_t>((bits >> 16) | 64);
    }
    return static_cast<std::uint16_t>((bits + (0x7FFFu + ((bits >> 16) & 1u))) >> 16);
}

bool canQuantizeTo(TensorType type) {
    switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
        return true;
    default:
        return false;
    }
}

void quantizeBlocks(TensorType type, const float* in, std::size_t blocks, std::byte* out) {
    const auto& traits = traitsOf(type);
    for (std::size_t b = 0; b < blocks; ++b) {
        const float* x = in + b * traits.blockSize;
        std::byte* dst = out + b * traits.bytesPerBlock;
        switch (type) {
        case TensorType::F32:
            std::memcpy(dst, x, 4);
            break;
        case TensorType::F16:
            putHalf(dst, *x);
            break;
        case TensorType::BF16: {
            const std::uint16_t v = floatToBfloat16(*x);
            std::memcpy(dst, &v, 2);
            break;
        }
        case TensorType::Q8_0:
            quantizeQ8_0(x, dst);
            break;
        case TensorType::Q4_0:
            quantizeQ4_0(x, dst);
            break;
        case TensorType::Q4_1:
            quantizeQ4_1(x, dst);
            break;
        case TensorType::Q5_0:
            quantizeQ5_0(x, dst);
            break;
        case TensorType::Q5_1:
            quantizeQ5_1(x, dst);
            break;
        default:
            return;
        }
    }
}

} // namespace organ
