#pragma once

#include "anatomy/anatomy.h"
#include "gguf/gguf_model.h"
#include "support/finding.h"

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace organ {

// Layer-indexed metadata follows the layers of a chimera. llama.cpp reads some keys once per
// layer: feed_forward_length, attention.head_count and attention.head_count_kv may be an
// array of block_count values, and {arch}.leading_dense_block_count says which layers are
// dense. When layers are removed, duplicated, stacked or taken from donors, these must be
// rewritten or the file no longer loads ("key … has wrong array length").

// A model and one of its layers.
struct LayerOrigin {
    std::string model; // "base" or a donor id
    std::uint32_t layer = 0;
};

// Where one chimera layer's per-layer values come from: the layer it was made from, except for
// systems whose tensors came from another model's layer (replace, map_layer).
struct ChimeraLayerOrigin {
    LayerOrigin whole;
    std::map<System, LayerOrigin> bySystem;
    bool experts = false; // a mixture-of-experts layer (its feed-forward tensors say so)
};

// The per-layer keys of a model: the known ones (scalar or array), and every {arch}.* array
// whose length is its block count (except arrays of fixed length such as
// rope.dimension_sections). Suffixes after "{arch}.".
std::vector<std::string> perLayerKeysOf(const GgufModel& model);

// The system whose tensors a per-layer key describes (feed_forward_length: organ;
// attention.*: skeleton); nullopt for keys of a whole layer.
std::optional<System> systemOfLayerKey(std::string_view suffix);

struct LayerMetadata {
    std::vector<std::pair<std::string, MetaValue>> set; // keys to write, before the plan's own
    std::vector<Finding> findings;                      // what changed, and what cannot be made right
};

// Rewrites the base's layer-indexed metadata for the chimera's layers. `model` finds a plan
// model by id ("base", donor ids).
LayerMetadata rewriteLayerMetadata(const std::function<const GgufModel*(const std::string&)>& model,
                                   const std::vector<ChimeraLayerOrigin>& layers);

} // namespace organ
