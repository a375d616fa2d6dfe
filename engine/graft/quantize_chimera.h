#pragma once

#include "graft/graft_check.h"
#include "quant/quantize_recipe.h"

#include <vector>

namespace organ {

// A plan's quantize operation applied to the chimera's layout (runs once every other operation is
// resolved): each tensor's type is the one organ quantize would give it in the finished chimera
// (its names and shapes, the base's metadata with the chimera's blocks and the plan's keys), and a
// tensor whose bytes are not already of that type is converted. With an importance matrix at hand
// (GraftModels::importance), a tensor whose weights do not fit it is an error, as in
// llama-quantize. Returns what to tell: fallbacks, requantized tensors, `operation` named.
std::vector<Finding> quantizeLayout(ChimeraLayout& layout, const QuantizeRecipe& recipe,
                                    const GraftModels& models, int operation);

// The importance weights of a chimera tensor (ne[0] per expert) when the layout is quantized with
// a matrix that has fitting ones, else empty: what llama-quantize would weigh it by.
std::vector<float> chimeraTensorWeights(const ChimeraLayout& layout, const GraftModels& models,
                                        const ChimeraTensor& tensor);

} // namespace organ
