#pragma once

// Shared by the dequantizer's translation units: loads from unaligned block bytes.
#include "quant/dequant.h"

#include <cstring>

namespace organ::detail {

inline std::uint16_t load16(const std::byte* p) {
    std::uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

inline std::uint32_t load32(const std::byte* p) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

inline float loadHalf(const std::byte* p) {
    return halfToFloat(load16(p));
}

inline const std::uint8_t* bytes(const std::byte* p) {
    return reinterpret_cast<const std::uint8_t*>(p);
}

using DecodeFn = void (*)(const std::byte* src, std::size_t blocks, float* out);

// Per family, in their own files.
DecodeFn kQuantDecoder(TensorType type);
DecodeFn iQuantDecoder(TensorType type);

} // namespace organ::detail
