#include "quant/quantize.h"

#include "quant/dequant.h"
#include "quant/quantize_detail.h"
#include "quant/scale_fit.h"
#include "support/instruction_set.h"
#include "support/parallel_items.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

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

// std::round (halves away from zero) without a call into the maths library: the truncated
// magnitude, one more where the dropped fraction (exact below 2^23) is at least a half. NaN and
// magnitudes from 2^23 on are whole already and come back as they are, as from std::round.
inline float roundHalfAway(float v) {
    const float magnitude = std::fabs(v);
    if (!(magnitude < 8388608.0f)) {
        return v;
    }
    float whole = static_cast<float>(static_cast<std::int32_t>(magnitude));
    whole += magnitude - whole >= 0.5f ? 1.0f : 0.0f;
    return std::copysign(whole, v);
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
        out[2 + j] = std::byte(static_cast<std::uint8_t>(static_cast<std::int8_t>(roundHalfAway(x[j] * id))));
    }
}

// Q4_0, Q4_1, Q5_0 and Q5_1 with an importance matrix: weights importance · √(σ² + x²) with σ²
// the row's mean square, a weighted fit per block of 32 (ggml's quantize_row_qN_M_impl).
void quantizeRowWeighted(TensorType type, const float* x, std::size_t n, const float* importance,
                         std::byte* out) {
    using namespace detail;
    float sumX2 = 0;
    for (std::size_t j = 0; j < n; ++j) {
        sumX2 += x[j] * x[j];
    }
    const float sigma2 = sumX2 / static_cast<float>(n);
    const auto& traits = traitsOf(type);
    for (std::size_t ib = 0; ib < n / 32; ++ib, out += traits.bytesPerBlock) {
        const float* xb = x + 32 * ib;
        const float* qw = importance + 32 * ib;
        float weight[32];
        for (int j = 0; j < 32; ++j) {
            weight[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
        }
        int q[32];
        if (type == TensorType::Q4_0 || type == TensorType::Q5_0) {
            std::int8_t L[32];
            putHalf(out, fitSymmetric(32, type == TensorType::Q4_0 ? 8 : 16, xb, L, weight));
            std::copy(L, L + 32, q);
        } else {
            std::uint8_t L[32];
            std::uint8_t scratch[32];
            float min = 0;
            const float d = fitWithMin(32, type == TensorType::Q4_1 ? 15 : 31, xb, weight, L, &min, scratch,
                                       -0.9f, 0.05f, 36, false);
            putHalf(out, d);
            putHalf(out + 2, -min);
            std::copy(L, L + 32, q);
        }
        const std::size_t header = type == TensorType::Q4_0 || type == TensorType::Q5_0 ? 2 : 4;
        if (type == TensorType::Q4_0 || type == TensorType::Q4_1) {
            for (int j = 0; j < 16; ++j) {
                out[header + j] = std::byte(static_cast<std::uint8_t>(q[j] | (q[j + 16] << 4)));
            }
        } else {
            packQ5(q, out + header, out + header + 4);
        }
    }
}

using BlockEncoder = void (*)(const float* x, const float* importance, std::byte* out);

BlockEncoder blockEncoder(TensorType type) {
    constexpr std::pair<TensorType, BlockEncoder> kEncoders[] = {
        {TensorType::Q2_K, detail::encodeQ2_K},    {TensorType::Q3_K, detail::encodeQ3_K},
        {TensorType::Q4_K, detail::encodeQ4_K},    {TensorType::Q5_K, detail::encodeQ5_K},
        {TensorType::Q6_K, detail::encodeQ6_K},    {TensorType::IQ4_NL, detail::encodeIQ4_NL},
        {TensorType::IQ4_XS, detail::encodeIQ4_XS}};
    for (const auto& [t, encode] : kEncoders) {
        if (t == type) {
            return encode;
        }
    }
    return nullptr;
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
        return blockEncoder(type) != nullptr;
    }
}

std::string writableTypesText() {
    std::vector<std::string_view> names;
    for (const auto& traits : allTensorTypes()) {
        if (canQuantizeTo(traits.type)) {
            names.push_back(tensorTypeName(traits.type));
        }
    }
    std::string text;
    for (std::size_t i = 0; i < names.size(); ++i) {
        text += std::string(i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + std::string(names[i]);
    }
    return text;
}

bool takesImportance(TensorType type) {
    return canQuantizeTo(type) && traitsOf(type).quantized && type != TensorType::Q8_0;
}

void quantizeBlocks(TensorType type, const float* in, std::size_t blocks, std::byte* out) {
    const auto& traits = traitsOf(type);
    if (const BlockEncoder encode = blockEncoder(type)) {
        for (std::size_t b = 0; b < blocks; ++b) {
            encode(in + b * traits.blockSize, nullptr, out + b * traits.bytesPerBlock);
        }
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    if (activeInstructionSet() != InstructionSet::Portable) {
        switch (type) {
        case TensorType::Q8_0:
            detail::quantizeQ8_0Avx2(in, blocks, out);
            return;
        case TensorType::F16:
            detail::encodeF16Avx2(in, blocks, out);
            return;
        case TensorType::BF16:
            detail::encodeBF16Avx2(in, blocks, out);
            return;
        default:
            break;
        }
    }
#endif
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

void quantizeRows(TensorType type, const float* in, std::size_t rows, std::size_t rowLength,
                  const float* importance, std::byte* out) {
    const auto& traits = traitsOf(type);
    const std::size_t blocksPerRow = rowLength / traits.blockSize;
    if (importance == nullptr || !takesImportance(type)) {
        quantizeBlocks(type, in, rows * blocksPerRow, out);
        return;
    }
    const std::size_t rowBytes = blocksPerRow * traits.bytesPerBlock;
    const BlockEncoder encode = blockEncoder(type);
    for (std::size_t r = 0; r < rows; ++r, in += rowLength, out += rowBytes) {
        if (encode == nullptr) {
            quantizeRowWeighted(type, in, rowLength, importance, out);
            continue;
        }
        for (std::size_t b = 0; b < blocksPerRow; ++b) {
            encode(in + b * traits.blockSize, importance + b * traits.blockSize,
                   out + b * traits.bytesPerBlock);
        }
    }
}

std::size_t rowsPerPiece(std::size_t rowLength) {
    constexpr std::size_t kPieceValues = std::size_t{1} << 16;
    return std::max<std::size_t>(1, kPieceValues / std::max<std::size_t>(1, rowLength));
}

void requantizeRowsParallel(TensorType from, std::span<const std::byte> data, std::uint64_t firstRow,
                            std::size_t rows, std::size_t rowLength, TensorType to, const float* importance,
                            std::byte* out, unsigned threads) {
    const std::size_t pieceRows = rowsPerPiece(rowLength);
    const std::size_t rowBytes = storedBytes(to, rowLength);
    forEachItem((rows + pieceRows - 1) / pieceRows, threads, nullptr, [&](std::size_t piece) {
        thread_local std::vector<float> values;
        const std::size_t first = piece * pieceRows;
        const std::size_t n = std::min(pieceRows, rows - first);
        values.resize(n * rowLength);
        dequantizeRange(from, data, (firstRow + first) * rowLength, values.size(), values.data());
        quantizeRows(to, values.data(), n, rowLength, importance, out + first * rowBytes);
    });
}

} // namespace organ
