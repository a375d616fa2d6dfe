#include "purify/purify_model.h"

#include "anatomy/anatomy.h"
#include "measure/measure_report.h"
#include "measure/zmeasure.h"
#include "organs/organ_directory.h"
#include "quant/dequant.h"
#include "quant/quantize.h"
#include "support/errors.h"
#include "support/free_vector.h"
#include "support/text_format.h"

#include <algorithm>

namespace organ {
namespace {

std::optional<double> thetaOf(TensorType type, std::span<const std::byte> data, std::uint64_t elements) {
    const std::optional<ZResult> z = measureTensor(type, data, elements, ZParams{});
    return z ? z->theta : std::nullopt;
}

// Purifies a tensor's values (`source`, as stored, checked against its promised SHA-256
// first) whole and encodes them as `target`.
PurifiedBytes purifyData(const TensorInfo& t, const TensorSource& source, TensorType target,
                         const PurifyParams& params, std::span<const float> importance = {}) {
    checkPromise(source);
    std::vector<float> values(static_cast<std::size_t>(t.elements));
    dequantizeRange(t.type, source.bytes, 0, values.size(), values.data());
    return purifyValues(t, std::move(values), source.bytes, target, params, importance);
}

} // namespace

void PurifyLog::add(PurifiedTensor tensor) {
    std::lock_guard lock(m_mutex);
    m_tensors.push_back(std::move(tensor));
}

std::vector<PurifiedTensor> PurifyLog::tensors() const {
    std::lock_guard lock(m_mutex);
    return m_tensors;
}

TensorType purifiedType(TensorType type) {
    return canQuantizeTo(type) ? type : TensorType::F16;
}

PurifiedBytes purifyValues(const TensorInfo& t, std::vector<float> values, std::span<const std::byte> stored,
                           TensorType target, const PurifyParams& params, std::span<const float> importance) {
    const Purified purified = purify(values, t.ne[0], params);
    freeVector(values);
    PurifiedBytes out;
    out.bytes.resize(static_cast<std::size_t>(storedBytes(target, t.elements)));
    if (importance.empty()) {
        const std::uint64_t blocks = t.elements / traitsOf(target).blockSize;
        quantizeBlocks(target, purified.values.data(), static_cast<std::size_t>(blocks), out.bytes.data());
    } else {
        // One matrix (ne[1] rows) per expert, each with its own weights.
        const std::uint64_t rows = std::max<std::uint64_t>(1, t.ne[1]);
        const std::uint64_t rowBytes = storedBytes(target, t.ne[0]);
        for (std::uint64_t e = 0; e * t.ne[0] < importance.size(); ++e) {
            quantizeRows(target, purified.values.data() + e * rows * t.ne[0], rows, t.ne[0],
                         importance.data() + e * t.ne[0], out.bytes.data() + e * rows * rowBytes);
        }
    }
    out.report.name = t.name;
    out.report.from = t.type;
    out.report.to = target;
    out.report.thetaBefore = thetaOf(t.type, stored, t.elements);
    out.report.thetaAfter = thetaOf(target, out.bytes, t.elements);
    out.report.relativeChange = purified.relativeChange;
    out.report.keptFraction = purified.keptFraction;
    return out;
}

PurifiedBytes purifyTensor(const GgufModel& model, const TensorInfo& t, TensorType target,
                           const PurifyParams& params) {
    return purifyData(t, model.tensorSource(t), target, params);
}

TensorSource purifiedSource(const GgufModel& model, const TensorInfo& tensor, const std::string& name,
                            TensorType target, const PurifyParams& params, bool once,
                            std::shared_ptr<PurifyLog> log, std::vector<float> importance) {
    // The bytes and the mapping that holds them, never the model: a planned chimera's spec may
    // outlive the GraftModels it was made from (the vital signs run it on the engine thread).
    auto logged = std::make_shared<std::once_flag>();
    TensorSource from = model.tensorSource(tensor);
    std::vector<FileSpan> reads = readsOf(from);
    auto make = [from = std::move(from), tensor, name, target, params, log, logged,
                 importance = std::move(importance)] {
        PurifiedBytes made = purifyData(tensor, from, target, params, importance);
        made.report.name = name;
        if (log) {
            std::call_once(*logged, [&] { log->add(std::move(made.report)); });
        }
        return std::move(made.bytes);
    };
    TensorSource source =
        madeSource(std::move(make), storedBytes(target, tensor.elements), once, tensor.name);
    source.reads = std::move(reads);
    return source;
}

void setPurifyMetadata(GgufWriteSpec& spec, const PurifyParams& params,
                       const std::vector<std::string>& tensors) {
    spec.set("organ.purify.version", MetaValue::fromString(kPurifyVersion));
    spec.set("organ.purify.method", MetaValue::fromString(purifyMethodName(params.method)));
    if (params.method == PurifyParams::Method::Fft) {
        spec.set("organ.purify.keep", MetaValue::fromF64(params.keep));
    } else {
        spec.set("organ.purify.threshold", MetaValue::fromF64(params.threshold));
        spec.set("organ.purify.attenuation", MetaValue::fromF64(params.attenuation));
    }
    spec.set("organ.purify.tensors", MetaValue::fromStrings(tensors));
}

PurifyOutcome purifyModel(const GgufModel& model, const TensorSelector& select, const PurifyParams& params,
                          const RootedPath& output, const ProgressFn& progress, const StopToken* stop) {
    PurifyOutcome outcome;
    if (const auto problem = purifyParamsProblem(params)) {
        outcome.written = JobResult::failed(fileLabel(model.path()) + ": " + *problem);
        return outcome;
    }
    GgufWriteSpec spec;
    for (const MetaEntry& entry : model.metadata()) {
        if (!entry.key.starts_with("split.") && !entry.key.starts_with("organ.purify.")) {
            spec.metadata.emplace_back(entry.key, entry.value);
        }
    }
    auto log = std::make_shared<PurifyLog>();
    std::vector<std::string> purifiedNames;
    for (const TensorInfo& t : model.tensors()) {
        TensorToWrite w{t.name, t.type, t.nDims, t.ne, {}};
        if (select.isEmpty() || select.matches(t.name, classifyTensor(t.name))) {
            w.type = purifiedType(t.type);
            if (w.type != t.type) {
                outcome.findings.push_back(t.name + ": the engine cannot write " +
                                           std::string(tensorTypeName(t.type)) + "; stored as F16");
            }
            w.source = purifiedSource(model, t, t.name, w.type, params, true, log);
            purifiedNames.push_back(t.name);
        } else {
            w.source = model.tensorSource(t);
        }
        spec.tensors.push_back(std::move(w));
    }
    if (purifiedNames.empty()) {
        outcome.written = JobResult::failed(fileLabel(model.path()) + ": the selection picks no tensor");
        return outcome;
    }
    setPurifyMetadata(spec, params, purifiedNames);
    if (isOrganDirectoryTarget(output.path)) {
        OrganSource source;
        source.made = "purify";
        outcome.written = writeOrganDirectory(spec, output, source, nullptr, progress, stop);
    } else {
        outcome.written = writeGguf(output, spec, progress, stop);
    }
    outcome.tensors = log->tensors();
    return outcome;
}

nlohmann::json purifiedToJson(const std::vector<PurifiedTensor>& tensors) {
    nlohmann::json list = nlohmann::json::array();
    for (const PurifiedTensor& t : tensors) {
        list.push_back({{"name", t.name},
                        {"from", tensorTypeName(t.from)},
                        {"to", tensorTypeName(t.to)},
                        {"theta_before", optionalNumber(t.thetaBefore)},
                        {"theta_after", optionalNumber(t.thetaAfter)},
                        {"relative_change", t.relativeChange},
                        {"kept_fraction", t.keptFraction}});
    }
    return list;
}

nlohmann::json purifyOutcomeToJson(const PurifyOutcome& outcome, const std::string& output) {
    return {{"output", output},
            {"written", outcome.written.isOk()},
            {"purified", purifiedToJson(outcome.tensors)},
            {"notes", outcome.findings}};
}

} // namespace organ
