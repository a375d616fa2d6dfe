#pragma once

#include "anatomy/anatomy.h"
#include "anatomy/tensor_selector.h"
#include "gguf/meta_value.h"
#include "merge/merge_spec.h"
#include "purify/purification.h"
#include "quant/quantize_recipe.h"
#include "support/rooted_files.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace organ {

inline constexpr int kGraftPlanVersion = 1;
// Limits on what a plan may declare, so that no plan makes work or memory grow without bound
// (docs/graft-plan.md): operations in a plan, layer runs in one stack, layers in a chimera.
inline constexpr std::size_t kMaxPlanOperations = 10000;
inline constexpr std::size_t kMaxStackRuns = 1024;
inline constexpr std::uint32_t kMaxChimeraLayers = 4096;
// Every key a chimera gets about where it came from starts with this.
inline constexpr const char* kProvenancePrefix = "organ.graft.";

// A run of consecutive layers of one model, for stacking ("passthrough" merges).
struct LayerRange {
    std::string model; // "base" or a donor id
    std::uint32_t first = 0;
    std::uint32_t last = 0; // inclusive
};

struct GraftOperation {
    enum class Kind {
        Replace,
        MapLayer,
        StackLayers,
        DuplicateLayer,
        RemoveLayer,
        SetMetadata,
        RemoveMetadata,
        Purify,
        Quantize,
        Merge
    };
    Kind kind = Kind::Replace;
    std::string donor;             // Replace, MapLayer
    TensorSelector select;         // Replace, Purify, Merge; MapLayer (system/roles/names only)
    std::uint32_t fromLayer = 0;   // MapLayer: donor layer
    std::uint32_t toLayer = 0;     // MapLayer: chimera layer; Duplicate/RemoveLayer: the layer
    std::vector<LayerRange> stack; // StackLayers
    std::string key;               // Set/RemoveMetadata
    MetaValue value;               // SetMetadata
    PurifyParams purify;           // Purify: the chimera's tensors the selection picks, as they stand
    QuantizeRecipe quantize;       // Quantize: the finished chimera, as organ quantize quantizes a model
    MergeSpec merge;               // Merge: the selected tensors, as they stand, merged from these models
};

// A self-contained recipe for a chimera: the models by path (relative paths are relative
// to the plan file, as is a quantize operation's importance matrix), the operations in order,
// and the output. Documented by
// docs/graft-plan.schema.json; the window and `organ assemble --plan` run the same plans.
struct GraftPlan {
    std::string base;
    std::vector<std::pair<std::string, std::string>> donors; // id → path
    std::vector<GraftOperation> operations;
    std::string output;

    const std::string* donorPath(const std::string& id) const;
    // The id of the donor at `path`, added when the plan has none: the file's stem with
    // characters other than ASCII letters and digits as '-', "-2", "-3"… when taken.
    std::string ensureDonor(const std::string& path);
    // The quantize operation (a plan holds at most one that counts: the first), or null.
    const GraftOperation* quantizeOperation() const;
    // The id of the model at `path`: "base" for the base's path, else ensureDonor(path).
    std::string modelId(const std::string& path);
};

// A set_metadata value from its JSON and type name: a GGUF scalar type ("u32", "string", …) or
// "T[]" for an array of T (`value` then a JSON array). Throws FormatError saying what does not fit.
MetaValue metadataValueFromJson(const std::string& type, const nlohmann::json& value);
// The type name metadataValueFromJson takes for `value`: "u32", "string[]", …
std::string metadataTypeName(const MetaValue& value);

// Throws FormatError naming the plan file and the problem.
GraftPlan graftPlanFromJson(const nlohmann::json& json, const std::string& label);
nlohmann::json graftPlanToJson(const GraftPlan& plan);
// A plan file is small: larger ones are refused before they are parsed.
inline constexpr std::uint64_t kMaxPlanBytes = 16u << 20;
// And its JSON values (a parsed value costs some 50 bytes; 16 MiB of "[[[…" took 608 MB).
inline constexpr std::uint64_t kMaxPlanValues = 1u << 20;
GraftPlan loadGraftPlan(const RootedPath& path); // resolves paths relative to the plan's folder
// Through SafeOutput: never over one of the plan's models. Paths are stored relative to the
// plan's folder when the model lies in it or below, absolute otherwise.
void saveGraftPlan(const GraftPlan& plan, const std::string& path);

// "5-20" or "7" → inclusive range; false when malformed.
bool parseLayerRange(const std::string& text, std::uint32_t& first, std::uint32_t& last);

std::string_view operationKindName(GraftOperation::Kind kind);

} // namespace organ
