#include "quant/quantized_source.h"

#include "quant/dequant.h"
#include "quant/quantize.h"
#include "support/errors.h"

#include <algorithm>
#include <memory>
#include <mutex>

namespace organ {
namespace {

// Values decoded and encoded per batch (on every thread, a piece of rows each at a time); the
// input's pages are released after each.
constexpr std::uint64_t kBatchValues = 1u << 20;

} // namespace

TensorSource quantizedSource(const GgufModel& model, const TensorInfo& tensor, TensorType target,
                             std::vector<float> importance, unsigned threads) {
    const std::uint64_t columns = tensor.ne[0];
    const std::uint64_t rowBytes = storedBytes(target, columns);
    const std::uint64_t rows = columns != 0 ? tensor.elements / columns : 0;
    const std::uint64_t rowsPerExpert = std::max<std::uint64_t>(1, tensor.ne[1]);
    if (columns == 0 || columns % traitsOf(target).blockSize != 0) {
        throw FormatError(tensor.name + ": rows of " + std::to_string(columns) + " values do not fit " +
                          std::string(tensorTypeName(target)));
    }
    if (!importance.empty() && importance.size() != columns * ((rows + rowsPerExpert - 1) / rowsPerExpert)) {
        throw FormatError(tensor.name + ": " + std::to_string(importance.size()) +
                          " importance weights for rows of " + std::to_string(columns) + " values");
    }
    TensorSource source;
    source.mapping = model.tensorMapping(tensor); // named, so that the output is never this input
    TensorSource in = model.tensorSource(tensor);
    source.reads = readsOf(in);
    // An organ directory's tensor file is checked against its manifest's SHA-256 before its
    // values are used, once, whichever part of the output is asked for first.
    source.generate = [in = std::move(in), checked = std::make_shared<std::once_flag>(), from = tensor.type,
                       name = tensor.name, target, importance = std::move(importance), threads, columns,
                       rowBytes, rows, rowsPerExpert](std::uint64_t offset, std::span<std::byte> out) {
        std::call_once(*checked, [&in] { checkPromise(in); });
        const std::span<const std::byte> data = in.bytes;
        const std::shared_ptr<const MappedFile>& mapping = in.mapping;
        const std::uint64_t end = offset + out.size();
        if (end > rows * rowBytes || end < offset) {
            throw FormatError(name + ": bytes asked for past the end of the quantized tensor");
        }
        const std::uint64_t batchRows = std::max<std::uint64_t>(1, kBatchValues / columns);
        std::vector<std::byte> encoded;
        for (std::uint64_t row = offset / rowBytes; row * rowBytes < end;) {
            // A batch of whole rows, within one expert (each has its own importance).
            const std::uint64_t expertEnd = (row / rowsPerExpert + 1) * rowsPerExpert;
            const std::uint64_t last =
                std::min({row + batchRows, (end + rowBytes - 1) / rowBytes, expertEnd});
            const auto count = static_cast<std::size_t>(last - row);
            encoded.resize(count * rowBytes);
            const float* weights =
                importance.empty() ? nullptr : importance.data() + (row / rowsPerExpert) * columns;
            requantizeRowsParallel(from, data, row, count, static_cast<std::size_t>(columns), target, weights,
                                   encoded.data(), threads);
            const std::uint64_t from0 = std::max(offset, row * rowBytes);
            const std::uint64_t to = std::min(end, last * rowBytes);
            std::copy_n(encoded.begin() + static_cast<std::ptrdiff_t>(from0 - row * rowBytes), to - from0,
                        out.begin() + static_cast<std::ptrdiff_t>(from0 - offset));
            const auto& traits = traitsOf(from);
            const auto base = static_cast<std::uint64_t>(data.data() - mapping->bytes().data());
            mapping->release(base + row * columns / traits.blockSize * traits.bytesPerBlock,
                             count * columns / traits.blockSize * traits.bytesPerBlock);
            row = last;
        }
    };
    return source;
}

} // namespace organ
