#pragma once

#include "gguf/tensor_type.h"
#include "support/mapped_file.h"

#include <memory>

#include <cstdint>
#include <span>
#include <vector>

namespace organ {

// The values a measurement looks at, readable in any order and from several threads.
class ValueSource {
public:
    virtual ~ValueSource() = default;
    virtual std::uint64_t size() const = 0;
    // Fills `out` with values [begin, begin + out.size()).
    virtual void read(std::uint64_t begin, std::span<float> out) const = 0;
};

// Values already in memory (tests, generated data).
class SpanValueSource : public ValueSource {
public:
    explicit SpanValueSource(std::span<const float> values) : m_values(values) {}
    std::uint64_t size() const override { return m_values.size(); }
    void read(std::uint64_t begin, std::span<float> out) const override;

private:
    std::span<const float> m_values;
};

// The stride sample of a tensor that Z-measure v1 defines: value k is element
// floor(k · N / n). Only the blocks holding sampled elements are decoded; with n = N the
// tensor is decoded in contiguous runs.
class TensorSampleSource : public ValueSource {
public:
    // When `mapping` holds `data`, the pages behind each read are released afterwards, so
    // that measuring a model larger than memory keeps the resident set small.
    TensorSampleSource(TensorType type, std::span<const std::byte> data, std::uint64_t elements,
                       std::uint64_t sample, std::shared_ptr<const MappedFile> mapping = nullptr);
    std::uint64_t size() const override { return m_sample; }
    void read(std::uint64_t begin, std::span<float> out) const override;
    std::uint64_t elementOf(std::uint64_t k) const;

private:
    void decode(std::uint64_t begin, std::span<float> out) const;
    TensorType m_type;
    std::span<const std::byte> m_data;
    std::uint64_t m_elements;
    std::uint64_t m_sample;
    std::shared_ptr<const MappedFile> m_mapping;
};

} // namespace organ
