#include "graft/layer_metadata.h"

#include "anatomy/loader_rules.h"

#include <algorithm>
#include <set>

namespace organ {
namespace {

// Arrays whose length is fixed whatever the number of layers, even when it happens to equal it.
constexpr std::string_view kFixedLengthArrays[] = {"rope.dimension_sections"};

std::uint32_t blocksOf(const GgufModel& model) {
    return static_cast<std::uint32_t>(model.archValue("block_count").value_or(0));
}

// The value a model gives its layer `layer` for a per-layer key: the array's element, or the
// one value for every layer; nullopt when the model has no such key.
std::optional<MetaValue> valueFor(const GgufModel& model, const std::string& suffix, std::uint32_t layer) {
    const MetaValue* value = model.find(model.architecture() + "." + suffix);
    if (value == nullptr) {
        return std::nullopt;
    }
    if (!value->isArray()) {
        return *value;
    }
    if (value->arraySize() != blocksOf(model) || layer >= value->arraySize()) {
        return std::nullopt;
    }
    return value->elements(std::uint64_t(layer) + 1)[layer];
}

// A per-layer number in the type the base stores it as (donors may store another width).
MetaValue converted(const MetaValue& value, ValueType type) {
    if (value.type() == type) {
        return value;
    }
    switch (type) {
    case ValueType::U32:
        return MetaValue::fromU32(static_cast<std::uint32_t>(value.asUInt().value_or(0)));
    case ValueType::I32:
        return MetaValue::fromI32(static_cast<std::int32_t>(value.asInt().value_or(0)));
    case ValueType::Bool:
        return MetaValue::fromBool(value.asBool().value_or(value.asUInt().value_or(0) != 0));
    case ValueType::F32:
        return MetaValue::fromF32(static_cast<float>(value.asFloat().value_or(0)));
    default:
        return value;
    }
}

std::string text(const MetaValue& v) {
    return v.toDisplay();
}

// "layers 0 and 2–3" for a list of layer numbers.
std::string layerList(const std::vector<std::uint32_t>& layers) {
    std::string out;
    for (std::size_t k = 0; k < layers.size();) {
        std::size_t end = k;
        while (end + 1 < layers.size() && layers[end + 1] == layers[end] + 1) {
            ++end;
        }
        out += (out.empty() ? "" : ", ") + std::to_string(layers[k]) +
               (end > k ? "–" + std::to_string(layers[end]) : std::string());
        k = end + 1;
    }
    return (layers.size() == 1 ? "layer " : "layers ") + out;
}

class Rewriter {
public:
    Rewriter(const std::function<const GgufModel*(const std::string&)>& model,
             const std::vector<ChimeraLayerOrigin>& layers)
        : m_model(model), m_layers(layers), m_base(*model("base")), m_arch(m_base.architecture()) {}

    LayerMetadata run() {
        for (const std::string& suffix : perLayerKeysOf(m_base)) {
            rewrite(suffix);
        }
        leadingDense();
        slidingWindowPattern();
        return std::move(m_out);
    }

private:
    void info(std::string message) {
        m_out.findings.push_back({Finding::Severity::Info, std::move(message), {}, -1});
    }

    LayerOrigin originFor(const ChimeraLayerOrigin& layer, const std::optional<System>& system) const {
        if (system) {
            if (const auto it = layer.bySystem.find(*system); it != layer.bySystem.end()) {
                return it->second;
            }
        }
        return layer.whole;
    }

    void rewrite(const std::string& suffix) {
        const std::string key = m_arch + "." + suffix;
        const MetaValue& current = *m_base.find(key);
        const auto system = systemOfLayerKey(suffix);
        std::vector<MetaValue> values;
        std::vector<std::uint32_t> fromDonors; // layers whose value a donor gives, unlike the base's
        std::vector<std::uint32_t> keptBase;   // layers whose donor has no such key
        for (std::uint32_t j = 0; j < m_layers.size(); ++j) {
            const LayerOrigin origin = originFor(m_layers[j], system);
            const GgufModel* source = m_model(origin.model);
            std::optional<MetaValue> value =
                source != nullptr ? valueFor(*source, suffix, origin.layer) : std::nullopt;
            const auto ours = valueFor(m_base, suffix, std::min(origin.layer, blocksOf(m_base) - 1));
            if (!value) {
                value = ours;
                keptBase.push_back(j);
            } else if (origin.model != "base" && ours && !(*value == *ours)) {
                fromDonors.push_back(j);
            }
            const ValueType type = current.isArray() ? current.elementType() : current.type();
            values.push_back(
                converted(value.value_or(current.isArray() ? MetaValue::fromU32(0) : current), type));
        }
        const bool allEqual = std::all_of(values.begin(), values.end(),
                                          [&](const MetaValue& v) { return v == values.front(); });
        if (!keptBase.empty()) {
            m_out.findings.push_back(
                {Finding::Severity::Warning,
                 key + ": " + layerList(keptBase) +
                     " come from a model without this key; they keep the recipient's value",
                 {},
                 -1});
        }
        if (!fromDonors.empty()) {
            info(key + ": " + layerList(fromDonors) + " take the donor's value with their tensors");
        }
        if (!current.isArray()) {
            if (allEqual && !values.empty()) {
                if (!(values.front() == current)) {
                    m_out.set.emplace_back(key, values.front());
                    info(key + ": " + text(current) + " → " + text(values.front()));
                }
                return;
            }
            m_out.set.emplace_back(key, MetaValue::fromArray(current.type(), values));
            info(key + ": one value for every layer → an array of " + std::to_string(values.size()) +
                 " (the layers now differ)");
            return;
        }
        const MetaValue rewritten = MetaValue::fromArray(current.elementType(), values);
        if (rewritten == current) {
            return;
        }
        m_out.set.emplace_back(key, rewritten);
        if (current.arraySize() != values.size()) {
            info(key + ": array of " + std::to_string(current.arraySize()) + " → " +
                 std::to_string(values.size()) + " entries");
        }
    }

