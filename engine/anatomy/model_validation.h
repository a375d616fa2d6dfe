#pragma once

#include "anatomy/model_facts.h"
#include "gguf/gguf_model.h"
#include "support/finding.h"

#include <optional>
#include <string>
#include <vector>

namespace organ {

// What llama.cpp's loader checks before it runs a model, as findings (docs/validation.md maps
// each check to its loader rule): required keys and their exact types, per-layer arrays of
// block_count values, at most 512 blocks, the tokenizer's keys; every tensor the architecture
// needs in every block (dense or mixture-of-experts blocks, shared experts, MLA, fused or
// separate q/k/v, optional biases, a tied output), no tensor it would not load, shapes from the
// hyperparameters (per block where they are per-layer), tensor data laid out in order without
// gaps; blocks 0 … block_count − 1 without gaps and nothing beyond. Errors mean llama.cpp
// refuses the file; warnings deserve a look.
std::vector<Finding> validateFacts(const ModelFacts& model);
std::vector<Finding> validateModel(const GgufModel& model);
// Whether the GGUF just written at `written` (a partial file, beneath its folder) may replace
// `output`: nothing when llama.cpp would load it or `keepInvalid` says to keep it anyway; else the
// message that refuses it, naming `output`, the number of errors and the first.
std::optional<std::string> invalidModelRefusal(const RootedPath& written, const std::string& output,
                                               bool keepInvalid);
// `organ validate --json` of one model: findingsToJson with the model's "path" and "valid".
nlohmann::json validationToJson(const std::string& path, const std::vector<Finding>& findings);

} // namespace organ
