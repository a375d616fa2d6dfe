#pragma once

#include <cstdint>

namespace organ {

// `value` rounded up to a multiple of `alignment` (not zero): where GGUF puts the next tensor.
constexpr std::uint64_t alignUp(std::uint64_t value, std::uint64_t alignment) {
    return value + (alignment - value % alignment) % alignment;
}

} // namespace organ
