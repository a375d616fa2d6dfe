#pragma once

// Shared by the quantized products' translation units: K-quant and IQ4_XS super-blocks in one
// unpacked form.
#include "gguf/tensor_type.h"
#include "quant/kquant_dot.h"
#include "support/instruction_set.h"

#include <cstddef>
#include <cstdint>

namespace organ::detail {

// A super-block of Q2_K … Q6_K or IQ4_XS: 256 integer levels, an integer scale and minimum per
// 16 levels, and the two float factors, so that weight value e is
// d · scale[e/16] · level[e] − dmin · min[e/16]. Unpacked once per row, it meets every column.
//
// Levels are kept as unsigned bytes q = level + bias (the type's bias: Q3_K 4, Q6_K 32, IQ4_XS
// 128, else 0) so that byte products take them as they are; Σ scale · level · x is then
// Σ scale · q · x − Σ bias · scale · (sums of 16 x), both exact integers.
struct Unpacked {
    alignas(64) std::uint8_t q[256];
    // Per 32 levels: the scale of its first 16 eight times, then that of its second 16 eight times
    // (what one multiply-add of 16 pair sums needs).
    alignas(64) std::int16_t scales[8][16];
    // Per 16 levels: the minimum (hasMins) or bias · scale (without minimums).
    alignas(32) std::int16_t correction[16];
    float d = 0;
    float dmin = 0;
    bool hasMins = false;
    // q reaches 128 or more (IQ4_XS): two byte products could overflow 16 bits.
    bool wideLevels = false;
};

using UnpackFn = void (*)(const std::byte* block, Unpacked& out);

// The unpacker of `type` on `set` (all give the same Unpacked); nullptr for a type that has none.
UnpackFn superBlockUnpacker(TensorType type, InstructionSet set = InstructionSet::Portable);

// Fills scales and correction from one scale per 16 levels, bias · scale as the correction.
void setScales(Unpacked& u, const int* scalePer16, int bias);

// Everything of a Q4_K or Q5_K (q4KFactors) or Q6_K (q6KFactors) super-block but its levels.
void q4KFactors(const std::byte* block, Unpacked& out);
void q6KFactors(const std::byte* block, Unpacked& out);

// The AVX2 unpackers of Q4_K and Q6_K (kquant_unpack_x86.cpp); nullptr elsewhere.
UnpackFn superBlockUnpackerX86(TensorType type);

// A row of `blocks` super-blocks · one q8_K column, read from the packed bytes: the exact integer
// sums and float steps of kQuantTilePortable, so its bits. For one column (generation), where
// unpacking a row cost more than its product.
using PackedRowDotFn = float (*)(const std::byte* row, const Q8KBlock* x, std::size_t blocks);

// Those of Q4_K (AVX2, or AVX-512 where `set` has it) and Q6_K (AVX2) for a SIMD `set`
// (kquant_unpack_x86.cpp); nullptr for other types and elsewhere.
PackedRowDotFn packedRowDotX86(TensorType type, InstructionSet set);

// Q4_K rows eight at a time side by side, as one column of activations reads them fastest: one
// stream, and each 32-bit lane of a 256-bit register a row's, so that the eight rows' sums, scales
// and float steps are one register's lanes. Per super-block of the eight rows, kQ4KGroupBytes:
//   0-15     each row's d (F16), row r at 2r; 16-31 its dmin
//   32-95    scale of sub-block j (32 levels) of row r at 32 + 8j + r (the 6-bit values as bytes)
//   96-159   mins of sub-blocks 2p and 2p + 1 of row r at 96 + 16p + 2r and the byte after
//   160-1183 qs: its bytes 32k + 4g … 32k + 4g + 3 (k < 4, g < 8) of row r at 160 + 32(8k + g) + 4r
// 1184 bytes for the 1152 of eight super-blocks (the scales unpacked).
constexpr std::size_t kQ4KGroupRows = 8;
constexpr std::size_t kQ4KGroupBytes = 1184;

// Eight rows of `blocks` Q4_K super-blocks each, one after another at `rows`, into blocks ·
// kQ4KGroupBytes bytes at `group`.
void interleaveQ4K(const std::byte* rows, std::size_t blocks, std::byte* group);

// Such a group's eight rows · one q8_K column into out[0 … 7]: the exact integer sums and float
// steps of kQuantTilePortable, so its bits.
using InterleavedDotFn = void (*)(const std::byte* group, const Q8KBlock* x, std::size_t blocks, float* out);
void interleavedQ4KDotPortable(const std::byte* group, const Q8KBlock* x, std::size_t blocks, float* out);

// The same for a SIMD `set` (kquant_unpack_x86.cpp): byte products summed in 16 bits (AVX2,
// AVX-512), or in 32 by VNNI's dot products; nullptr elsewhere.
InterleavedDotFn interleavedQ4KDotX86(InstructionSet set);

} // namespace organ::detail
