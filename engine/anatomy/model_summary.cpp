#include "anatomy/model_summary.h"

#include "support/text_safety.h"

#include "support/text_format.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace organ {
namespace {

nlohmann::json statsJson(const GroupStats& stats) {
    return {{"tensors", stats.tensors}, {"parameters", stats.parameters}, {"bytes", stats.bytes}};
}

} // namespace

ModelSummary summarize(const GgufModel& model, const ModelAnatomy& anatomy) {
    ModelSummary s;
    s.name = model.name();
    s.architecture = model.architecture();
    s.path = model.path();
    s.version = model.primary().version();
    s.shards = model.shards().size();
    s.fileSize = model.fileSize();
    s.parameters = anatomy.total.parameters;
    s.tensorBytes = anatomy.total.bytes;
    s.bitsPerWeight = anatomy.total.bitsPerWeight();
    s.quantizationMix = quantizationMix(anatomy);
    s.layers = anatomy.layerCount();
    if (const auto blocks = model.archValue("block_count")) {
        s.layers = static_cast<std::uint32_t>(std::max<std::uint64_t>(*blocks, s.layers));
    }
    s.tensorCount = model.tensors().size();
    s.metadataCount = model.metadata().size();
    return s;
}

nlohmann::json modelToJson(const GgufModel& model, const ModelAnatomy& anatomy, std::uint64_t maxArrayItems) {
    const ModelSummary s = summarize(model, anatomy);
    nlohmann::json out;
    out["format"] = "organ-inspect";
    out["format_version"] = 1;
    out["path"] = s.path;
    out["name"] = s.name;
    out["architecture"] = s.architecture;
    out["gguf_version"] = s.version;
    out["alignment"] = model.primary().alignment();
    out["data_offset"] = model.primary().dataOffset();
    nlohmann::json shards = nlohmann::json::array();
    for (const auto& shard : model.shards()) {
        shards.push_back(
            {{"path", shard->path()}, {"size", shard->fileSize()}, {"tensors", shard->tensors().size()}});
    }
    out["files"] = shards;
    out["file_size"] = s.fileSize;
    out["parameters"] = s.parameters;
    out["tensor_bytes"] = s.tensorBytes;
    out["bits_per_weight"] = s.bitsPerWeight;
    out["layers"] = s.layers;
    nlohmann::json systems = nlohmann::json::object();
    for (std::size_t i = 0; i < kSystemCount; ++i) {
        systems[std::string(systemName(static_cast<System>(i)))] = statsJson(anatomy.bySystem[i]);
    }
    out["systems"] = systems;
    nlohmann::json layers = nlohmann::json::array();
    for (std::size_t i = 0; i < anatomy.byLayer.size(); ++i) {
        auto entry = statsJson(anatomy.byLayer[i]);
        entry["layer"] = i;
        layers.push_back(entry);
    }
    out["per_layer"] = layers;
    out["outside_layers"] = statsJson(anatomy.outsideLayers);
    nlohmann::json types = nlohmann::json::object();
    for (const auto& [type, stats] : anatomy.byType) {
        auto entry = statsJson(stats);
        entry["bits_per_weight"] = stats.bitsPerWeight();
        types[std::string(tensorTypeName(type))] = entry;
    }
    out["quantization_mix"] = types;
    nlohmann::json metadata = nlohmann::json::array();
    for (const auto& entry : model.metadata()) {
        metadata.push_back({{"key", entry.key},
                            {"type", valueTypeName(entry.value.type())},
                            {"value", entry.value.toJson(maxArrayItems)}});
    }
    out["metadata"] = metadata;
    nlohmann::json tensors = nlohmann::json::array();
    for (std::size_t i = 0; i < model.tensors().size(); ++i) {
        const TensorInfo& t = model.tensors()[i];
        const TensorAnatomy& a = anatomy.tensors[i];
        nlohmann::json shape = nlohmann::json::array();
        for (std::uint32_t d = 0; d < t.nDims; ++d) {
            shape.push_back(t.ne[d]);
        }
        tensors.push_back({{"name", t.name},
                           {"system", systemName(a.system)},
                           {"role", a.role},
                           {"layer", a.layer ? nlohmann::json(*a.layer) : nlohmann::json(nullptr)},
                           {"dtype", tensorTypeName(t.type)},
                           {"shape", shape},
                           {"elements", t.elements},
                           {"bytes", t.bytes},
                           {"offset", t.fileOffset},
                           {"file", t.shard}});
    }
    out["tensors"] = tensors;
    return out;
}