    // llama.cpp takes the first leading_dense_block_count layers as dense and the rest as MoE.
    void leadingDense() {
        const std::string key = m_arch + ".leading_dense_block_count";
        const MetaValue* current = m_base.find(key);
        if (current == nullptr) {
            return;
        }
        std::uint32_t dense = 0;
        while (dense < m_layers.size() && !m_layers[dense].experts) {
            ++dense;
        }
        std::vector<std::uint32_t> denseAfter;
        for (std::uint32_t j = dense; j < m_layers.size(); ++j) {
            if (!m_layers[j].experts) {
                denseAfter.push_back(j);
            }
        }
        if (!denseAfter.empty()) {
            m_out.findings.push_back(
                {Finding::Severity::Error,
                 key + ": dense layers (" + layerList(denseAfter) +
                     ") would follow mixture-of-experts layers; " + "llama.cpp takes the first " +
                     std::to_string(dense) +
                     " layers as dense and every later one as MoE, so no value of the key fits",
                 {},
                 -1});
            return;
        }
        if (current->asUInt() != std::optional<std::uint64_t>(dense)) {
            m_out.set.emplace_back(key, current->type() == ValueType::U64 ? MetaValue::fromU64(dense)
                                                                          : MetaValue::fromU32(dense));
            info(key + ": " + text(*current) + " → " + std::to_string(dense));
        }
    }

    // gemma2 and gemma3 choose sliding-window or global attention by a layer's index: a layer
    // that moves may land on the other kind than the one its weights were trained with.
    void slidingWindowPattern() {
        std::uint64_t period = 0;
        if (m_arch == "gemma2") {
            period = 2;
        } else if (m_arch == "gemma3" && m_base.archValue("attention.sliding_window").value_or(0) > 0) {
            period = 6;
        }
        if (period == 0) {
            return;
        }
        period = m_base.archValue("attention.sliding_window_pattern").value_or(period);
        auto global = [&](std::uint64_t layer) { return period != 0 && layer % period == period - 1; };
        std::vector<std::uint32_t> moved;
        for (std::uint32_t j = 0; j < m_layers.size(); ++j) {
            if (global(j) != global(m_layers[j].whole.layer)) {
                moved.push_back(j);
            }
        }
        if (!moved.empty()) {
            m_out.findings.push_back(
                {Finding::Severity::Warning,
                 m_arch + " chooses sliding-window or global attention by layer index (every " +
                     std::to_string(period) + "th layer global): " + layerList(moved) +
                     " now use the other kind of attention than the layers they were made from",
                 {},
                 -1});
        }
    }

    const std::function<const GgufModel*(const std::string&)>& m_model;
    const std::vector<ChimeraLayerOrigin>& m_layers;
    const GgufModel& m_base;
    std::string m_arch;
    LayerMetadata m_out;
};

} // namespace

std::vector<std::string> perLayerKeysOf(const GgufModel& model) {
    const std::string prefix = model.architecture() + ".";
    const std::uint64_t blocks = blocksOf(model);
    std::set<std::string> keys;
    for (std::string_view suffix : perLayerKeySuffixes()) {
        if (model.find(prefix + std::string(suffix)) != nullptr) {
            keys.insert(std::string(suffix));
        }
    }
    for (const MetaEntry& entry : model.metadata()) {
        if (!entry.key.starts_with(prefix) || !entry.value.isArray() || entry.value.arraySize() != blocks ||
            blocks == 0) {
            continue;
        }
        const std::string suffix = entry.key.substr(prefix.size());
        if (std::find(std::begin(kFixedLengthArrays), std::end(kFixedLengthArrays), suffix) ==
            std::end(kFixedLengthArrays)) {
            keys.insert(suffix);
        }
    }
    return {keys.begin(), keys.end()};
}

std::optional<System> systemOfLayerKey(std::string_view suffix) {
    if (suffix == "feed_forward_length" || suffix.starts_with("expert_")) {
        return System::Organ;
    }
    if (suffix.starts_with("attention.")) {
        return System::Skeleton;
    }
    return std::nullopt;
}

LayerMetadata rewriteLayerMetadata(const std::function<const GgufModel*(const std::string&)>& model,
                                   const std::vector<ChimeraLayerOrigin>& layers) {
    return Rewriter(model, layers).run();
}

} // namespace organ
