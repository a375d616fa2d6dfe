#include "value_source.h"

#include "dequant.h"

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
    if (out.empty()) {
        return;
    }
    decode(begin, out);
    if (m_mapping) {
        const auto& traits = traitsOf(m_type);
        const std::uint64_t firstByte = elementOf(begin) / traits.blockSize * traits.bytesPerBlock;
        const std::uint64_t lastByte =
            (elementOf(begin + out.size() - 1) / traits.blockSize + 1) * traits.bytesPerBlock;
        const auto base = static_cast<std::uint64_t>(m_data.data() - m_mapping->bytes().data());
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
