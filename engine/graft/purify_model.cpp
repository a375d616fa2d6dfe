#include "graft/purify_model.h"

#include "anatomy/anatomy.h"
#include "gguf/gguf_writer.h"
#include "measure/zmeasure.h"
#include "quant/dequant.h"
#include "quant/quantize.h"
#include "support/errors.h"
#include "support/text_format.h"

namespace organ {
namespace {

std::optional<double> thetaOf(TensorType type, std::span<const std::byte> data, std::uint64_t elements) {
    const std::optional<ZResult> z = measureTensor(type, data, elements, ZParams{});
    return z ? z->theta : std::nullopt;
}

} // namespace

PurifyOutcome purifyModel(const GgufModel& model, const TensorSelector& select, const PurifyParams& params,
                          const std::string& output, const ProgressFn& progress, const StopToken* stop) {
    PurifyOutcome outcome;
    GgufWriteSpec spec;
    for (const MetaEntry& entry : model.metadata()) {
        if (!entry.key.starts_with("split.") && !entry.key.starts_with("organ.purify.")) {
            spec.metadata.emplace_back(entry.key, entry.value);
        }
    }
    std::vector<std::string> purifiedNames;
    // Which tensors the selection picks, decided once.
    std::vector<bool> picked;
    std::uint64_t total = 0;
    for (const TensorInfo& t : model.tensors()) {
        picked.push_back(select.isEmpty() || select.matches(t.name, classifyTensor(t.name)));
        total += picked.back() ? t.elements : 0;
    }
    std::uint64_t done = 0;
    try {
        for (std::size_t i = 0; i < model.tensors().size(); ++i) {
            const TensorInfo& t = model.tensors()[i];
            TensorToWrite w;
            w.name = t.name;
            w.type = t.type;
            w.nDims = t.nDims;
            w.ne = t.ne;
            w.source.bytes = model.tensorData(t);
            if (!picked[i]) {
                spec.tensors.push_back(std::move(w));
                continue;
            }
            if (stop != nullptr && stop->stopRequested()) {
                outcome.written = JobResult::cancelled();
                return outcome;
            }
            std::vector<float> values(static_cast<std::size_t>(t.elements));
            dequantizeRange(t.type, model.tensorData(t), 0, values.size(), values.data());
            const Purified purified = purify(values, t.ne[0], params);
            PurifiedTensor report;
            report.name = t.name;
            report.from = t.type;
            report.to = canQuantizeTo(t.type) ? t.type : TensorType::F16;
            if (report.to != t.type) {
                outcome.findings.push_back(t.name + ": the engine cannot write " +
                                           std::string(tensorTypeName(t.type)) + "; stored as F16");
            }
            const TensorTypeTraits& traits = traitsOf(report.to);
            auto bytes = std::make_shared<std::vector<std::byte>>(
                static_cast<std::size_t>(t.elements / traits.blockSize * traits.bytesPerBlock));
            quantizeBlocks(report.to, purified.values.data(),
                           static_cast<std::size_t>(t.elements / traits.blockSize), bytes->data());
            report.thetaBefore = thetaOf(t.type, model.tensorData(t), t.elements);
            report.thetaAfter = thetaOf(report.to, *bytes, t.elements);
            report.relativeChange = purified.relativeChange;
            report.keptFraction = purified.keptFraction;
            w.type = report.to;
            w.source.bytes = *bytes;
            w.source.owner = bytes;
            spec.tensors.push_back(std::move(w));
            outcome.tensors.push_back(std::move(report));
            purifiedNames.push_back(t.name);
            done += t.elements;
            if (progress) {
                progress({done, total, "purifying"});
            }
        }
    } catch (const std::invalid_argument& e) {
        outcome.written = JobResult::failed(fileLabel(model.path()) + ": " + e.what());
        return outcome;
    }
    if (purifiedNames.empty()) {
        outcome.written = JobResult::failed(fileLabel(model.path()) + ": the selection picks no tensor");
        return outcome;
    }
    spec.set("organ.purify.version", MetaValue::fromString(kPurifyVersion));
    spec.set("organ.purify.method", MetaValue::fromString(purifyMethodName(params.method)));
    if (params.method == PurifyParams::Method::Fft) {
        spec.set("organ.purify.keep", MetaValue::fromF64(params.keep));
    } else {
        spec.set("organ.purify.threshold", MetaValue::fromF64(params.threshold));
        spec.set("organ.purify.attenuation", MetaValue::fromF64(params.attenuation));
    }
    spec.set("organ.purify.tensors", MetaValue::fromStrings(purifiedNames));
    outcome.written = writeGguf(output, spec, progress, stop);
    return outcome;
}

} // namespace organ
