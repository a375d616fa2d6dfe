#include "merge/merged_source.h"

#include "quant/dequant.h"
#include "quant/quantize.h"
#include "support/errors.h"
#include "support/free_vector.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace organ {
namespace {

// Values merged per batch of rows (4 MiB of floats), encoded by the thread that merged them
// rowsPerPiece rows at a time, while they are in its cache.
constexpr std::uint64_t kBatchValues = 1u << 20;

// Decodes a range of an input's values.
ValueReader readerOf(const MergeInput& input) {
    return [source = input.source, type = input.type](std::uint64_t first, std::size_t count, float* out) {
        dequantizeRange(type, source.bytes, first, count, out);
    };
}

} // namespace

void releaseValues(const MergeInput& input, std::uint64_t first, std::uint64_t count) {
    const TensorSource& source = input.source;
    if (source.mapping) {
        const auto& traits = traitsOf(input.type);
        const auto base = static_cast<std::uint64_t>(source.bytes.data() - source.mapping->bytes().data());
        source.mapping->release(base + first / traits.blockSize * traits.bytesPerBlock,
                                (count + traits.blockSize - 1) / traits.blockSize * traits.bytesPerBlock);
    }
}

namespace {

std::uint64_t elementsOf(const MergedTensor& t) {
    return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
}

} // namespace

std::unique_ptr<TensorMerger> preparedMerger(const MergedTensor& t) {
    TensorMergeInputs inputs;
    inputs.elements = elementsOf(t);
    if (t.base) {
        checkPromise(t.base->source);
        inputs.base = readerOf(*t.base);
    }
    for (const MergeInput& m : t.models) {
        checkPromise(m.source);
        inputs.models.push_back(readerOf(m));
    }
    inputs.done = [base = t.base, models = t.models](std::uint64_t first, std::uint64_t count) {
        if (base) {
            releaseValues(*base, first, count);
        }
        for (const MergeInput& m : models) {
            releaseValues(m, first, count);
        }
    };
    auto merger = std::make_unique<TensorMerger>(t.params, std::move(inputs));
    merger->prepare();
    return merger;
}

namespace {

// A merge is never written with values that are not finite numbers.
[[noreturn]] void refuseNotFinite(const std::string& tensor) {
    throw FormatError(tensor +
                      ": the merge gives values that are not finite numbers (a NaN or an infinity in "
                      "an input, or weights so large that the sums overflow)");
}

// Merged values up to F16's largest cannot overflow any type the engine writes (the quantized
// types keep their scales in F16 or wider); above it, the encoded bytes are decoded to check.
constexpr std::uint32_t kF16LargestBits = std::bit_cast<std::uint32_t>(65504.0f);

// Whether `count` encoded values decode to finite numbers.
bool decodesFinite(TensorType type, std::span<const std::byte> bytes, std::uint64_t count) {
    constexpr std::uint64_t kSlice = std::uint64_t(1) << 16;
    std::vector<float> values(static_cast<std::size_t>(std::min(kSlice, count)));
    for (std::uint64_t at = 0; at < count; at += kSlice) {
        const auto n = static_cast<std::size_t>(std::min(kSlice, count - at));
        dequantizeRange(type, bytes, at, n, values.data());
        if (largestMagnitudeBits(values.data(), n) >= kNotFiniteBits) {
            return false;
        }
    }
    return true;
}

// Merged values that the output's type cannot hold are never written as infinities.
[[noreturn]] void refuseTooLarge(const std::string& tensor, TensorType type, std::uint32_t largestBits) {
    char largest[32];
    std::snprintf(largest, sizeof largest, "%.3g", double(std::bit_cast<float>(largestBits)));
    throw FormatError(tensor + ": the merged values reach " + largest + ", more than " +
                      std::string(tensorTypeName(type)) +
                      " holds (written, they would be infinities): the weights are too large");
}

// Encodes `rows` merged rows that start at row `first` (within one expert, with its weights).
void encodeRows(const MergedTensor& t, std::uint64_t first, const float* values, std::uint64_t rows,
                std::byte* out) {
    const std::uint64_t columns = t.ne[0];
    const std::uint64_t rowsPerExpert = std::max<std::uint64_t>(1, t.ne[1]);
    const float* weights =
        t.importance.empty() ? nullptr : t.importance.data() + (first / rowsPerExpert) * columns;
    quantizeRows(t.target, values, static_cast<std::size_t>(rows), static_cast<std::size_t>(columns), weights,
                 out);
}

// The output's bytes made as they are read in order: a batch of whole rows (within one expert)
// merged and encoded at a time. A read that goes back starts the merge again from the first row.
class MergeStream {
public:
    explicit MergeStream(MergedTensor tensor) : m_tensor(std::move(tensor)) {
        m_rowBytes = storedBytes(m_tensor.target, m_tensor.ne[0]);
        m_rows = m_tensor.ne[0] != 0 ? elementsOf(m_tensor) / m_tensor.ne[0] : 0;
    }
    std::uint64_t size() const { return m_rows * m_rowBytes; }

