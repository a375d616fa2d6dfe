#include "quant/quantize_model.h"

#include "quant/quantize.h"
#include "quant/quantized_source.h"
#include "support/errors.h"
#include "support/text_format.h"

namespace organ {
namespace {

// llama-quantize's GGML_QNT_VERSION, which it records in every file it writes.
constexpr std::uint32_t kQuantizationVersion = 2;
// llama-quantize keeps at most 127 bytes of a string it records.
constexpr std::size_t kMaxRecordedString = 127;

// As ggml's gguf_set_val_*: a key set again moves to the end.
void setLast(GgufWriteSpec& spec, const std::string& key, MetaValue value) {
    std::erase_if(spec.metadata, [&](const auto& entry) { return entry.first == key; });
    spec.metadata.emplace_back(key, std::move(value));
}

void recordImportance(GgufWriteSpec& spec, const QuantizeRecipe& recipe, const ImatrixData& matrix) {
    setLast(spec, "quantize.imatrix.file",
            MetaValue::fromString(recipe.imatrix.substr(0, kMaxRecordedString)));
    if (!matrix.datasets.empty()) {
        setLast(spec, "quantize.imatrix.dataset",
                MetaValue::fromString(matrix.datasets.front().substr(0, kMaxRecordedString)));
    }
    setLast(spec, "quantize.imatrix.entries_count",
            MetaValue::fromU32(static_cast<std::uint32_t>(matrix.entries.size())));
    if (matrix.chunkCount > 0) {
        setLast(spec, "quantize.imatrix.chunks_count", MetaValue::fromU32(matrix.chunkCount));
    }
}

} // namespace

std::vector<float> importanceWeightsOf(const ImatrixData& matrix, const std::string& file,
                                       const TensorInfo& t, std::vector<std::string>& notes) {
    const ImatrixEntry* entry = matrix.find(t.name);
    if (entry == nullptr) {
        notes.push_back(t.name + ": the importance matrix has no weights for it; quantized without");
        return {};
    }
    if (entry->sums.size() == t.ne[0] * t.ne[2]) {
        return entry->means();
    }
    if (t.name == "token_embd.weight" || t.name == "per_layer_token_embd.weight") {
        return {};
    }
    throw FormatError(fileLabel(file) + ": " + std::to_string(entry->sums.size()) + " weights for " + t.name +
                      ", which has " + std::to_string(t.ne[0] * t.ne[2]) + " columns");
}

void setQuantizeMetadata(GgufWriteSpec& spec, const QuantizeRecipe& recipe, const ImatrixData* importance) {
    setLast(spec, "general.quantization_version", MetaValue::fromU32(kQuantizationVersion));
    setLast(spec, "general.file_type", MetaValue::fromU32(llamaFileTypeNumber(recipe.fileType)));
    if (importance != nullptr) {
        recordImportance(spec, recipe, *importance);
    }
}

QuantizePlan planQuantization(const GgufModel& model, const QuantizeRecipe& recipe,
                              const ImatrixData* importance, unsigned threads) {
    std::vector<MixTensor> mix;
    for (const TensorInfo& t : model.tensors()) {
        mix.push_back({t.name, t.type, t.ne});
    }
    const std::vector<TensorChoice> choices =
        chooseTensorTypes(mixModelOf(model.metadata()), mix, recipe, importance != nullptr);
    QuantizePlan plan;
    for (const MetaEntry& entry : model.metadata()) {
        if (!entry.key.starts_with("split.")) {
            plan.spec.metadata.emplace_back(entry.key, entry.value);
        }
    }
    setQuantizeMetadata(plan.spec, recipe, importance);
    std::size_t requantized = 0;
    for (std::size_t i : llamaTensorOrder(mix)) {
        const TensorInfo& t = model.tensors()[i];
        const TensorChoice& choice = choices[i];
        TensorToWrite w{t.name, choice.type, t.nDims, t.ne, {}};
        QuantizedTensor report{t.name, choice.convert, false, t.type, choice.type};
        if (!choice.note.empty()) {
            plan.notes.push_back(choice.note);
        }
        if (choice.convert) {
            std::vector<float> weights;
            if (importance != nullptr) {
                weights = importanceWeightsOf(*importance, recipe.imatrix, t, plan.notes);
            }
            report.weighted = !weights.empty() && takesImportance(choice.type);
            if (!report.weighted) {
                weights.clear();
            }
            requantized += traitsOf(t.type).quantized ? 1 : 0;
            w.source = quantizedSource(model, t, choice.type, std::move(weights), threads);
        } else {
            w.source = model.tensorSource(t); // the writer checks a promised SHA-256 as it copies
        }
        plan.spec.tensors.push_back(std::move(w));
        plan.tensors.push_back(std::move(report));
    }
    if (requantized != 0) {
        plan.notes.push_back(std::to_string(requantized) + " tensor" +
                             (requantized == 1 ? " was" : "s were") +
                             " quantized already and quantized again (llama-quantize's --allow-requantize): "
                             "the result is worse than quantizing from F16 or F32");
    }
    return plan;
}

QuantizeOutcome quantizeModel(const GgufModel& model, const QuantizeRecipe& recipe,
                              const ImatrixData* importance, const RootedPath& output,
                              const ProgressFn& progress, const StopToken* stop, unsigned threads) {
    QuantizeOutcome outcome;
    try {
        QuantizePlan plan = planQuantization(model, recipe, importance, threads);
        outcome.tensors = std::move(plan.tensors);
        outcome.notes = std::move(plan.notes);
        outcome.written = writeGguf(output, plan.spec, progress, stop);
    } catch (const std::exception& error) {
        outcome.written = JobResult::failed(fileLabel(model.path()) + ": " + error.what());
    }
    return outcome;
}

nlohmann::json quantizeOutcomeToJson(const QuantizeOutcome& outcome, const QuantizeRecipe& recipe,
                                     const std::string& output) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const QuantizedTensor& t : outcome.tensors) {
        tensors.push_back({{"name", t.name},
                           {"from", tensorTypeName(t.from)},
                           {"to", tensorTypeName(t.to)},
                           {"converted", t.converted},
                           {"importance", t.weighted}});
    }
    return {{"output", output},
            {"written", outcome.written.isOk()},
            {"file_type", quantFileTypeName(recipe.fileType)},
            {"tensors", tensors},
            {"notes", outcome.notes}};
}

} // namespace organ
