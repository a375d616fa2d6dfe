#include "measure/value_source.h"

#include "quant/dequant.h"

#include <algorithm>

namespace organ {

void SpanValueSource::read(std::uint64_t begin, std::span<float> out) const {
    std::copy_n(m_values.begin() + static_cast<std::ptrdiff_t>(begin), out.size(), out.begin());
}

TensorSampleSource::TensorSampleSource(TensorType type, std::span<const std::byte> data,
                                       std::uint64_t elements, std::uint64_t sample,
                                       std::shared_ptr<const MappedFile> mapping)
    : m_type(type), m_data(data), m_elements(elements), m_sample(std::min(sample, elements)),
      m_mapping(std::move(mapping)) {}

namespace {
// k · N overflows 64 bits for large tensors; GCC and Clang have a 128-bit integer.
__extension__ using Wide = unsigned __int128;
} // namespace

std::uint64_t TensorSampleSource::elementOf(std::uint64_t k) const {
    return static_cast<std::uint64_t>(static_cast<Wide>(k) * m_elements / m_sample);
}

void TensorSampleSource::read(std::uint64_t begin, std::span<float> out) const {
    if (!m_mapping) {
        decode(begin, out);
        return;
    }
    // A strided sample can touch every page of a huge tensor: release every few MiB of
    // source bytes, not only at the end of the read.
    constexpr std::uint64_t kReleaseBytes = 8u << 20;
    const auto& traits = traitsOf(m_type);
    const double bytesPerValue = static_cast<double>(m_elements) / static_cast<double>(m_sample) *
                                 traits.bytesPerBlock / traits.blockSize;
    const auto piece = static_cast<std::size_t>(std::clamp(
        static_cast<double>(kReleaseBytes) / std::max(bytesPerValue, 1e-9), 1.0, double(out.size())));
    const auto base = static_cast<std::uint64_t>(m_data.data() - m_mapping->bytes().data());
    for (std::size_t done = 0; done < out.size(); done += piece) {
        const std::size_t count = std::min(piece, out.size() - done);
        const std::uint64_t first = begin + done;
        decode(first, out.subspan(done, count));
        const std::uint64_t firstByte = elementOf(first) / traits.blockSize * traits.bytesPerBlock;
        const std::uint64_t lastByte =
            (elementOf(first + count - 1) / traits.blockSize + 1) * traits.bytesPerBlock;
        m_mapping->release(base + firstByte, lastByte - firstByte);
    }
}

void TensorSampleSource::decode(std::uint64_t begin, std::span<float> out) const {
    if (m_sample == m_elements) {
        dequantizeRange(m_type, m_data, begin, out.size(), out.data());
        return;
    }
    const auto& traits = traitsOf(m_type);
    std::vector<float> block(traits.blockSize);
    std::uint64_t decoded = UINT64_MAX;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const std::uint64_t element = elementOf(begin + i);
        const std::uint64_t index = element / traits.blockSize;
        if (traits.blockSize == 1) {
            dequantizeBlocks(m_type, m_data.data() + index * traits.bytesPerBlock, 1, &out[i]);
            continue;
        }
        if (index != decoded) {
            dequantizeBlocks(m_type, m_data.data() + index * traits.bytesPerBlock, 1, block.data());
            decoded = index;
        }
        out[i] = block[element % traits.blockSize];
    }
}

} // namespace organ
