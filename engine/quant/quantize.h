#pragma once

#include "gguf/tensor_type.h"

#include <cstddef>
#include <cstdint>

namespace organ {

// The types the engine can write from float values, as llama-quantize writes them
// without an importance matrix (so a conversion gives the bytes llama.cpp would).
bool canQuantizeTo(TensorType type);

// Encodes `blocks` whole blocks of floats into `out`; `type` must be one canQuantizeTo accepts.
void quantizeBlocks(TensorType type, const float* in, std::size_t blocks, std::byte* out);

// Float to bfloat16, rounding to nearest even; NaN stays a quiet NaN.
std::uint16_t floatToBfloat16(float value);

} // namespace organ
