#include "graft/chimera_spec.h"

#include "graft/quantize_chimera.h"
#include "merge/merged_source.h"
#include "quant/dequant.h"
#include "quant/quant_mix.h"
#include "quant/quantize.h"
#include "quant/quantize_model.h"
#include "quant/quantized_source.h"
#include "support/sha256.h"
#include "support/text_safety.h"

#include <algorithm>
#include <mutex>

namespace organ {
namespace {

// Decodes the source elements behind a range of target bytes and encodes them again; the
// source's promised SHA-256 is checked before its first bytes are converted.
TensorSource conversionSource(const GgufModel& model, const TensorInfo& source, TensorType target) {
    TensorSource in = model.tensorSource(source);
    TensorSource out;
    out.reads = readsOf(in);
    const TensorType from = source.type;
    auto checked = std::make_shared<std::once_flag>();
    out.generate = [in = std::move(in), from, target, checked](std::uint64_t offset,
                                                               std::span<std::byte> bytes) {
        std::call_once(*checked, [&in] { checkPromise(in); });
        const auto data = in.bytes;
        const auto& mapping = in.mapping;
        const auto& t = traitsOf(target);
        const std::uint64_t firstBlock = offset / t.bytesPerBlock;
        const std::uint64_t endBlock = (offset + bytes.size() + t.bytesPerBlock - 1) / t.bytesPerBlock;
        const auto blocks = static_cast<std::size_t>(endBlock - firstBlock);
        std::vector<float> values(blocks * t.blockSize);
        dequantizeRange(from, data, firstBlock * t.blockSize, values.size(), values.data());
        std::vector<std::byte> encoded(blocks * t.bytesPerBlock);
        quantizeBlocks(target, values.data(), blocks, encoded.data());
        const auto skip = static_cast<std::size_t>(offset - firstBlock * t.bytesPerBlock);
        std::copy_n(encoded.begin() + static_cast<std::ptrdiff_t>(skip), bytes.size(), bytes.begin());
        const auto& s = traitsOf(from);
        const auto base = static_cast<std::uint64_t>(data.data() - mapping->bytes().data());
        mapping->release(base + firstBlock * t.blockSize / s.blockSize * s.bytesPerBlock,
                         values.size() / s.blockSize * s.bytesPerBlock);
    };
    return out;
}

// The source of a merged chimera tensor: its inputs' bytes, merged (and purified) as read.
TensorSource mergedChimeraSource(const GraftModels& models, const ChimeraTensor& t, const TensorInfo& shape,
                                 std::vector<float> importance, ChimeraSources sources,
                                 std::shared_ptr<PurifyLog> log) {
    auto input = [&](const std::string& id) {
        const GgufModel& model = *models.find(id);
        const TensorInfo& info = *model.findTensor(t.merge->tensor);
        return MergeInput{model.tensorSource(info), info.type};
    };
    MergedTensor merged;
    merged.name = t.name;
    merged.params = t.merge->params;
    if (!t.merge->base.empty()) {
        merged.base = input(t.merge->base);
    }
    for (const std::string& id : t.merge->models) {
        merged.models.push_back(input(id));
    }
    merged.ne = shape.ne;
    merged.target = t.targetType;
    merged.importance = std::move(importance);
    merged.purify = t.purify;
    return mergedSource(std::move(merged),
                        sources == ChimeraSources::Writer ? MergedReading::Once : MergedReading::Again,
                        std::move(log));
}

// organ.merge.*: what was merged, from which models (id: general.name), how, and which tensors.
void setMergeMetadata(GgufWriteSpec& spec, const MergeSpec& merge, const GraftModels& models,
                      const std::vector<std::string>& tensors) {
    auto named = [&](const std::string& id) { return id + ": " + models.find(id)->name(); };
    spec.set("organ.merge.version", MetaValue::fromU32(kMergeVersion));
    spec.set("organ.merge.method", MetaValue::fromString(std::string(mergeMethodName(merge.method))));
    if (!merge.base.empty()) {
        spec.set("organ.merge.base", MetaValue::fromString(named(merge.base)));
    }
    std::vector<std::string> names;
    for (const MergeModel& m : merge.models) {
        names.push_back(named(m.model));
    }
    spec.set("organ.merge.models", MetaValue::fromStrings(names));
    nlohmann::json parameters;
    mergeSpecToJson(merge, parameters);
    spec.set("organ.merge.parameters", MetaValue::fromString(dumpJson(parameters)));
    if (usesSeed(merge.method)) {
        spec.set("organ.merge.seed", MetaValue::fromU64(merge.seed));
    }
    spec.set("organ.merge.tensors", MetaValue::fromStrings(tensors));
}

std::string headerSha256(const GgufModel& model) {
    const GgufFile& first = model.primary();
    return Sha256::hex(first.mapping()->bytes().first(static_cast<std::size_t>(first.headerSize())));
}

} // namespace

GgufWriteSpec chimeraSpec(const GraftPlan& plan, const GraftModels& models, const ChimeraLayout& layout,
                          ChimeraSources sources, std::shared_ptr<PurifyLog> log) {
    const bool withSources = sources != ChimeraSources::None;
    const GgufModel& base = models.base();
    GgufWriteSpec spec;
    const std::string blockKey = base.architecture() + ".block_count";
    for (const auto& entry : base.metadata()) {
        const bool removed = std::find(layout.removeMetadata.begin(), layout.removeMetadata.end(),
                                       entry.key) != layout.removeMetadata.end();
        if (removed || entry.key.starts_with(kProvenancePrefix) ||
            (layout.merge && entry.key.starts_with(kMergePrefix))) {
            continue;
        }
        if (entry.key == blockKey && layout.blocks != layout.baseBlocks) {
            spec.metadata.emplace_back(entry.key, entry.value.type() == ValueType::U64
                                                      ? MetaValue::fromU64(layout.blocks)
                                                      : MetaValue::fromU32(layout.blocks));
            continue;
        }
        spec.metadata.emplace_back(entry.key, entry.value);
    }
    for (const auto& [key, value] : layout.setMetadata) {
        spec.set(key, value);
    }
    std::vector<std::string> names;
    std::vector<std::string> hashes;
    for (const auto& id : models.ids()) {
        const GgufModel& m = *models.find(id);
        names.push_back(id + ": " + m.name());
        hashes.push_back(withSources ? headerSha256(m) : std::string());
    }
    const std::string prefix = kProvenancePrefix;
    spec.set(prefix + "version", MetaValue::fromU32(kGraftPlanVersion));
    spec.set(prefix + "tool", MetaValue::fromString("Organ Workbench"));
    spec.set(prefix + "parents", MetaValue::fromStrings(names));
    spec.set(prefix + "parents_header_sha256", MetaValue::fromStrings(hashes));
    spec.set(prefix + "operations", MetaValue::fromString(dumpJson(graftPlanToJson(plan).at("operations"))));

    std::vector<std::string> purified;
    std::vector<std::string> merged;
    for (const ChimeraTensor& t : layout.tensors) {
        const GgufModel& model = *models.find(t.model);
        const TensorInfo& source = *model.findTensor(t.sourceName);
        TensorToWrite w;
        w.name = t.name;
        w.type = t.targetType;
        w.nDims = source.nDims;
        w.ne = source.ne;
        if (t.purify) {
            purified.push_back(t.name);
        }
        if (t.merge) {
            merged.push_back(t.name);
        }
        if (!withSources) {
            // Not to be written: only its shape and type are read.
        } else if (t.merge) {
            w.source =
                mergedChimeraSource(models, t, source, chimeraTensorWeights(layout, models, t), sources, log);
        } else if (t.purify) {
            w.source = purifiedSource(model, source, t.name, t.targetType, *t.purify,
                                      sources == ChimeraSources::Writer, log,
                                      chimeraTensorWeights(layout, models, t));
        } else if (t.converted) {
            std::vector<float> weights = chimeraTensorWeights(layout, models, t);
            w.source = weights.empty() ? conversionSource(model, source, t.targetType)
                                       : quantizedSource(model, source, t.targetType, std::move(weights));
        } else {
            w.source = model.tensorSource(source);
        }
        spec.tensors.push_back(std::move(w));
    }
    if (!purified.empty() && layout.purify) {
        setPurifyMetadata(spec, *layout.purify, purified);
    }
    if (!merged.empty() && layout.merge) {
        setMergeMetadata(spec, *layout.merge, models, merged);
    }
    if (layout.quantize) {
        setQuantizeMetadata(spec, *layout.quantize, models.importance());
        // In the order organ quantize (and llama-quantize) writes a model's tensors.
        std::vector<MixTensor> names;
        for (const TensorToWrite& w : spec.tensors) {
            names.push_back({w.name, w.type, w.ne});
        }
        std::vector<TensorToWrite> ordered;
        for (const std::size_t i : llamaTensorOrder(names)) {
            ordered.push_back(std::move(spec.tensors[i]));
        }
        spec.tensors = std::move(ordered);
    }
    return spec;
}

} // namespace organ
