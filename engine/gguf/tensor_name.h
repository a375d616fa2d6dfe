#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace organ {

// Layer numbers a tensor name may carry: llama.cpp allows 512 layers; a name with a larger
// number ("blk.4000000000.x") is not taken as a layer, so that no table grows with it.
inline constexpr std::uint32_t kMaxLayerIndex = 65535;

// "blk.12.attn_q.weight" → layer 12 and "attn_q.weight"; nullopt when the name is not in a
// layer (or its number is above kMaxLayerIndex). The one parser of layer names.
struct LayerName {
    std::uint32_t layer = 0;
    std::string_view rest;
};
std::optional<LayerName> parseLayerName(std::string_view name);

// The rest of `name` after "blk.<layer>."; empty when the name is not in that layer.
std::string_view suffixInLayer(std::string_view name, std::uint32_t layer);

// 12, "attn_q.weight" → "blk.12.attn_q.weight". The one writer of layer names.
std::string layerTensorName(std::uint32_t layer, std::string_view suffix);

} // namespace organ
