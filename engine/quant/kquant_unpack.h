#pragma once

// Shared by the quantized products' translation units: K-quant and IQ4_XS super-blocks in one
// unpacked form.
#include "gguf/tensor_type.h"

#include <cstddef>
#include <cstdint>

namespace organ::detail {

// A super-block of Q2_K … Q6_K or IQ4_XS: 256 integer levels, an integer scale and minimum per
// 16 levels, and the two float factors, so that weight value e is
// d · scale[e/16] · q[e] − dmin · min[e/16]. Unpacked once per row, it meets every column.
struct Unpacked {
    alignas(32) std::int8_t q[256];
    std::int16_t scale[16];
    std::int16_t min[16];
    float d = 0;
    float dmin = 0;
    bool hasMins = false;
};

using UnpackFn = void (*)(const std::byte* block, Unpacked& out);

// The unpacker of `type`; nullptr for a type that has none.
UnpackFn superBlockUnpacker(TensorType type);

} // namespace organ::detail
