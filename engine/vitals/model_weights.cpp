#include "vitals/model_weights.h"

#include "graft/chimera_spec.h"
#include "quant/dequant.h"
#include "support/errors.h"
#include "support/text_format.h"

namespace organ {
namespace {

ModelWeights::Tensor infoOf(const TensorToWrite& t) {
    ModelWeights::Tensor info;
    info.type = t.type;
    info.nDims = t.nDims;
    info.ne = t.ne;
    info.elements = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
    return info;
}

} // namespace

ModelWeights ModelWeights::ofModel(std::shared_ptr<const GgufModel> model) {
    ModelWeights w;
    w.m_label = fileLabel(model->path());
    for (const auto& entry : model->metadata()) {
        w.m_metadata.emplace_back(entry.key, entry.value);
    }
    for (const TensorInfo& t : model->tensors()) {
        Entry e;
        e.info.type = t.type;
        e.info.nDims = t.nDims;
        e.info.ne = t.ne;
        e.info.elements = t.elements;
        e.source = model->tensorSource(t);
        w.m_tensors.emplace(t.name, std::move(e));
    }
    w.m_model = std::move(model);
    return w;
}

ModelWeights ModelWeights::ofPlan(const GraftPlan& plan, const GraftModels& models,
                                  const CompatibilityReport& report) {
    if (report.hasErrors()) {
        throw FormatError("the plan has errors: vital signs need a chimera that can be assembled");
    }
    GgufWriteSpec spec = chimeraSpec(plan, models, report.layout, ChimeraSources::Reader);
    ModelWeights w;
    const std::string output = plan.output.empty() ? std::string("chimera") : fileLabel(plan.output);
    w.m_label = output + " (planned)";
    w.m_metadata = std::move(spec.metadata);
    for (TensorToWrite& t : spec.tensors) {
        w.m_tensors.emplace(t.name, Entry{infoOf(t), std::move(t.source)});
    }
    return w;
}

void ModelWeights::replaceTensor(std::string_view name, TensorType type, TensorSource source) {
    const auto it = m_tensors.find(std::string(name));
    if (it == m_tensors.end()) {
        throw FormatError(m_label + ": no tensor " + std::string(name));
    }
    it->second.info.type = type;
    it->second.source = std::move(source);
}

std::uint64_t ModelWeights::tensorBytes() const {
    std::uint64_t total = 0;
    for (const auto& [name, e] : m_tensors) {
        total += storedBytes(e.info.type, e.info.elements);
    }
    return total;
}

bool ModelWeights::checkPromises(const StopToken* stop) const {
    for (const auto& [name, e] : m_tensors) {
        if (stop != nullptr && stop->stopRequested()) {
            return false;
        }
        if (!e.source.generate) {
            checkPromise(e.source);
        }
    }
    return true;
}

const MetaValue* ModelWeights::find(std::string_view key) const {
    for (const auto& [k, v] : m_metadata) {
        if (k == key) {
            return &v;
        }
    }
    return nullptr;
}

std::string ModelWeights::architecture() const {
    const MetaValue* v = find("general.architecture");
    const auto s = v ? v->asString() : std::nullopt;
    return s ? std::string(*s) : std::string();
}

std::optional<std::uint64_t> ModelWeights::archValue(std::string_view key) const {
    const MetaValue* v = find(architecture() + "." + std::string(key));
    return v ? v->asUInt() : std::nullopt;
}

std::string ModelWeights::Tensor::shapeText() const {
    std::string out;
    for (std::uint32_t d = 0; d < std::max<std::uint32_t>(1, nDims); ++d) {
        out += (d == 0 ? "" : " × ") + std::to_string(ne[d]);
    }
    return out;
}

const ModelWeights::Tensor* ModelWeights::tensor(std::string_view name) const {
    const auto it = m_tensors.find(std::string(name));
    return it == m_tensors.end() ? nullptr : &it->second.info;
}

void ModelWeights::dequantizeRows(std::string_view name, std::uint64_t first, std::uint64_t count,
                                  float* out) const {
    std::vector<std::byte> scratch;
    const std::span<const std::byte> bytes = rowBytes(name, first, count, scratch);
    const Tensor& info = m_tensors.find(std::string(name))->second.info;
    dequantizeRange(info.type, bytes, 0, static_cast<std::size_t>(count * info.ne[0]), out);
}

std::span<const std::byte> ModelWeights::rowBytes(std::string_view name, std::uint64_t first,
                                                  std::uint64_t count,
                                                  std::vector<std::byte>& scratch) const {
    const auto it = m_tensors.find(std::string(name));
    if (it == m_tensors.end()) {
        throw FormatError(m_label + ": no tensor " + std::string(name));
    }
    const Entry& e = it->second;
    const std::uint64_t columns = e.info.ne[0];
    const std::uint64_t rows = columns == 0 ? 0 : e.info.elements / columns;
    if (first > rows || count > rows - first) {
        throw FormatError(m_label + ": rows " + std::to_string(first) + "+" + std::to_string(count) + " of " +
                          std::string(name) + " are outside its " + std::to_string(rows));
    }
    // Rows are whole blocks (the reader and the writer check it).
    const TensorTypeTraits& traits = traitsOf(e.info.type);
    const std::uint64_t bytesPerRow = columns / traits.blockSize * traits.bytesPerBlock;
    if (!e.source.generate || !e.source.bytes.empty()) {
        return e.source.bytes.subspan(static_cast<std::size_t>(first * bytesPerRow),
                                      static_cast<std::size_t>(count * bytesPerRow));
    }
    scratch.resize(static_cast<std::size_t>(count * bytesPerRow));
    e.source.generate(first * bytesPerRow, scratch);
    return scratch;
}

} // namespace organ
