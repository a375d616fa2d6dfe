#pragma once

#include "gguf/gguf_model.h"
#include "gguf/gguf_writer.h"
#include "graft/graft_check.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace organ {

// What a forward pass reads: metadata and tensors, from a model on disk or from a planned
// chimera that is never written (its write spec: the recipient's and donors' mappings, and
// tensors converted on the fly where the plan converts them).
class ModelWeights {
public:
    static ModelWeights ofModel(std::shared_ptr<const GgufModel> model);
    // A planned chimera, as `organ assemble` would write it; the report must have no errors.
    static ModelWeights ofPlan(const GraftPlan& plan, const GraftModels& models,
                               const CompatibilityReport& report);

    // These weights with tensor `name` read from `source` in `type` instead (its shape as it
    // was): a tensor tried in another type, never written. Throws FormatError for an unknown name.
    void replaceTensor(std::string_view name, TensorType type, TensorSource source);

    // How messages name it: the file's name, or "<output> (planned)".
    const std::string& label() const { return m_label; }
    const MetaValue* find(std::string_view key) const;
    std::string architecture() const;
    std::optional<std::uint64_t> archValue(std::string_view key) const;

    struct Tensor {
        TensorType type = TensorType::F32;
        std::uint32_t nDims = 0;
        std::array<std::uint64_t, kGgufMaxDims> ne{1, 1, 1, 1};
        std::uint64_t elements = 0;
        std::string shapeText() const;
    };
    const Tensor* tensor(std::string_view name) const;
    // The bytes of every tensor as stored.
    std::uint64_t tensorBytes() const;
    // Rows first … first + count − 1 (a row: ne[0] elements) as F32, so that an embedding or
    // an output projection never has to be in F32 whole.
    void dequantizeRows(std::string_view name, std::uint64_t first, std::uint64_t count, float* out) const;
    // The bytes of those rows as stored (or as the plan converts them): a span into the
    // mapping, or into `scratch` when they are made on the fly.
    std::span<const std::byte> rowBytes(std::string_view name, std::uint64_t first, std::uint64_t count,
                                        std::vector<std::byte>& scratch) const;
    // Reads every tensor that was promised a SHA-256 (an organ directory's) and checks it, before
    // a forward pass computes from them. Throws FormatError naming the file; false when stopped.
    bool checkPromises(const StopToken* stop = nullptr) const;

private:
    struct Entry {
        Tensor info;
        TensorSource source;
    };
    std::string m_label;
    std::shared_ptr<const GgufModel> m_model; // keeps the mappings alive
    std::vector<std::pair<std::string, MetaValue>> m_metadata;
    std::unordered_map<std::string, Entry> m_tensors;
};

} // namespace organ
