#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace organ {

// Products of F16 weights with activations rounded to F16, as llama.cpp's CPU code converts them
// before a product with an F16 weight, and of F32 rows with F32 columns: in tiles of rows × columns on the
// instruction set support/instruction_set.h chooses, each product's eight float lanes fused-multiply-added in
// the same order on every set, so all give the same bits.

// Whether rows of `columns` values take these paths (a multiple of 8).
bool hasF16Product(std::size_t columns);

// out[i] = x[i] rounded to F16 (to nearest even), for i < count: the activations of an F16 weight
// whose rows have no F16 product (hasF16Product false), multiplied as F32.
void roundToHalf(const float* x, std::size_t count, float* out);

// Columns of activations (each `size` values, a multiple of 8) rounded to F16 once for every F16
// weight they meet, kept as halves: half the bytes of floats, so that a tile's rows and columns
// stay in the core's cache. Two columns side by side, eight values of each in turn: block b of
// column c is the 8 halves at pair(c / 2) + 16 b + 8 (c % 2), so one 256-bit load holds a block of
// both (an odd last column's partner is zeros).
class HalfActivations {
public:
    HalfActivations(const float* x, std::size_t size, std::size_t count);
    std::size_t size() const { return m_size; }
    std::size_t count() const { return m_count; }
    const std::uint16_t* pair(std::size_t p) const { return m_halves.data() + 2 * m_size * p; }
    const std::uint16_t* column(std::size_t c) const { return m_halves.data() + columnOffset(m_size, c); }
    // Where column c of columns of `size` values starts, in halves.
    static std::size_t columnOffset(std::size_t size, std::size_t c) {
        return 2 * size * (c / 2) + 8 * (c % 2);
    }

private:
    std::size_t m_size;
    std::size_t m_count;
    std::vector<std::uint16_t> m_halves;
};

// out[r + c·outStride] = row r of the weight · column c of x: `rows` rows of x.size() F16 values
// from `weights`.
void f16Product(const std::uint16_t* weights, std::size_t rows, const HalfActivations& x, float* out,
                std::size_t outStride);

// The same for F32 rows (the attention's scores and sums) and F32 columns: row r starts at
// weights + r · rowStride, column c at x + c · xStride, both `columns` values long.
void f32Product(const float* weights, std::size_t rowStride, std::size_t rows, std::size_t columns,
                const float* x, std::size_t xStride, std::size_t count, float* out, std::size_t outStride);

} // namespace organ
