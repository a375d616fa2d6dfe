#include "merge/merge_kernels.h"

#include <algorithm>

namespace organ::detail {
namespace {

std::size_t gatherWindowPortable(const float* values, const float* base, std::size_t n, std::uint32_t low,
                                 std::uint32_t high, std::uint32_t* kept, std::uint64_t& above) {
    return gatherWindowFrom(values, base, 0, n, low, high, kept, above);
}

void signConsensusPortable(const ConsensusInput* models, std::size_t count, const float* base, std::size_t n,
                           bool normalize, float* out) {
    signConsensusFrom(models, count, base, 0, n, normalize, out);
}

constexpr MergeKernels kPortable{gatherWindowPortable, signConsensusPortable};

// The model's task vector at j, zero where its key is not kept.
float cutDelta(const ConsensusInput& model, float base, std::size_t j) {
    const float d = model.values[j] - base;
    const std::uint32_t key = magnitudeKey(d);
    return chooseBits((key >= model.low) & (key < model.high), d, 0.0f);
}

} // namespace

std::size_t gatherWindowFrom(const float* values, const float* base, std::size_t from, std::size_t n,
                             std::uint32_t low, std::uint32_t high, std::uint32_t* kept,
                             std::uint64_t& above) {
    const std::uint32_t width = high - low;
    std::size_t m = 0;
    for (std::size_t j = from; j < n; ++j) {
        const std::uint32_t key = magnitudeKey(base != nullptr ? values[j] - base[j] : values[j]);
        above += (key >> 16) > high ? 1 : 0;
        kept[m] = key;
        m += (key >> 16) - low <= width ? 1 : 0;
    }
    return m;
}

void signConsensusFrom(const ConsensusInput* models, std::size_t count, const float* base, std::size_t from,
                       std::size_t n, bool normalize, float* out) {
    // A run at a time, each loop over it written for the vectorizer (no branch on a value).
    constexpr std::size_t kRun = 256;
    float sum[kRun];
    float agreed[kRun];
    float divisor[kRun];
    for (std::size_t at = from; at < n; at += kRun) {
        const std::size_t m = std::min(kRun, n - at);
        const float* b = base + at;
        std::fill_n(sum, m, 0.0f);
        for (std::size_t i = 0; i < count; ++i) {
            for (std::size_t j = 0; j < m; ++j) {
                sum[j] += models[i].weight * cutDelta(models[i], b[j], at + j);
            }
        }
        electSigns(
            count, m, sum, b, normalize, [&](std::size_t i) { return models[i].weight; },
            [&](std::size_t i, std::size_t j) { return cutDelta(models[i], b[j], at + j); }, agreed, divisor,
            out + at);
    }
}

const MergeKernels& mergeKernels() {
#if defined(__x86_64__) || defined(__i386__)
    if (const InstructionSet set = activeInstructionSet(); set != InstructionSet::Portable) {
        return *x86MergeKernels(set);
    }
#endif
    return kPortable;
}

} // namespace organ::detail
