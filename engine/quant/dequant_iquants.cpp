// IQ quants: indices into lattice codebooks (iq_codebooks.cpp) with sign bits and scales,
// and the non-linear IQ4 formats.
#include "quant/iq_groups.h"

namespace organ::detail {
namespace {

// Blocks of 32 groups of eight values, `kBytes` each, read by kRead.
template <class Groups, std::size_t kBytes, void (*kRead)(const std::byte*, Groups&)>
void decodeGroups(const std::byte* src, std::size_t blocks, float* out) {
    Groups g;
    for (std::size_t b = 0; b < blocks; ++b, src += kBytes) {
        kRead(src, g);
        for (int i = 0; i < 32; ++i) {
            for (int j = 0; j < 8; ++j) {
                *out++ = g.value(i, j);
            }
        }
    }
}

// IQ4_NL: half d, 16 bytes of nibbles indexing the non-linear levels.
void decodeIQ4_NL(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 18, out += 32) {
        const float d = loadHalf(src);
        const std::uint8_t* q = bytes(src + 2);
        for (int j = 0; j < 16; ++j) {
            out[j] = d * iq::kIq4Levels[q[j] & 0xF];
            out[j + 16] = d * iq::kIq4Levels[q[j] >> 4];
        }
    }
}

// IQ4_XS: half d, u16 high scale bits, 4 bytes of low scale nibbles, 128 bytes of nibbles.
void decodeIQ4_XS(const std::byte* src, std::size_t blocks, float* out) {
    for (std::size_t b = 0; b < blocks; ++b, src += 136) {
        const float d = loadHalf(src);
        const std::uint8_t* q = bytes(src + 8);
        for (int ib = 0; ib < 8; ++ib, q += 16, out += 32) {
            const float dl = d * static_cast<float>(iq4XsScale(src, ib));
            for (int j = 0; j < 16; ++j) {
                out[j] = dl * iq::kIq4Levels[q[j] & 0xF];
                out[j + 16] = dl * iq::kIq4Levels[q[j] >> 4];
            }
        }
    }
}

constexpr TypeEntry<DecodeFn> kIQuantDecoders[] = {
    {TensorType::IQ2_XXS, decodeGroups<SignedGroups, 66, readIQ2_XXS>},
    {TensorType::IQ2_XS, decodeGroups<SignedGroups, 74, readIQ2_XS>},
    {TensorType::IQ2_S, decodeGroups<SignedGroups, 82, readIQ2_S>},
    {TensorType::IQ3_XXS, decodeGroups<SignedGroups, 98, readIQ3_XXS>},
    {TensorType::IQ3_S, decodeGroups<SignedGroups, 110, readIQ3_S>},
    {TensorType::IQ1_S, decodeGroups<ShiftedGroups, 50, readIQ1_S>},
    {TensorType::IQ1_M, decodeGroups<ShiftedGroups, 56, readIQ1_M>},
    {TensorType::IQ4_NL, decodeIQ4_NL},
    {TensorType::IQ4_XS, decodeIQ4_XS},
};

} // namespace

DecodeFn iQuantDecoder(TensorType type) {
    return entryOf(kIQuantDecoders, type);
}

} // namespace organ::detail
