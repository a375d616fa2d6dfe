#include "gguf/tensor_name.h"

#include <charconv>

namespace organ {

std::optional<LayerName> parseLayerName(std::string_view name) {
    if (!name.starts_with("blk.")) {
        return std::nullopt;
    }
    const std::string_view digits = name.substr(4);
    std::uint32_t layer = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), layer);
    if (error != std::errc() || end == digits.data() || end == digits.data() + digits.size() || *end != '.' ||
        layer > kMaxLayerIndex) {
        return std::nullopt;
    }
    return LayerName{
        layer, std::string_view(end + 1, static_cast<std::size_t>(digits.data() + digits.size() - end - 1))};
}

std::string_view suffixInLayer(std::string_view name, std::uint32_t layer) {
    const auto parsed = parseLayerName(name);
    return parsed && parsed->layer == layer ? parsed->rest : std::string_view();
}

std::string layerTensorName(std::uint32_t layer, std::string_view suffix) {
    std::string name = "blk." + std::to_string(layer) + ".";
    name += suffix;
    return name;
}

} // namespace organ