    void read(std::uint64_t offset, std::span<std::byte> out) {
        std::lock_guard lock(m_mutex);
        if (offset > size() || out.size() > size() - offset) {
            throw FormatError(m_tensor.name + ": bytes asked for past the end of the merged tensor");
        }
        if (!m_merger) {
            m_merger = preparedMerger(m_tensor);
        }
        if (offset < m_pendingFrom) {
            m_merger->restart();
            m_nextRow = 0;
            m_pending.clear();
            m_pendingFrom = 0;
        }
        for (std::size_t filled = 0; filled < out.size();) {
            const std::uint64_t at = offset + filled;
            if (at >= m_pendingFrom && at < m_pendingFrom + m_pending.size()) {
                const auto n =
                    std::min<std::uint64_t>(out.size() - filled, m_pendingFrom + m_pending.size() - at);
                std::memcpy(out.data() + filled, m_pending.data() + (at - m_pendingFrom),
                            static_cast<std::size_t>(n));
                filled += static_cast<std::size_t>(n);
                continue;
            }
            mergeBatch();
        }
        if (offset + out.size() == size()) {
            // Read to the end: what was kept for the next read is dropped.
            drop();
        }
    }

private:
    // The merger and the last batch's bytes go: a later read starts the tensor again.
    void drop() {
        m_merger.reset();
        freeVector(m_pending);
        m_pendingFrom = 0;
        m_nextRow = 0;
    }

    void mergeBatch() {
        const std::uint64_t columns = m_tensor.ne[0];
        const std::uint64_t rowsPerExpert = std::max<std::uint64_t>(1, m_tensor.ne[1]);
        const std::uint64_t expertEnd = (m_nextRow / rowsPerExpert + 1) * rowsPerExpert;
        const std::uint64_t rows = std::min(
            {std::max<std::uint64_t>(1, kBatchValues / columns), m_rows - m_nextRow, expertEnd - m_nextRow});
        const std::uint64_t pieceRows = rowsPerPiece(static_cast<std::size_t>(columns));
        const std::uint64_t first = m_nextRow;
        m_pending.resize(static_cast<std::size_t>(rows * m_rowBytes));
        std::atomic<bool> notFinite{false};
        std::atomic<std::uint32_t> tooLarge{0}; // the largest |value| as bits, where it overflowed
        try {
            m_merger->next(
                static_cast<std::size_t>(rows * columns), static_cast<std::size_t>(pieceRows * columns),
                [&](std::uint64_t at, std::size_t count, const float* values) {
                    const std::uint32_t largest = largestMagnitudeBits(values, count);
                    if (largest >= kNotFiniteBits) {
                        notFinite = true;
                    }
                    const std::uint64_t row = at / columns;
                    std::byte* encoded = m_pending.data() + (row - first) * m_rowBytes;
                    encodeRows(m_tensor, row, values, count / columns, encoded);
                    if (largest > kF16LargestBits && largest < kNotFiniteBits &&
                        !decodesFinite(m_tensor.target, std::span(encoded, (count / columns) * m_rowBytes),
                                       count)) {
                        std::uint32_t seen = tooLarge;
                        while (seen < largest && !tooLarge.compare_exchange_weak(seen, largest)) {
                        }
                    }
                });
        } catch (...) {
            drop(); // half a batch is no batch
            throw;
        }
        if (notFinite) {
            drop();
            refuseNotFinite(m_tensor.name);
        }
        if (tooLarge != 0) {
            drop();
            refuseTooLarge(m_tensor.name, m_tensor.target, tooLarge);
        }
        m_pendingFrom = m_nextRow * m_rowBytes;
        m_nextRow += rows;
    }

