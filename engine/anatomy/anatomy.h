#pragma once

#include "gguf/gguf_model.h"
#include "gguf/tensor_name.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace organ {

// The anatomical systems of a model. "other" exists so that no tensor is ever dropped.
enum class System : std::uint8_t { Embed, Skeleton, Organ, Norm, Adapter, Other };
inline constexpr std::size_t kSystemCount = 6;

std::string_view systemName(System system);
std::optional<System> systemFromName(std::string_view name);

// One row of the classification table. A rule matches the tensor's stem: its name
// without the "blk.N." layer prefix and without a ".weight" / ".bias" suffix.
struct AnatomyRule {
    enum class Match : std::uint8_t { Exact, Prefix };
    std::string_view stem;
    Match match;
    System system;
    std::string_view role; // empty: the role is the stem itself
    bool inLayer;          // true: only under blk.N; false: only outside layers
    std::string_view what; // one line for docs/anatomy.md and tooltips
};

// The whole table, in anatomical order (which is also the heatmap's row order).
std::span<const AnatomyRule> anatomyRules();

struct TensorAnatomy {
    System system = System::Other;
    std::string role;
    std::optional<std::uint32_t> layer;
    bool isBias = false;
    std::size_t order = 0; // index of the matching rule, for anatomical sorting
};

TensorAnatomy classifyTensor(std::string_view name);

struct GroupStats {
    std::uint64_t tensors = 0;
    std::uint64_t parameters = 0;
    std::uint64_t bytes = 0;
    void add(const TensorInfo& tensor) {
        ++tensors;
        parameters += tensor.elements;
        bytes += tensor.bytes;
    }
    double bitsPerWeight() const {
        return parameters == 0 ? 0.0 : 8.0 * static_cast<double>(bytes) / parameters;
    }
};

// Counts, parameters and bytes per system, per layer and per tensor type.
struct ModelAnatomy {
    std::vector<TensorAnatomy> tensors; // parallel to GgufModel::tensors()
    std::array<GroupStats, kSystemCount> bySystem{};
    std::vector<GroupStats> byLayer; // index = layer number
    GroupStats outsideLayers;
    std::map<TensorType, GroupStats> byType;
    GroupStats total;
    std::uint32_t layerCount() const { return static_cast<std::uint32_t>(byLayer.size()); }
};

ModelAnatomy analyzeAnatomy(const GgufModel& model);

// "Q4_K 62%, Q6_K 31%, F32 7%" by bytes, largest first.
std::string quantizationMix(const ModelAnatomy& anatomy);

} // namespace organ
