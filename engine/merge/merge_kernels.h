#pragma once

// The merger's innermost loops for ties and breadcrumbs_ties, per instruction set (portable, AVX2,
// AVX-512; chosen as the decoders are: support/instruction_set.h). Each gives the portable loop's
// bits: elementwise F32 operations in the same order, the keys gathered in the same order.
#include "support/instruction_set.h"

#include <bit>
#include <cstddef>
#include <cstdint>

namespace organ::detail {

// |v| as an ordered key: the bits of a non-negative float order as its values do (NaN above ∞).
inline std::uint32_t magnitudeKey(float v) {
    return std::bit_cast<std::uint32_t>(v) & 0x7FFFFFFFu;
}

// c ? a : b on the bits, which the vectorizer takes where it leaves a branch on floats alone.
inline float chooseBits(bool c, float a, float b) {
    const std::uint32_t mask = 0u - static_cast<std::uint32_t>(c);
    return std::bit_cast<float>((std::bit_cast<std::uint32_t>(a) & mask) |
                                (std::bit_cast<std::uint32_t>(b) & ~mask));
}

// The keys of |values − base| (of values when base is null) whose high 16 bits are in [low, high]
// (low <= high), in order, at kept, which has room for n + 16 keys; returns how many, and adds
// those above `high` to `above`.
using GatherWindowFn = std::size_t (*)(const float* values, const float* base, std::size_t n,
                                       std::uint32_t low, std::uint32_t high, std::uint32_t* kept,
                                       std::uint64_t& above);

// ties' sign election on m values whose weighted sum over the `count` models is sum[j]: out[j] is
// base[j] plus the weighted entries (weight(i) · entry(i, j)) that share the sum's sign (0 counts as
// +, a zero entry has none), divided by their weights' sum when `normalize` (by 1 where none does).
// `agreed` and `divisor` hold m floats each. Inlined where it is called, so written for the
// vectorizer: no branch on a value.
template <class Weight, class Entry>
[[gnu::always_inline]] inline void electSigns(std::size_t count, std::size_t m, const float* sum,
                                              const float* base, bool normalize, Weight weight, Entry entry,
                                              float* agreed, float* divisor, float* out) {
    // Never −0: these sums are unchanged by adding +0 where an entry disagrees.
    for (std::size_t j = 0; j < m; ++j) {
        agreed[j] = 0.0f;
        divisor[j] = 0.0f;
    }
    for (std::size_t i = 0; i < count; ++i) {
        const float w = weight(i);
        for (std::size_t j = 0; j < m; ++j) {
            const float v = w * entry(i, j);
            const bool positive = sum[j] >= 0;
            const bool agrees = (positive & (v > 0)) | (!positive & (v < 0));
            agreed[j] += chooseBits(agrees, v, 0.0f);
            divisor[j] += chooseBits(agrees, w, 0.0f);
        }
    }
    if (normalize) {
        for (std::size_t j = 0; j < m; ++j) {
            out[j] = base[j] + agreed[j] / chooseBits(divisor[j] == 0, 1.0f, divisor[j]);
        }
    } else {
        for (std::size_t j = 0; j < m; ++j) {
            out[j] = base[j] + agreed[j];
        }
    }
}

// One model's part in a run of values merged by sign consensus: its values (the task vector is
// values − base), its weight, and the keys kept: from `low` up to, not including, `high` (each at
// most 0x80000000).
struct ConsensusInput {
    const float* values = nullptr;
    float weight = 1;
    std::uint32_t low = 0;
    std::uint32_t high = 0;
};

// ties' merge of n values: each model's task vector cut to its keys, the weighted sum's sign (0
// counts as +) elected, and base plus the sum of the weighted entries that share it, divided by
// their weights' sum when `normalize` (by 1 where none does).
using SignConsensusFn = void (*)(const ConsensusInput* models, std::size_t count, const float* base,
                                 std::size_t n, bool normalize, float* out);

struct MergeKernels {
    GatherWindowFn gatherWindow;
    SignConsensusFn signConsensus;
};

// The kernels of the instruction set the engine uses now (activeInstructionSet()).
const MergeKernels& mergeKernels();

// The portable kernels on elements [from, n) (the keys stored from kept[0]), for the SIMD kernels' tails.
std::size_t gatherWindowFrom(const float* values, const float* base, std::size_t from, std::size_t n,
                             std::uint32_t low, std::uint32_t high, std::uint32_t* kept,
                             std::uint64_t& above);
void signConsensusFrom(const ConsensusInput* models, std::size_t count, const float* base, std::size_t from,
                       std::size_t n, bool normalize, float* out);

// The x86 kernels of a set other than the portable one (on x86 only).
const MergeKernels* x86MergeKernels(InstructionSet set);

} // namespace organ::detail
