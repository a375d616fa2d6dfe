#pragma once

#include "gguf/meta_value.h"

#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace organ {

// What llama.cpp's loader requires of each architecture before it runs anything
// (llama-model.cpp, load_hparams and load_tensors), as data. docs/validation.md says which
// check mirrors which loader rule.

// A key the loader reads with get_key: its name after "{arch}." and the one GGUF type it
// accepts (the loader compares types exactly: a block_count stored as u64 is refused).
struct KeyRule {
    std::string_view suffix;
    ValueType type;
    bool required;
};

// One way to satisfy a requirement: every tensor named (without "blk.N.") present.
using TensorOption = std::vector<std::string_view>;
// A requirement: one of its options present in full.
using TensorRequirement = std::vector<TensorOption>;

// Which blocks take the dense or the mixture-of-experts feed-forward layout.
enum class FeedForwardLayout {
    Dense,         // every block dense
    Experts,       // every block MoE
    ByExpertCount, // MoE when {arch}.expert_count > 0, else dense (llama)
    LeadingDense,  // blocks below {arch}.leading_dense_block_count dense, the rest MoE (deepseek2)
};

struct BlockTensors {
    std::vector<TensorRequirement> required;
    std::vector<std::string_view> optional;
};

struct ArchitectureRules {
    std::string_view architecture;
    std::vector<KeyRule> keys; // beyond the keys every architecture reads (commonKeyRules)
    std::vector<std::string_view> globalRequired;
    std::vector<std::string_view> globalOptional;
    BlockTensors block;   // every block
    BlockTensors dense;   // dense blocks (FeedForwardLayout)
    BlockTensors experts; // mixture-of-experts blocks
    BlockTensors shared;  // MoE blocks when {arch}.expert_shared_count > 0
    FeedForwardLayout layout = FeedForwardLayout::Dense;
    // True when every tensor the loader may create is listed: any other tensor makes it
    // refuse the file ("wrong number of tensors").
    bool complete = true;
    // True when the loader sizes every block's tensors by block 0's values (hparams.n_ff(),
    // n_head(), n_head_kv() without a layer): a per-layer array may then list other numbers,
    // but no block's tensors may follow them. Architectures sized block by block (deci,
    // openelm, plamo2…) have no rules here.
    bool sizedByBlockZero = true;
    std::string_view normKey; // the epsilon key the graph reads, for messages
};

// Keys every architecture's hyperparameters read (context, embedding, blocks, experts…).
std::span<const KeyRule> commonKeyRules();

// Keys read with get_key_or_arr: one number for every block, or an array of block_count
// numbers (u32, i32 or bool).
std::span<const std::string_view> perLayerKeySuffixes();

const ArchitectureRules* rulesFor(std::string_view architecture);

// llama.cpp's LLAMA_MAX_LAYERS.
inline constexpr std::uint64_t kLlamaMaxLayers = 512;

} // namespace organ
