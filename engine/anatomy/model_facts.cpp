#include "anatomy/model_facts.h"

#include "support/align.h"
#include "support/text_format.h"

namespace organ {

ModelFacts ModelFacts::of(const GgufModel& model) {
    ModelFacts facts;
    facts.label = fileLabel(model.path());
    facts.metadata = model.metadata();
    facts.tensors = model.tensors();
    facts.alignment = model.primary().alignment();
    facts.version = model.primary().version();
    return facts;
}

ModelFacts ModelFacts::of(const GgufWriteSpec& spec, std::string label) {
    ModelFacts facts;
    facts.label = std::move(label);
    for (const auto& [key, value] : spec.metadata) {
        facts.metadata.push_back({key, value, 0});
    }
    if (const MetaValue* alignment = facts.find("general.alignment")) {
        const auto v = alignment->asUInt();
        facts.alignment =
            v && *v != 0 && *v <= kGgufMaxAlignment ? static_cast<std::uint32_t>(*v) : kGgufDefaultAlignment;
    }
    std::uint64_t offset = 0;
    for (const auto& t : spec.tensors) {
        TensorInfo info;
        info.name = t.name;
        info.type = t.type;
        info.nDims = t.nDims;
        info.ne = t.ne;
        info.elements = 1;
        for (std::uint32_t d = 0; d < t.nDims; ++d) {
            info.elements *= t.ne[d];
        }
        info.bytes = storedBytes(t.type, info.elements);
        info.relativeOffset = offset;
        offset = alignUp(offset + info.bytes, facts.alignment);
        facts.tensors.push_back(std::move(info));
    }
    return facts;
}

const MetaValue* ModelFacts::find(std::string_view key) const {
    for (const auto& entry : metadata) {
        if (entry.key == key) {
            return &entry.value;
        }
    }
    return nullptr;
}

const TensorInfo* ModelFacts::findTensor(std::string_view name) const {
    for (const auto& t : tensors) {
        if (t.name == name) {
            return &t;
        }
    }
    return nullptr;
}

std::string ModelFacts::architecture() const {
    const MetaValue* arch = find("general.architecture");
    const auto text = arch != nullptr ? arch->asString() : std::nullopt;
    return text ? std::string(*text) : std::string();
}

std::optional<std::uint64_t> ModelFacts::archValue(std::string_view key) const {
    const MetaValue* value = find(architecture() + "." + std::string(key));
    return value != nullptr && !value->isArray() ? value->asUInt() : std::nullopt;
}

} // namespace organ
