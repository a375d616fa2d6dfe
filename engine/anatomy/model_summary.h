#pragma once

#include "anatomy/anatomy.h"
#include "gguf/gguf_model.h"

#include <nlohmann/json.hpp>
#include <string>

namespace organ {

// The facts a person asks first about a model, computed once from its header.
struct ModelSummary {
    std::string name;
    std::string architecture;
    std::string path;
    std::uint32_t version = 0;
    std::size_t shards = 1;
    std::uint64_t fileSize = 0;
    std::uint64_t parameters = 0;
    std::uint64_t tensorBytes = 0;
    double bitsPerWeight = 0;
    std::string quantizationMix;
    std::uint32_t layers = 0;
    std::size_t tensorCount = 0;
    std::size_t metadataCount = 0;
};

ModelSummary summarize(const GgufModel& model, const ModelAnatomy& anatomy);

// `organ inspect --json`: everything, documented in docs/inspect-json.md. Arrays in the
// metadata carry at most maxArrayItems items (their full length is always given).
nlohmann::json modelToJson(const GgufModel& model, const ModelAnatomy& anatomy, std::uint64_t maxArrayItems);

// Plain-text renderings for the command line.
std::string summaryText(const GgufModel& model, const ModelAnatomy& anatomy);
std::string tensorTableText(const GgufModel& model, const ModelAnatomy& anatomy);
std::string metadataText(const GgufModel& model, std::size_t maxArrayItems);

} // namespace organ
