#pragma once

#include "gguf/tensor_type.h"

#include <cstddef>
#include <cstdint>
#include <span>

namespace organ {

// Every tensor type the reader knows has numeric values and can be decoded to float.
// F64 and I64 values are rounded to the nearest float.

// Decodes `blocks` whole blocks from `src` into `out` (blocks × blockSize floats).
void dequantizeBlocks(TensorType type, const std::byte* src, std::size_t blocks, float* out);

// Decodes elements [first, first + count) of a tensor's data (row-major, ne[0] fastest).
// Only the blocks that hold those elements are read; at most one block is decoded into
// a scratch buffer at each end.
void dequantizeRange(TensorType type, std::span<const std::byte> data, std::uint64_t first, std::size_t count,
                     float* out);

// IEEE half and bfloat16 to float, exactly (subnormals, infinities and NaN included).
float halfToFloat(std::uint16_t bits);
// Float to IEEE half, rounding to nearest even (overflow gives infinity, NaN stays NaN).
std::uint16_t floatToHalf(float value);
float bfloat16ToFloat(std::uint16_t bits);

} // namespace organ
