#pragma once

#include <cstddef>
#include <cstdint>

namespace organ {

// Products of F16 weights with activations rounded to F16, as llama.cpp's CPU code converts them
// before a product with an F16 weight, and of F32 rows with F32 columns: in tiles of rows × columns on the
// instruction set support/instruction_set.h chooses, each product's eight float lanes fused-multiply-added in
// the same order on every set, so all give the same bits.

// Whether rows of `columns` values take these paths (a multiple of 8).
bool hasF16Product(std::size_t columns);

// out[i] = x[i] rounded to F16 (to nearest even), for i < count: the activations F16 weights meet.
void roundToHalf(const float* x, std::size_t count, float* out);

// out[r + c·outStride] = row r of the weight · column c: `rows` rows of `columns` F16 values from
// `weights`, `count` columns of `columns` floats from `x` (each already a value of F16).
void f16Product(const std::uint16_t* weights, std::size_t rows, std::size_t columns, const float* x,
                std::size_t count, float* out, std::size_t outStride);

// The same for F32 rows (the attention's scores and sums): row r starts at weights + r · rowStride,
// column c at x + c · xStride, both `columns` values long.
void f32Product(const float* weights, std::size_t rowStride, std::size_t rows, std::size_t columns,
                const float* x, std::size_t xStride, std::size_t count, float* out, std::size_t outStride);

} // namespace organ
