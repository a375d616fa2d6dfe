#include "hostile_models.h"

#include "fixtures.h"

namespace organ::testing {

GgufWriteSpec hostileModelSpec(std::uint8_t seed, bool hostileTensor) {
    GgufWriteSpec spec;
    spec.set("general.architecture", MetaValue::fromString("llama"));
    spec.set("general.name", MetaValue::fromString(kHostileName));
    spec.set(kHostileKey, MetaValue::fromString(kHostileValue));
    spec.set("llama.context_length", MetaValue::fromU32(64));
    spec.set("llama.block_count", MetaValue::fromU32(1));
    spec.set("llama.embedding_length", MetaValue::fromU32(8));
    spec.set("llama.feed_forward_length", MetaValue::fromU32(16));
    spec.set("llama.attention.head_count", MetaValue::fromU32(2));
    spec.set("llama.attention.head_count_kv", MetaValue::fromU32(2));
    spec.set("llama.attention.layer_norm_rms_epsilon", MetaValue::fromF32(1e-5f));
    spec.set("tokenizer.ggml.model", MetaValue::fromString("llama"));
    spec.set("tokenizer.ggml.tokens", MetaValue::fromStrings({"<unk>", "\x1b[2J", "\xff\xfe", "ok", "\n",
                                                              "\xe2\x80\xae"
                                                              "rtl",
                                                              "a", "b"}));
    spec.tensors.push_back(patternTensor("token_embd.weight", TensorType::F32, {8, 8}, seed));
    spec.tensors.push_back(patternTensor("blk.0.attn_norm.weight", TensorType::F32, {8}, seed + 1));
    for (const char* name :
         {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_output.weight"}) {
        spec.tensors.push_back(patternTensor(name, TensorType::F32, {8, 8}, seed + 2));
    }
    spec.tensors.push_back(patternTensor("blk.0.ffn_norm.weight", TensorType::F32, {8}, seed + 3));
    spec.tensors.push_back(patternTensor("blk.0.ffn_gate.weight", TensorType::F32, {8, 16}, seed + 4));
    spec.tensors.push_back(patternTensor("blk.0.ffn_up.weight", TensorType::F32, {8, 16}, seed + 5));
    spec.tensors.push_back(patternTensor("blk.0.ffn_down.weight", TensorType::F32, {16, 8}, seed + 6));
    if (hostileTensor) {
        spec.tensors.push_back(patternTensor(kHostileTensor, TensorType::F32, {8}, seed + 7));
    }
    spec.tensors.push_back(patternTensor("output_norm.weight", TensorType::F32, {8}, seed + 8));
    return spec;
}

} // namespace organ::testing
