#pragma once

#include "gguf/tensor_type.h"
#include "support/job.h"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace organ {

// What the tensor inspector draws: a histogram of the values and the weight matrix itself,
// averaged down to at most maxSide × maxSide cells. Computed from the dequantized values,
// streaming row by row, so that any tensor fits in a few MiB.
struct TensorPortrait {
    std::vector<std::uint64_t> histogram; // equal bins over [minimum, maximum]
    double minimum = 0;
    double maximum = 0;
    std::uint64_t histogramValues = 0; // finite values binned (a stride sample of at most 1 Mi)
    std::uint32_t imageRows = 0;
    std::uint32_t imageColumns = 0;
    std::vector<float> image; // row-major cell means; NaN where a cell had no finite value
    double imageAbsMax = 0;   // for a symmetric colour scale
    std::uint64_t nonFinite = 0;
};

// rows × columns is the tensor as a matrix: columns = ne[0], rows = elements / ne[0].
// Returns nullopt when stopped (checked every few MiB).
std::optional<TensorPortrait> portraitOf(TensorType type, std::span<const std::byte> data,
                                         std::uint64_t columns, std::uint64_t rows,
                                         std::uint32_t maxSide = 256, std::uint32_t bins = 128,
                                         const StopToken* stop = nullptr);

} // namespace organ
