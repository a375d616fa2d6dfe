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

// One row × one column in the SIMD kernels' order: lane l adds values l, l + 8, … by fused
// multiply-adds; the lanes are added as ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
template <class Row>
void denseTilePortable(const Row* const* rows, const float* const* columns, std::size_t blocks, float* out) {
    float lanes[8] = {};
    for (std::size_t b = 0; b < blocks; ++b) {
        for (int lane = 0; lane < 8; ++lane) {
            const std::size_t i = 8 * b + static_cast<std::size_t>(lane);
            lanes[lane] = std::fma(valueOf(rows[0][i]), columns[0][i], lanes[lane]);
        }
    }
    const float a = lanes[0] + lanes[4];
    const float b = lanes[1] + lanes[5];
    const float c = lanes[2] + lanes[6];
    const float d = lanes[3] + lanes[7];
    *out = (a + c) + (b + d);
}

template <class Row>
void denseProduct(const detail::TileKernels<Row, float>& kernels, const Row* weights, std::size_t rowStride,
                  std::size_t rows, std::size_t columns, const float* x, std::size_t xStride,
                  std::size_t count, float* out, std::size_t outStride) {
    auto rowAt = [&](std::size_t r) { return weights + r * rowStride; };
    auto columnAt = [&](std::size_t c) { return x + c * xStride; };
    const auto wide = static_cast<std::size_t>(kernels.wide.columns);
    const std::size_t tiled = count / wide * wide;
    detail::runTiles(kernels.wide, rows, 0, tiled, columns / 8, rowAt, columnAt, out, outStride);
    detail::runTiles(kernels.narrow, rows, tiled, count - tiled, columns / 8, rowAt, columnAt, out,
                     outStride);
}

} // namespace

void detail::f16TilePortable(const std::uint16_t* const* rows, const float* const* columns,
                             std::size_t blocks, float* out) {
    denseTilePortable(rows, columns, blocks, out);
}

void detail::f32TilePortable(const float* const* rows, const float* const* columns, std::size_t blocks,
                             float* out) {
    denseTilePortable(rows, columns, blocks, out);
}

void detail::roundToHalfPortable(const float* x, std::size_t count, float* out) {
    for (std::size_t i = 0; i < count; ++i) {
        out[i] = halfToFloat(floatToHalf(x[i]));
    }
}

void roundToHalf(const float* x, std::size_t count, float* out) {
    detail::activationQuantizersOf(activeInstructionSet()).half(x, count, out);
}

bool hasF16Product(std::size_t columns) {
    return columns % 8 == 0;
}

void f16Product(const std::uint16_t* weights, std::size_t rows, std::size_t columns, const float* x,
                std::size_t count, float* out, std::size_t outStride) {
    denseProduct(detail::kernelsOf(activeInstructionSet()).f16, weights, columns, rows, columns, x, columns,
                 count, out, outStride);
}

void f32Product(const float* weights, std::size_t rowStride, std::size_t rows, std::size_t columns,
                const float* x, std::size_t xStride, std::size_t count, float* out, std::size_t outStride) {
    denseProduct(detail::kernelsOf(activeInstructionSet()).f32, weights, rowStride, rows, columns, x, xStride,
                 count, out, outStride);
}

} // namespace organ
