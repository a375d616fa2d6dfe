#include "graft/merge_layout.h"

#include "support/errors.h"
#include "support/text_format.h"

namespace organ {
namespace {

// The models one merged tensor reads, base first: their ids.
std::vector<std::string> inputIds(const MergeSpec& spec) {
    std::vector<std::string> ids;
    if (needsBase(spec.method)) {
        ids.push_back(spec.base);
    }
    for (const std::size_t i : spec.mergedModels()) {
        ids.push_back(spec.models[i].model);
    }
    return ids;
}

// How messages name the model of `id`: its file.
std::string inputName(const GraftModels& models, const std::string& id) {
    const GgufModel* model = models.find(id);
    return model != nullptr ? fileLabel(model->path()) : id;
}

} // namespace

MergeResolution resolveMerge(const MergeSpec& spec, const GraftModels& models, const std::string& tensor,
                             const TensorPlace& place, const TensorInfo& expected) {
    MergeResolution out;
    const bool embedding = place.anatomy.system == System::Embed;
    const MetaValue* vocabulary = models.base().find("tokenizer.ggml.tokens");
    for (const std::string& id : inputIds(spec)) {
        const GgufModel& model = *models.find(id);
        const TensorInfo* t = model.findTensor(tensor);
        const bool fits = t != nullptr && t->nDims == expected.nDims && t->ne == expected.ne;
        if (embedding && t != nullptr) {
            const MetaValue* theirs = model.find("tokenizer.ggml.tokens");
            const bool same =
                vocabulary == nullptr ? theirs == nullptr : theirs != nullptr && *vocabulary == *theirs;
            if (!same) {
                out.error = tensor + ": the vocabularies of " + inputName(models, "base") + " and " +
                            inputName(models, id) +
                            " differ; their embedding rows mean other tokens and are not merged";
                return out;
            }
        }
        if (!fits) {
            out.keptAsItStands = true;
            out.keptBecause = inputName(models, id) +
                              (t == nullptr ? " lacks it" : " has it " + t->shapeText()) + ", the base " +
                              expected.shapeText();
            return out;
        }
    }
    try {
        auto merge = std::make_shared<ChimeraMerge>();
        merge->tensor = tensor;
        merge->params = resolveTensorParams(spec, place, tensor);
        if (needsBase(spec.method)) {
            merge->base = spec.base;
        }
        for (const std::size_t i : spec.mergedModels()) {
            merge->models.push_back(spec.models[i].model);
        }
        out.merge = std::move(merge);
    } catch (const FormatError& error) {
        // The parameters name a model by its id in the plan ("base", "b"): the user knows its file.
        std::string message = error.what();
        for (const std::size_t i : spec.mergedModels()) {
            const std::string id = "model '" + spec.models[i].model + "'";
            if (const auto at = message.find(id); at != std::string::npos) {
                message.replace(at, id.size(), "model '" + inputName(models, spec.models[i].model) + "'");
            }
        }
        out.error = message;
    }
    return out;
}

std::string mergeSummary(const MergeSpec& spec, const GraftModels& models, std::size_t tensors) {
    const std::vector<std::string> ids = inputIds(spec);
    std::string from;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        from += (i == 0 ? "" : i + 1 == ids.size() ? " and " : ", ") + inputName(models, ids[i]);
    }
    return "merge (" + std::string(mergeMethodName(spec.method)) + "): " + std::to_string(tensors) +
           " tensor" + (tensors == 1 ? "" : "s") + " from " + from;
}

} // namespace organ
