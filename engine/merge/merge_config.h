#pragma once

#include "merge/merge_spec.h"
#include "quant/quantize_recipe.h"
#include "support/rooted_files.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace organ {

// A merge as mergekit's configuration (YAML) says it, for `organ merge CONFIG.yaml`: the models
// are paths (GGUF files or organ directories), relative to the configuration's folder once read
// from a file. ../shared/specs/merge-v1.md, "Config".
struct MergeConfig {
    MergeSpec spec; // its base and models are paths
    // passthrough: the output's layers, run after run (mergekit's slices; `last` inclusive).
    struct LayerRun {
        std::string model;
        std::uint32_t first = 0;
        std::uint32_t last = 0;
    };
    std::vector<LayerRun> stack;
    // Another method given as one slice whose sources share a layer_range: that range, which must
    // be every block of the base (checked once the models are open).
    std::optional<std::pair<std::uint32_t, std::uint32_t>> wholeRange;
    std::optional<QuantFileType> outType; // out_type: the output quantized as organ quantize does
    std::vector<std::string> notes;       // what was read and has no effect here (dtype, int8_mask)
    std::map<std::string, int> lines;     // the line where each model is first named, by path as given
};

// A configuration file is small: larger ones are refused before they are parsed.
inline constexpr std::uint64_t kMaxMergeConfigBytes = 1u << 20;

// Parses mergekit's YAML (yaml-cpp): merge_method, base_model, models [{model, parameters}],
// slices [{sources: [{model, layer_range, parameters}]}], parameters, dtype (a note: the output
// follows the base's types), out_type, seed. A key it does not support is refused by name. Throws
// FormatError "<label>: <problem>" (with the line and column of a YAML syntax error).
MergeConfig mergeConfigFromYaml(std::string_view text, const std::string& label);
// Reads and parses the file (at most kMaxMergeConfigBytes); relative model paths are resolved
// against the file's folder, and a model that is not there is refused at its line. Throws
// FormatError or IoError naming the file.
MergeConfig readMergeConfig(const RootedPath& path);

// "model 'org/name': no such file or folder (models are GGUF files or organ directories, not Hugging
// Face ids)" for a model that is not there (the hint where `given` looks like a hub id), or nothing.
std::optional<std::string> missingModel(const std::string& given, const std::string& resolved);

} // namespace organ
