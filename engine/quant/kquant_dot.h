#pragma once

#include "gguf/tensor_type.h"
#include "quant/quant_dot.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace organ {

// Products of K-quant and IQ4 weights with activations quantized to 8 bits, as llama.cpp's CPU
// backend computes them: before a matrix product it converts the activations to the weight type's
// companion (ggml's vec_dot_type) — q8_K for Q2_K … Q6_K and IQ4_XS, q8_0 for IQ4_NL — and each
// block's product is a sum of integer products times the two scales.
//
// The integer sums are exact, so only the few float operations per block decide the bits: per
// super-block one fused multiply-add of the scaled integer total, then one of the minimums' total
// (for the types with minimums), block after block into one accumulator. ggml's reference code
// spreads the same sums over eight float lanes, which moves a result by a float rounding or two;
// keeping one accumulator is what lets SIMD kernels give these numbers bit for bit (issue 27).

// ggml's block_q8_K: 256 activations as a float scale d and int8 values (value ≈ d · q), with
// the sums of each 16 values (the minimums of the K-quants multiply those).
struct Q8KBlock {
    float d = 0;
    std::int8_t values[256];
    std::int16_t sums[16];
};

// Quantizes `count` floats (a multiple of 256) into count / 256 blocks as ggml's
// quantize_row_q8_K does: the value of largest magnitude (the first, in a tie) becomes −127, so
// that d = −max/127; every value is x/d rounded to nearest even, at most 127. A block of zeros
// has d = 0.
void quantizeQ8K(const float* x, std::size_t count, Q8KBlock* out);

// Columns of activations (each `columns` long, a multiple of 256), quantized once for every weight
// they meet.
class Q8KActivations {
public:
    Q8KActivations(const float* x, std::size_t columns, std::size_t count);
    std::size_t columns() const { return m_columns; }
    std::size_t count() const { return m_count; }
    const Q8KBlock* column(std::size_t c) const { return m_blocks.data() + c * (m_columns / 256); }

private:
    std::size_t m_columns;
    std::size_t m_count;
    std::vector<Q8KBlock> m_blocks;
};

// Whether weights of this type meet q8_K activations (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS).
bool hasQ8KProduct(TensorType type);

// out[r + c·outStride] = row r of the weight · column c, for `rows` rows of `type` whose bytes
// start at `weights`: groups of rows unpacked once (quant/kquant_unpack.h) meet every column in
// tiles of rows × columns on the instruction set support/instruction_set.h chooses; the integer
// sums are exact and the float steps the same everywhere, so every kernel gives the same bits.
void q8KProduct(TensorType type, const std::byte* weights, std::size_t rows, const Q8KActivations& x,
                float* out, std::size_t outStride);

// Q4_K weights for products with one column of activations (generation), which reads them
// fastest with eight rows side by side (quant/kquant_unpack.h's interleaveQ4K): `rows`, a
// multiple of 8, of `columns` values from `weights` into interleavedQ4KBytes(rows, columns) bytes
// at `out` (1184 for each 1152 of the rows). Both throw std::invalid_argument for rows that are no
// multiple of 8.
std::size_t interleavedQ4KBytes(std::size_t rows, std::size_t columns);
void interleaveQ4K(const std::byte* weights, std::size_t rows, std::size_t columns, std::byte* out);

// q8KProduct of such rows, the same bits, on the instruction set support/instruction_set.h
// chooses: every column reads the rows again, so it is for one.
void interleavedQ4KProduct(const std::byte* interleaved, std::size_t rows, const Q8KActivations& x,
                           float* out, std::size_t outStride);

// The same for IQ4_NL weights, which meet q8_0 blocks of 32 (quant_dot.h) as Q8_0 does.
void iq4NlProduct(const std::byte* weights, std::size_t rows, const QuantizedActivations& x, float* out,
                  std::size_t outStride);

} // namespace organ