std::string summaryText(const GgufModel& model, const ModelAnatomy& anatomy) {
    const ModelSummary s = summarize(model, anatomy);
    std::ostringstream out;
    out << escapeText(s.name) << "  (" << escapeText(fileLabel(s.path)) << ")\n";
    out << "  architecture   " << (s.architecture.empty() ? "(none)" : escapeText(s.architecture)) << "\n";
    out << "  GGUF version   " << s.version;
    if (s.shards > 1) {
        out << ", split into " << s.shards << " files";
    }
    out << "\n";
    out << "  file size      " << humanBytes(s.fileSize) << " (" << groupDigits(s.fileSize) << " bytes)\n";
    out << "  parameters     " << humanCount(s.parameters) << " (" << groupDigits(s.parameters) << ")\n";
    out << "  bits/weight    " << fixedDecimals(s.bitsPerWeight, 2) << "\n";
    out << "  quantization   " << s.quantizationMix << "\n";
    out << "  layers         " << s.layers << "\n";
    out << "  tensors        " << s.tensorCount << ", metadata keys " << s.metadataCount << "\n\n";
    out << "  " << padText("system", 10) << padText("tensors", 8, true) << padText("parameters", 16, true)
        << padText("bytes", 14, true) << padText("share", 8, true) << "\n";
    for (std::size_t i = 0; i < kSystemCount; ++i) {
        const GroupStats& g = anatomy.bySystem[i];
        if (g.tensors == 0) {
            continue;
        }
        const double share = s.tensorBytes == 0 ? 0.0 : 100.0 * g.bytes / s.tensorBytes;
        out << "  " << padText(std::string(systemName(static_cast<System>(i))), 10)
            << padText(std::to_string(g.tensors), 8, true) << padText(groupDigits(g.parameters), 16, true)
            << padText(humanBytes(g.bytes), 14, true) << padText(fixedDecimals(share, 1) + "%", 8, true)
            << "\n";
    }
    return out.str();
}

std::string tensorTableText(const GgufModel& model, const ModelAnatomy& anatomy) {
    std::size_t nameWidth = 4;
    for (const auto& t : model.tensors()) {
        nameWidth = std::max(nameWidth, escapeText(t.name).size());
    }
    std::ostringstream out;
    out << padText("name", nameWidth + 2) << padText("system", 10) << padText("role", 22)
        << padText("layer", 5, true) << "  " << padText("dtype", 8) << padText("shape", 22)
        << padText("offset", 16, true) << padText("bytes", 16, true) << "\n";
    for (std::size_t i = 0; i < model.tensors().size(); ++i) {
        const TensorInfo& t = model.tensors()[i];
        const TensorAnatomy& a = anatomy.tensors[i];
        out << padText(escapeText(t.name), nameWidth + 2) << padText(std::string(systemName(a.system)), 10)
            << padText(escapeText(a.role), 22)
            << padText(a.layer ? std::to_string(*a.layer) : std::string("-"), 5, true) << "  "
            << padText(std::string(tensorTypeName(t.type)), 8) << padText(t.shapeText(), 22)
            << padText(groupDigits(t.fileOffset), 16, true) << padText(groupDigits(t.bytes), 16, true)
            << "\n";
    }
    return out.str();
}

std::string metadataText(const GgufModel& model, std::size_t maxArrayItems) {
    std::size_t keyWidth = 3;
    for (const auto& entry : model.metadata()) {
        keyWidth = std::max(keyWidth, escapeText(entry.key).size());
    }
    std::ostringstream out;
    for (const auto& entry : model.metadata()) {
        std::string value = entry.value.toDisplay(maxArrayItems);
        if (value.size() > 400) {
            std::size_t cut = 400;
            while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) {
                --cut;
            }
            value = value.substr(0, cut) + " …";
        }
        out << padText(escapeText(entry.key), keyWidth + 2)
            << padText(std::string(valueTypeName(entry.value.type())), 8) << value << "\n";
    }
    return out.str();
}

} // namespace organ
