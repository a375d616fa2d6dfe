#include "chimera.h"

#include "text_safety.h"

#include "dequant.h"
#include "format_error.h"
#include "gguf_writer.h"
#include "model_validation.h"
#include "quantize.h"
#include "sha256.h"

#include <algorithm>

namespace organ {
namespace {

// Decodes the source elements behind a range of target bytes and encodes them again.
TensorSource conversionSource(const GgufModel& model, const TensorInfo& source, TensorType target) {
    TensorSource out;
    const auto data = model.tensorData(source);
    const auto mapping = model.shards()[source.shard]->mapping();
    const TensorType from = source.type;
    out.generate = [data, mapping, from, target](std::uint64_t offset, std::span<std::byte> bytes) {
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

std::string headerSha256(const GgufModel& model) {
    const GgufFile& first = model.primary();
    return Sha256::hex(first.mapping()->bytes().first(static_cast<std::size_t>(first.headerSize())));
}

} // namespace

GraftModels GraftModels::open(const GraftPlan& plan) {
    GraftModels models;
    models.m_models.emplace_back("base", GgufModel::open(plan.base));
    for (const auto& [id, path] : plan.donors) {
        models.m_models.emplace_back(id, GgufModel::open(path));
    }
    return models;
}

GraftModels GraftModels::fromModels(NamedModels models) {
    GraftModels out;
    out.m_models = std::move(models);
    return out;
}

const GgufModel* GraftModels::find(const std::string& id) const {
    for (const auto& [modelId, model] : m_models) {
        if (modelId == id) {
            return model.get();
        }
    }
    return nullptr;
}

std::vector<std::string> GraftModels::ids() const {
    std::vector<std::string> out;
    for (const auto& entry : m_models) {
        out.push_back(entry.first);
    }
    return out;
}

bool CompatibilityReport::hasErrors() const {
    return count(Finding::Severity::Error) != 0;
}

std::size_t CompatibilityReport::count(Finding::Severity severity) const {
    return static_cast<std::size_t>(std::count_if(findings.begin(), findings.end(),
                                                  [&](const Finding& f) { return f.severity == severity; }));
}

GgufWriteSpec chimeraSpec(const GraftPlan& plan, const GraftModels& models, const ChimeraLayout& layout,
                          bool withSources) {
    const GgufModel& base = models.base();
    GgufWriteSpec spec;
    const std::string blockKey = base.architecture() + ".block_count";
    for (const auto& entry : base.metadata()) {
        const bool removed = std::find(layout.removeMetadata.begin(), layout.removeMetadata.end(),
                                       entry.key) != layout.removeMetadata.end();
        if (removed || entry.key.starts_with(kProvenancePrefix)) {
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

    for (const ChimeraTensor& t : layout.tensors) {
        const GgufModel& model = *models.find(t.model);
        const TensorInfo& source = *model.findTensor(t.sourceName);
        TensorToWrite w;
        w.name = t.name;
        w.type = t.targetType;
        w.nDims = source.nDims;
        w.ne = source.ne;
        if (!withSources) {
            // Not to be written: only its shape and type are read.
        } else if (t.converted) {
            w.source = conversionSource(model, source, t.targetType);
        } else {
            w.source.bytes = model.tensorData(source);
            w.source.mapping = model.shards()[source.shard]->mapping();
        }
        spec.tensors.push_back(std::move(w));
    }
    return spec;
}

JobResult assembleChimera(const GraftPlan& plan, const GraftModels& models, const CompatibilityReport& report,
                          const std::string& output, const AssemblyOptions& options,
                          const ProgressFn& progress, const StopToken* stop) {
    const auto blocking =
        std::count_if(report.findings.begin(), report.findings.end(), [&](const Finding& f) {
            return f.severity == Finding::Severity::Error && !(options.keepInvalid && f.fromValidation);
        });
    if (blocking != 0) {
        return JobResult::failed(fileLabel(output) + ": not written: the plan has " +
                                 std::to_string(blocking) + " error(s)");
    }
    const GgufWriteSpec spec = chimeraSpec(plan, models, report.layout, true);
    // Validated as llama.cpp would load it before it replaces anything: an invalid chimera is
    // never left on disk unless asked for.
    const auto accept = [&](const std::string& written) -> std::optional<std::string> {
        const auto findings = validateModel(*GgufModel::open(written));
        std::vector<std::string> errors;
        for (const Finding& f : findings) {
            if (f.severity == Finding::Severity::Error) {
                errors.push_back(f.message);
            }
        }
        if (errors.empty() || options.keepInvalid) {
            return std::nullopt;
        }
        return fileLabel(output) + ": not written: it would not load (" + std::to_string(errors.size()) +
               " validation error(s), the first: " + errors.front() + "); --keep-invalid keeps such a file";
    };
    return writeGguf(output, spec, progress, stop, accept);
}

GraftOutcome graftChimera(const GraftPlan& plan, const GraftModels& models, const std::string& output,
                          const AssemblyOptions& options,
                          const std::function<void(const CompatibilityReport&)>& checked,
                          const ProgressFn& progress, const StopToken* stop) {
    GraftOutcome outcome;
    GraftPlan withOutput = plan;
    withOutput.output = output;
    outcome.report = checkGraft(withOutput, models);
    if (checked) {
        checked(outcome.report);
    }
    outcome.written = assembleChimera(withOutput, models, outcome.report, output, options, progress, stop);
    if (outcome.written.isOk()) {
        outcome.validation = validateModel(*GgufModel::open(output));
    }
    return outcome;
}

std::string reportText(const CompatibilityReport& report, const GraftPlan& plan) {
    std::string text;
    for (const auto& f : report.findings) {
        text += std::string(severityName(f.severity)) + ": ";
        if (f.operation >= 0) {
            text +=
                "[operation " + std::to_string(f.operation + 1) + " " +
                std::string(operationKindName(plan.operations[static_cast<std::size_t>(f.operation)].kind)) +
                "] ";
        }
        text += escapeText(f.message) + "\n";
    }
    const ChimeraLayout& l = report.layout;
    text += std::to_string(l.tensors.size()) + " tensors, " + std::to_string(l.tensorsFromDonors) +
            " from donors (" + humanBytes(l.bytesFromDonors) + "), " + std::to_string(l.blocks) + " blocks";
    if (l.blocks != l.baseBlocks) {
        text += " (base: " + std::to_string(l.baseBlocks) + ")";
    }
    text += "; " + std::to_string(report.count(Finding::Severity::Error)) + " error(s), " +
            std::to_string(report.count(Finding::Severity::Warning)) + " warning(s)\n";
    return text;
}

} // namespace organ
