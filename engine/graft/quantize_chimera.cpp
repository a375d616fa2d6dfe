#include "graft/quantize_chimera.h"

#include "quant/quant_mix.h"
#include "quant/quantize.h"
#include "support/errors.h"

#include <algorithm>

namespace organ {
namespace {

const TensorInfo& sourceOf(const GraftModels& models, const ChimeraTensor& t) {
    return *models.find(t.model)->findTensor(t.sourceName);
}

// The metadata the mixing rules read from the finished chimera: the base's, the plan's keys set
// and removed, the chimera's block count.
MixModel mixModelOfChimera(const ChimeraLayout& layout, const GgufModel& base) {
    std::vector<MetaEntry> metadata(base.metadata().begin(), base.metadata().end());
    std::erase_if(metadata, [&](const MetaEntry& e) {
        return std::find(layout.removeMetadata.begin(), layout.removeMetadata.end(), e.key) !=
               layout.removeMetadata.end();
    });
    for (const auto& set : layout.setMetadata) {
        std::erase_if(metadata, [&](const MetaEntry& e) { return e.key == set.first; });
        metadata.push_back({set.first, set.second});
    }
    MixModel model = mixModelOf(metadata);
    model.layers = layout.blocks;
    return model;
}

} // namespace

std::vector<Finding> quantizeLayout(ChimeraLayout& layout, const QuantizeRecipe& recipe,
                                    const GraftModels& models, int operation) {
    std::vector<MixTensor> tensors;
    for (const ChimeraTensor& t : layout.tensors) {
        tensors.push_back({t.name, t.targetType, sourceOf(models, t).ne});
    }
    std::vector<Finding> findings;
    std::vector<TensorChoice> choices;
    try {
        choices = chooseTensorTypes(mixModelOfChimera(layout, models.base()), tensors, recipe,
                                    !recipe.imatrix.empty());
    } catch (const FormatError& error) {
        findings.push_back(
            {Finding::Severity::Error, std::string("quantize: ") + error.what(), {}, operation});
        return findings;
    }
    layout.quantize = recipe;
    std::vector<std::string> requantized;
    for (std::size_t i = 0; i < choices.size(); ++i) {
        ChimeraTensor& t = layout.tensors[i];
        const TensorInfo& source = sourceOf(models, t);
        if (!choices[i].note.empty()) {
            findings.push_back(
                {Finding::Severity::Warning, "quantize: " + choices[i].note, {t.name}, operation});
        }
        if (choices[i].type == t.targetType) {
            continue;
        }
        t.targetType = choices[i].type;
        t.converted = !t.purify && !t.merge && source.type != t.targetType;
        t.quantizeOperation = operation;
        if (t.converted && traitsOf(source.type).quantized) {
            requantized.push_back(t.name);
        }
        const ImatrixData* matrix = models.importance();
        const ImatrixEntry* entry = matrix != nullptr ? matrix->find(t.name) : nullptr;
        const bool embedding = t.name == "token_embd.weight" || t.name == "per_layer_token_embd.weight";
        if (entry != nullptr && entry->sums.size() != source.ne[0] * source.ne[2] && !embedding) {
            findings.push_back({Finding::Severity::Error,
                                "quantize: the importance matrix has " + std::to_string(entry->sums.size()) +
                                    " weights for " + t.name + ", which has " +
                                    std::to_string(source.ne[0] * source.ne[2]) + " columns",
                                {t.name},
                                operation});
        }
    }
    if (!requantized.empty()) {
        findings.push_back({Finding::Severity::Info,
                            "quantize: " + std::to_string(requantized.size()) + " tensor" +
                                (requantized.size() == 1 ? " is" : "s are") +
                                " quantized already and quantized again (worse than from F16 or F32)",
                            requantized, operation});
    }
    return findings;
}

std::vector<float> chimeraTensorWeights(const ChimeraLayout& layout, const GraftModels& models,
                                        const ChimeraTensor& tensor) {
    const ImatrixData* matrix = models.importance();
    if (!layout.quantize || matrix == nullptr || !takesImportance(tensor.targetType)) {
        return {};
    }
    const ImatrixEntry* entry = matrix->find(tensor.name);
    const TensorInfo& source = sourceOf(models, tensor);
    if (entry == nullptr || entry->sums.size() != source.ne[0] * source.ne[2]) {
        return {};
    }
    return entry->means();
}

} // namespace organ
