#include "quant/f16_dot.h"

#include "quant/dequant.h"
#include "quant/product_kernels.h"

#include <cmath>

namespace organ {

namespace {

float valueOf(std::uint16_t half) {
    return halfToFloat(half);
}

float valueOf(float value) {
    return value;
}

// Value l of block b of a column: F32 columns hold their blocks one after another, F16 ones
// (HalfActivations) every 16 halves.
float columnValue(const float* column, std::size_t b, int l) {
    return column[8 * b + static_cast<std::size_t>(l)];
}

float columnValue(const std::uint16_t* column, std::size_t b, int l) {
    return halfToFloat(column[16 * b + static_cast<std::size_t>(l)]);
}

// One row × one column in the SIMD kernels' order: lane l adds values l, l + 8, … by fused
// multiply-adds; the lanes are added as ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
template <class Row, class Column>
void denseTilePortable(const Row* const* rows, const Column* const* columns, std::size_t blocks, float* out) {
    float lanes[8] = {};
    for (std::size_t b = 0; b < blocks; ++b) {
        for (int lane = 0; lane < 8; ++lane) {
            lanes[lane] = std::fma(valueOf(rows[0][8 * b + static_cast<std::size_t>(lane)]),
                                   columnValue(columns[0], b, lane), lanes[lane]);
        }
    }
    const float a = lanes[0] + lanes[4];
    const float b = lanes[1] + lanes[5];
    const float c = lanes[2] + lanes[6];
    const float d = lanes[3] + lanes[7];
    *out = (a + c) + (b + d);
}

} // namespace

void detail::f16TilePortable(const std::uint16_t* const* rows, const std::uint16_t* const* columns,
                             std::size_t blocks, float* out) {
    denseTilePortable(rows, columns, blocks, out);
}

void detail::f32TilePortable(const float* const* rows, const float* const* columns, std::size_t blocks,
                             float* out) {
    denseTilePortable(rows, columns, blocks, out);
}

void detail::halvesPortable(const float* x, std::size_t size, std::size_t count, std::uint16_t* out) {
    for (std::size_t c = 0; c < count; ++c) {
        std::uint16_t* column = out + HalfActivations::columnOffset(size, c);
        for (std::size_t i = 0; i < size; ++i) {
            column[16 * (i / 8) + i % 8] = floatToHalf(x[c * size + i]);
        }
    }
}

void roundToHalf(const float* x, std::size_t count, float* out) {
    for (std::size_t i = 0; i < count; ++i) {
        out[i] = halfToFloat(floatToHalf(x[i]));
    }
}

bool hasF16Product(std::size_t columns) {
    return columns % 8 == 0;
}

HalfActivations::HalfActivations(const float* x, std::size_t size, std::size_t count)
    : m_size(size), m_count(count), m_halves(2 * size * ((count + 1) / 2)) {
    detail::activationQuantizersOf(activeInstructionSet()).halves(x, size, count, m_halves.data());
}

void f16Product(const std::uint16_t* weights, std::size_t rows, const HalfActivations& x, float* out,
                std::size_t outStride) {
    const auto& kernels = detail::kernelsOf(activeInstructionSet()).f16;
    const std::size_t columns = x.size();
    detail::runProduct(
        kernels, rows, x.count(), columns / 8, [&](std::size_t r) { return weights + r * columns; },
        [&](std::size_t c) { return kernels.wide.pairedColumns ? x.pair(c / 2) : x.column(c); },
        [&](std::size_t c) { return x.column(c); }, out, outStride);
}

void f32Product(const float* weights, std::size_t rowStride, std::size_t rows, std::size_t columns,
                const float* x, std::size_t xStride, std::size_t count, float* out, std::size_t outStride) {
    auto columnAt = [&](std::size_t c) { return x + c * xStride; };
    detail::runProduct(
        detail::kernelsOf(activeInstructionSet()).f32, rows, count, columns / 8,
        [&](std::size_t r) { return weights + r * rowStride; }, columnAt, columnAt, out, outStride);
}

} // namespace organ
