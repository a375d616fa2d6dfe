#pragma once

#include "gguf/gguf_writer.h"
#include "merge/tensor_merger.h"
#include "purify/purify_model.h"

#include <memory>
#include <optional>
#include <vector>

namespace organ {

// An input tensor of a merge: its bytes as stored (a model's tensorSource, checked against a
// promised SHA-256 before its values are used) and their type.
struct MergeInput {
    TensorSource source;
    TensorType type = TensorType::F32;
};

// Everything one merged tensor of the output is made from.
struct MergedTensor {
    std::string name; // in the output
    TensorMergeParams params;
    std::optional<MergeInput> base;
    std::vector<MergeInput> models; // in params' order
    std::array<std::uint64_t, kGgufMaxDims> ne{1, 1, 1, 1};
    TensorType target = TensorType::F32; // canQuantizeTo
    // Importance weights to encode with (ne[0] per expert, a quantized chimera's matrix) or empty.
    std::vector<float> importance;
    std::optional<PurifyParams> purify; // the merged values purified before they are encoded
};

// How the output's bytes will be read: once in order (the writer: values are merged a batch of rows
// at a time, as they are written, and nothing is kept), or again and again (the vital signs: the
// tensor is merged whole when first asked for and kept while the source lives). A purified merge is
// merged and purified whole either way. What purifying did goes to `log`.
enum class MergedReading { Once, Again };
TensorSource mergedSource(MergedTensor tensor, MergedReading reading, std::shared_ptr<PurifyLog> log = {});

// The merger of the tensor, its inputs checked against their promised SHA-256 first and its
// whole-tensor passes run; each batch's input pages given back to the kernel once read.
std::unique_ptr<TensorMerger> preparedMerger(const MergedTensor& tensor);

// Tells the kernel that an input's pages holding values [first, first + count) are done with, so
// that streaming a large model keeps the resident set small.
void releaseValues(const MergeInput& input, std::uint64_t first, std::uint64_t count);

// Every merged value of the tensor (its inputs checked first), in storage order.
std::vector<float> mergedValues(const MergedTensor& tensor);

} // namespace organ
