#pragma once

#include "gguf/gguf_file.h"
#include "gguf/gguf_model.h"
#include "gguf/gguf_writer.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace organ {

// What a loader sees of a model: its metadata, its tensors (with their data offsets, per
// file of a split set) and its alignment. Made from an open model, or from a spec that is not
// written yet (a planned chimera), with offsets as the writer would lay them out: the same
// validation then speaks for a file on disk and for a file before it exists.
struct ModelFacts {
    std::string label; // the file's name, for messages
    std::vector<MetaEntry> metadata;
    std::vector<TensorInfo> tensors;
    std::uint32_t alignment = kGgufDefaultAlignment;
    std::uint32_t version = 3; // the GGUF version (organ writes 3)

    static ModelFacts of(const GgufModel& model);
    static ModelFacts of(const GgufWriteSpec& spec, std::string label);

    const MetaValue* find(std::string_view key) const;
    const TensorInfo* findTensor(std::string_view name) const;
    std::string architecture() const; // "" when absent or not a string
    // "{arch}.KEY" as an unsigned integer of any width; nullopt when absent or not one.
    std::optional<std::uint64_t> archValue(std::string_view key) const;
};

} // namespace organ
