#pragma once

#include <cstdint>

// Codebooks of the IQ quantization formats: each entry packs 8 (or 4) small magnitudes, one
// per byte, that a block's index selects. See iq_codebooks.cpp for their origin.
namespace organ::iq {

extern const std::uint64_t kIq2xxsGrid[256];
extern const std::uint64_t kIq2xsGrid[512];
extern const std::uint64_t kIq2sGrid[1024];
extern const std::uint32_t kIq3xxsGrid[256];
extern const std::uint32_t kIq3sGrid[512];
extern const std::uint64_t kIq1sGrid[2048]; // signed bytes -1, 0, +1

// The 16 non-linear levels of IQ4_NL and IQ4_XS, ascending (the writer searches them).
inline constexpr std::int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                               1,    13,   25,  38,  53,  69,  89,  113};

} // namespace organ::iq
