#pragma once

#include "gguf/gguf_file.h"
#include "quant/quantize_recipe.h"

#include <array>
#include <string>
#include <vector>

namespace organ {

// A tensor as the mixing rules see it: its name, type and shape.
struct MixTensor {
    std::string name;
    TensorType type = TensorType::F32;
    std::array<std::uint64_t, kGgufMaxDims> ne{1, 1, 1, 1};
};

// The facts of a model the mixing rules read (from its metadata; see mixModelOf).
struct MixModel {
    std::string architecture;
    std::uint32_t layers = 0;
    std::uint32_t heads = 0;
    std::uint32_t headsKv = 0; // 0 when unknown
    std::uint32_t experts = 0;
};
MixModel mixModelOf(const std::vector<MetaEntry>& metadata);

// llama.cpp's order of a model's tensors (indices into `tensors`): those outside layers first,
// then layer by layer, each by name. llama-quantize counts and writes tensors in this order.
std::vector<std::size_t> llamaTensorOrder(const std::vector<MixTensor>& tensors);

// Whether llama-quantize may quantize the tensor at all (tensor_allows_quantization): 2-D and up,
// a name ending in "weight", no norm, no position embedding, no expert gate…
bool allowsQuantization(const MixTensor& tensor, const QuantizeRecipe& recipe);

// A tensor's type in the quantized model: `type`, converted from its own when `convert`.
struct TensorChoice {
    TensorType type = TensorType::F32;
    bool convert = false;
    std::string note; // a fallback llama-quantize would warn about, or empty
};

// The type llama-quantize gives each tensor (in the order given), from its mixing rules: which
// tensors may be quantized, the attn_v / ffn_down / output bumps by layer, the fallbacks when a
// row does not fit the type's block. `hasImportance`: an importance matrix is used (two rules
// depend on it). Throws FormatError when llama-quantize would refuse the model (an expert
// tensor without a layer number, a row that fits no type).
std::vector<TensorChoice> chooseTensorTypes(const MixModel& model, const std::vector<MixTensor>& tensors,
                                            const QuantizeRecipe& recipe, bool hasImportance);

} // namespace organ
