#pragma once

#include "chimera.h"
#include "gguf_model.h"

#include <vector>

namespace organ {

// What a loader such as llama.cpp checks before it runs a model: every tensor the
// architecture needs in every block (llama, qwen2, qwen2moe, qwen3, gemma, gemma2, gemma3,
// phi3, deepseek2 and the MoE layouts), shapes that agree with the hyperparameters,
// blocks numbered 0 … block_count − 1 without gaps, no tensor beyond them, and no
// tensor of unknown kind. Errors make a model unloadable; warnings deserve a look.
std::vector<Finding> validateModel(const GgufModel& model);

} // namespace organ