    MergedTensor m_tensor;
    std::uint64_t m_rowBytes = 0;
    std::uint64_t m_rows = 0;
    std::mutex m_mutex;
    std::unique_ptr<TensorMerger> m_merger;
    std::uint64_t m_nextRow = 0;
    std::vector<std::byte> m_pending; // the last batch's bytes, from byte m_pendingFrom
    std::uint64_t m_pendingFrom = 0;
};

} // namespace

std::vector<float> mergedValues(const MergedTensor& tensor) {
    const std::unique_ptr<TensorMerger> merger = preparedMerger(tensor);
    std::vector<float> values(static_cast<std::size_t>(elementsOf(tensor)));
    merger->next(values.size(), values.data());
    return values;
}

TensorSource mergedSource(MergedTensor tensor, MergedReading reading, std::shared_ptr<PurifyLog> log) {
    const bool once = reading == MergedReading::Once;
    const std::uint64_t size = storedBytes(tensor.target, elementsOf(tensor));
    // Named, so that the output is never this input.
    const std::shared_ptr<const MappedFile> mapping =
        tensor.base ? tensor.base->source.mapping : tensor.models.front().source.mapping;
    // The inputs' bytes, read side by side.
    std::vector<FileSpan> reads;
    if (tensor.base) {
        reads = readsOf(tensor.base->source);
    }
    for (const MergeInput& m : tensor.models) {
        const std::vector<FileSpan> more = readsOf(m.source);
        reads.insert(reads.end(), more.begin(), more.end());
    }
    TensorSource source;
    if (tensor.purify) {
        auto logged = std::make_shared<std::once_flag>();
        const std::string name = tensor.name;
        auto make = [tensor = std::move(tensor), log, logged] {
            std::vector<float> values = mergedValues(tensor);
            const std::uint32_t largest = largestMagnitudeBits(values.data(), values.size());
            if (largest >= kNotFiniteBits) {
                refuseNotFinite(tensor.name);
            }
            TensorInfo info;
            info.name = tensor.name;
            info.type = TensorType::F32;
            info.ne = tensor.ne;
            info.elements = values.size();
            const std::vector<float> stored = values;
            PurifiedBytes made = purifyValues(info, std::move(values), std::as_bytes(std::span(stored)),
                                              tensor.target, *tensor.purify, tensor.importance);
            if (largest > kF16LargestBits && !decodesFinite(tensor.target, made.bytes, stored.size())) {
                refuseTooLarge(tensor.name, tensor.target, largest);
            }
            if (log) {
                std::call_once(*logged, [&] { log->add(std::move(made.report)); });
            }
            return std::move(made.bytes);
        };
        source = madeSource(std::move(make), size, once, name);
    } else {
        const std::string name = tensor.name;
        auto stream = std::make_shared<MergeStream>(std::move(tensor));
        if (once) {
            source.generate = [stream](std::uint64_t offset, std::span<std::byte> out) {
                stream->read(offset, out);
            };
        } else {
            source = madeSource(
                [stream] {
                    std::vector<std::byte> bytes(static_cast<std::size_t>(stream->size()));
                    stream->read(0, bytes);
                    return bytes;
                },
                size, false, name);
        }
    }
    source.mapping = mapping;
    source.reads = std::move(reads);
    return source;
}

} // namespace organ
