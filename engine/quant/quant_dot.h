#pragma once

#include "gguf/tensor_type.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace organ {

// Products of quantized weights with activations quantized to 8 bits, as llama.cpp computes
// them on the CPU: for a Q8_0 weight the activations are cut into blocks of 32, each stored as
// int8 values and a scale rounded to F16, and each block's dot product is an integer sum
// times the two scales. The same numbers llama.cpp gets, at integer-SIMD speed: tiles of rows ×
// columns on the instruction set support/instruction_set.h chooses (AVX-512 VNNI, AVX-512,
// AVX-VNNI, AVX2 or plain C++), all giving the same bits. IQ4_NL weights meet the same blocks
// (quant/kquant_dot.h, which also has the K-quants).

// Whether products with weights of this type take this path (Q8_0, IQ4_NL).
bool hasQuantizedProduct(TensorType type);

// Columns of activations (each `columns` long, a multiple of 32), quantized once for every
// weight they meet.
class QuantizedActivations {
public:
    QuantizedActivations(const float* x, std::size_t columns, std::size_t count);
    std::size_t columns() const { return m_columns; }
    std::size_t count() const { return m_count; }

    struct Block {
        float scale; // the F16-rounded scale, as a float
        std::int8_t values[32];
    };
    const Block* column(std::size_t c) const { return m_blocks.data() + c * (m_columns / 32); }

private:
    std::size_t m_columns;
    std::size_t m_count;
    std::vector<Block> m_blocks;
};

// out[r + c·outStride] = row r of the weight · column c, for `rows` rows of `type` whose bytes
// start at `weights` (row after row, each columns()/blockSize blocks).
void quantizedProduct(TensorType type, const std::byte* weights, std::size_t rows,
                      const QuantizedActivations& x, float* out, std::size_t outStride);

} // namespace organ
