#include "measure/tensor_portrait.h"

#include "measure/value_source.h"
#include "quant/dequant.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace organ {

std::optional<TensorPortrait> portraitOf(TensorType type, std::span<const std::byte> data,
                                         std::uint64_t columns, std::uint64_t rows, std::uint32_t maxSide,
                                         std::uint32_t bins, const StopToken* stop) {
    TensorPortrait p;
    const std::uint64_t elements = columns * rows;
    if (elements == 0) {
        return p;
    }
    // Histogram from a stride sample, as the Z-measure samples.
    const TensorSampleSource sample(type, data, elements, std::min<std::uint64_t>(elements, 1u << 20));
    std::vector<float> values(static_cast<std::size_t>(sample.size()));
    sample.read(0, values);
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    for (float v : values) {
        if (std::isfinite(v)) {
            lo = std::min<double>(lo, v);
            hi = std::max<double>(hi, v);
        }
    }
    p.histogram.assign(bins, 0);
    if (lo <= hi) {
        p.minimum = lo;
        p.maximum = hi;
        const double width = hi > lo ? (hi - lo) / bins : 1.0;
        for (float v : values) {
            if (std::isfinite(v)) {
                const auto bin =
                    std::min<std::uint64_t>(bins - 1, static_cast<std::uint64_t>((v - lo) / width));
                ++p.histogram[static_cast<std::size_t>(bin)];
                ++p.histogramValues;
            }
        }
    }
    // The matrix, averaged into cells, one row of the tensor at a time.
    p.imageColumns = static_cast<std::uint32_t>(std::min<std::uint64_t>(columns, maxSide));
    p.imageRows = static_cast<std::uint32_t>(std::min<std::uint64_t>(rows, maxSide));
    std::vector<double> sums(static_cast<std::size_t>(p.imageRows) * p.imageColumns, 0.0);
    std::vector<std::uint64_t> counts(sums.size(), 0);
    std::vector<float> row(static_cast<std::size_t>(columns));
    const std::uint64_t rowsPerCheck = std::max<std::uint64_t>(1, (4u << 20) / columns);
    for (std::uint64_t r = 0; r < rows; ++r) {
        if (r % rowsPerCheck == 0 && stop != nullptr && stop->stopRequested()) {
            return std::nullopt;
        }
        dequantizeRange(type, data, r * columns, row.size(), row.data());
        const std::size_t cellRow = static_cast<std::size_t>(r * p.imageRows / rows);
        for (std::uint64_t c = 0; c < columns; ++c) {
            const float v = row[static_cast<std::size_t>(c)];
            if (!std::isfinite(v)) {
                ++p.nonFinite;
                continue;
            }
            const std::size_t cell =
                cellRow * p.imageColumns + static_cast<std::size_t>(c * p.imageColumns / columns);
            sums[cell] += v;
            ++counts[cell];
        }
    }
    p.image.resize(sums.size());
    for (std::size_t i = 0; i < sums.size(); ++i) {
        p.image[i] = counts[i] == 0 ? std::numeric_limits<float>::quiet_NaN()
                                    : static_cast<float>(sums[i] / counts[i]);
        if (counts[i] != 0) {
            p.imageAbsMax = std::max(p.imageAbsMax, std::abs(static_cast<double>(p.image[i])));
        }
    }
    return p;
}

} // namespace organ
