#include "anatomy/loader_rules.h"

#include <algorithm>
#include <array>

namespace organ {
namespace {

using VT = ValueType;

const TensorRequirement kNorm = {{"attn_norm.weight"}};
const TensorRequirement kFfnNorm = {{"ffn_norm.weight"}};
// create_tensor_qkv: a fused attn_qkv, else separate q, k and v; biases optional either way.
const TensorRequirement kQkv = {{"attn_qkv.weight"}, {"attn_q.weight", "attn_k.weight", "attn_v.weight"}};
const std::vector<std::string_view> kQkvBiases = {"attn_qkv.bias", "attn_q.bias", "attn_k.bias",
                                                  "attn_v.bias"};
const TensorRequirement kOut = {{"attn_output.weight"}};
const TensorRequirement kDenseFfn = {{"ffn_gate.weight", "ffn_down.weight", "ffn_up.weight"}};
const TensorRequirement kQkNorm = {{"attn_q_norm.weight", "attn_k_norm.weight"}};
const TensorRequirement kExperts = {
    {"ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_down_exps.weight", "ffn_up_exps.weight"}};
const TensorRequirement kSharedExperts = {
    {"ffn_gate_shexp.weight", "ffn_down_shexp.weight", "ffn_up_shexp.weight"}};

std::vector<std::string_view> with(std::vector<std::string_view> a, const std::vector<std::string_view>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

const KeyRule kRmsEps{"attention.layer_norm_rms_epsilon", VT::F32, true};
const KeyRule kEps{"attention.layer_norm_epsilon", VT::F32, true};

const std::vector<ArchitectureRules>& table() {
    static const std::vector<ArchitectureRules> rules = [] {
        std::vector<ArchitectureRules> r;
        {
            ArchitectureRules a;
            a.architecture = "llama";
            a.keys = {kRmsEps, {"expert_shared_feed_forward_length", VT::U32, false}};
            a.globalRequired = {"token_embd.weight", "output_norm.weight"};
            a.globalOptional = {"output.weight", "rope_freqs.weight", "rope_factors_long.weight",
                                "rope_factors_short.weight"};
            a.block.required = {kNorm, kQkv, kOut, kFfnNorm};
            a.block.optional = with(kQkvBiases, {"attn_output.bias"});
            a.dense.required = {kDenseFfn};
            a.dense.optional = {"ffn_gate.bias", "ffn_down.bias", "ffn_up.bias"};
            a.experts.required = {{{"ffn_gate_inp.weight", "ffn_down_exps.weight", "ffn_up_exps.weight"}}};
            a.experts.optional = {"ffn_gate_exps.weight", "ffn_gate_shexp.weight", "ffn_down_shexp.weight",
                                  "ffn_up_shexp.weight"};
            a.layout = FeedForwardLayout::ByExpertCount;
            r.push_back(a);
        }
        {
            ArchitectureRules a;
            a.architecture = "qwen2";
            a.keys = {kRmsEps};
            a.globalRequired = {"token_embd.weight", "output_norm.weight"};
            a.globalOptional = {"output.weight", "output.bias"};
            a.block.required = {kNorm, kQkv, kOut, kFfnNorm, kDenseFfn};
            a.block.optional = kQkvBiases;
            r.push_back(a);
        }
        {
            ArchitectureRules a;
            a.architecture = "qwen2moe";
            a.keys = {kRmsEps,
                      {"expert_feed_forward_length", VT::U32, false},
                      {"expert_shared_feed_forward_length", VT::U32, false}};
            a.globalRequired = {"token_embd.weight", "output_norm.weight", "output.weight"};
            a.block.required = {kNorm,
                                kQkv,
                                kOut,
                                kFfnNorm,
                                kExperts,
                                {{"ffn_gate_inp_shexp.weight", "ffn_gate_shexp.weight",
                                  "ffn_down_shexp.weight", "ffn_up_shexp.weight"}}};
            a.block.optional = kQkvBiases;
            a.layout = FeedForwardLayout::Experts;
            r.push_back(a);
        }
        {
            ArchitectureRules a;
            a.architecture = "qwen3";
            a.keys = {kRmsEps};
            a.globalRequired = {"token_embd.weight", "output_norm.weight"};
            a.globalOptional = {"output.weight", "cls.output.weight"};
            a.block.required = {kNorm, kQkv, kOut, kQkNorm, kFfnNorm, kDenseFfn};
            a.block.optional = kQkvBiases;
            r.push_back(a);
        }
        {
            ArchitectureRules a;
            a.architecture = "qwen3moe";
            a.keys = {kRmsEps, {"expert_feed_forward_length", VT::U32, false}};
            a.globalRequired = {"token_embd.weight", "output_norm.weight"};
            a.globalOptional = {"output.weight"};
            a.block.required = {kNorm, kQkv, kOut, kQkNorm, kFfnNorm, kExperts};
            a.block.optional = kQkvBiases;
            a.layout = FeedForwardLayout::Experts;
            r.push_back(a);
        }
        {
            ArchitectureRules a;
            a.architecture = "gemma";
            a.keys = {kRmsEps};
            a.globalRequired = {"token_embd.weight", "output_norm.weight"};
            a.block.required = {kNorm, kQkv, kOut, kFfnNorm, kDenseFfn};
            a.block.optional = kQkvBiases;
            a.complete = false;
            r.push_back(a);
        }
        {
            ArchitectureRules a;
            a.architecture = "gemma2";
            a.keys = {kRmsEps,
                      {"attn_logit_softcapping", VT::F32, false},
                      {"final_logit_softcapping", VT::F32, false}};
            // No output.weight: gemma2 always reads its LM head from token_embd.
            a.globalRequired = {"token_embd.weight", "output_norm.weight"};
            a.block.required = {kNorm,
                                kQkv,
                                kOut,
                                {{"post_attention_norm.weight"}},
                                kFfnNorm,
                                {{"ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"}},
                                {{"post_ffw_norm.weight"}}};
            a.block.optional = kQkvBiases;
            r.push_back(a);
        }
        {
            ArchitectureRules a;
            a.architecture = "gemma3";
            a.keys = {
                kRmsEps, {"final_logit_softcapping", VT::F32, false}, {"rope.freq_base_swa", VT::F32, false}};
            a.globalRequired = {"token_embd.weight", "output_norm.weight"};
            a.globalOptional = {"output.weight", "dense_2.weight", "dense_3.weight"};
            a.block.required = {kNorm,
                                kQkv,
                                kOut,
                                {{"post_attention_norm.weight"}},
                                kQkNorm,
                                kFfnNorm,
                                {{"ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"}},
                                {{"post_ffw_norm.weight"}}};
            a.block.optional = kQkvBiases;
            r.push_back(a);
        }
        {
            ArchitectureRules a;
            a.architecture = "phi3";
            a.keys = {kRmsEps};
            a.globalRequired = {"token_embd.weight", "output_norm.weight"};
            a.globalOptional = {"output.weight", "rope_factors_long.weight", "rope_factors_short.weight"};
            // phi3 creates q, k, v (or qkv) as optional: the graph needs one of them all the same.
            a.block.required = {kNorm, kQkv, kOut, kFfnNorm, {{"ffn_down.weight", "ffn_up.weight"}}};
            a.block.optional = kQkvBiases;
            r.push_back(a);
        }
        {
            ArchitectureRules a;
            a.architecture = "gpt2";
            a.keys = {kEps};
            a.globalRequired = {"token_embd.weight", "position_embd.weight", "output_norm.weight",
                                "output_norm.bias"};
            a.globalOptional = {"output.weight"};
            a.block.required = {{{"attn_norm.weight", "attn_norm.bias"}},
                                {{"attn_qkv.weight", "attn_qkv.bias"}},
                                {{"attn_output.weight", "attn_output.bias"}},
                                {{"ffn_norm.weight", "ffn_norm.bias"}},
                                {{"ffn_down.weight", "ffn_down.bias", "ffn_up.weight", "ffn_up.bias"}}};
            r.push_back(a);
        }
        {
            ArchitectureRules a;
            a.architecture = "mamba";
            a.keys = {kRmsEps,
                      {"ssm.conv_kernel", VT::U32, true},
                      {"ssm.inner_size", VT::U32, true},
                      {"ssm.state_size", VT::U32, true},
                      {"ssm.time_step_rank", VT::U32, true},
                      {"ssm.dt_b_c_rms", VT::Bool, false}};
            a.globalRequired = {"token_embd.weight", "output_norm.weight"};
            a.globalOptional = {"output.weight"};
            a.block.required = {kNorm,
                                {{"ssm_in.weight", "ssm_conv1d.weight", "ssm_conv1d.bias", "ssm_x.weight",
                                  "ssm_dt.weight", "ssm_dt.bias", "ssm_a", "ssm_d", "ssm_out.weight"}}};
            r.push_back(a);
        }
        {
            ArchitectureRules a;
            a.architecture = "deepseek2";
            a.keys = {kRmsEps,
                      {"attention.q_lora_rank", VT::U32, false},
                      {"attention.kv_lora_rank", VT::U32, true},
                      {"attention.key_length_mla", VT::U32, false},
                      {"attention.value_length_mla", VT::U32, false},
                      {"expert_feed_forward_length", VT::U32, true},
                      {"expert_shared_count", VT::U32, true},
                      {"expert_weights_scale", VT::F32, false},
                      {"expert_weights_norm", VT::Bool, false},
                      {"expert_gating_func", VT::U32, false}};
            a.globalRequired = {"token_embd.weight", "output_norm.weight"};
            a.globalOptional = {"output.weight"};
            a.block.required = {
                kNorm,
                {{"attn_q_a_norm.weight", "attn_q_a.weight", "attn_q_b.weight"}, {"attn_q.weight"}},
                {{"attn_kv_a_norm.weight", "attn_kv_a_mqa.weight"}},
                {{"attn_k_b.weight", "attn_v_b.weight"}, {"attn_kv_b.weight"}},
                kOut,
                kFfnNorm};
            a.dense.required = {kDenseFfn};
            a.experts.required = {kExperts};
            a.experts.optional = {"exp_probs_b.bias"};
            a.shared.required = {kSharedExperts};
            a.layout = FeedForwardLayout::LeadingDense;
            r.push_back(a);
        }
        {
            ArchitectureRules a;
            a.architecture = "bert";
            a.keys = {kEps, {"attention.causal", VT::Bool, false}, {"pooling_type", VT::U32, false}};
            a.globalRequired = {"token_embd.weight", "position_embd.weight", "token_embd_norm.weight",
                                "token_embd_norm.bias"};
            a.globalOptional = {"token_types.weight", "cls.weight", "cls.bias", "cls.output.weight",
                                "cls.output.bias"};
            a.block.required = {kQkv,
                                kOut,
                                {{"attn_output_norm.weight", "attn_output_norm.bias"}},
                                {{"ffn_up.weight", "ffn_down.weight"}},
                                {{"layer_output_norm.weight", "layer_output_norm.bias"}}};
            a.block.optional = with(kQkvBiases, {"attn_output.bias", "ffn_up.bias", "ffn_down.bias"});
            r.push_back(a);
        }
        return r;
    }();
    return rules;
}

} // namespace

std::span<const KeyRule> commonKeyRules() {
    static const std::array<KeyRule, 14> rules = {{
        {"context_length", VT::U32, true},
        {"embedding_length", VT::U32, true},
        {"block_count", VT::U32, true},
        {"expert_count", VT::U32, false},
        {"expert_used_count", VT::U32, false},
        {"leading_dense_block_count", VT::U32, false},
        {"attention.key_length", VT::U32, false},
        {"attention.value_length", VT::U32, false},
        {"attention.sliding_window", VT::U32, false},
        {"rope.dimension_count", VT::U32, false},
        {"rope.freq_base", VT::F32, false},
        {"rope.scaling.factor", VT::F32, false},
        {"rope.scaling.original_context_length", VT::U32, false},
        {"vocab_size", VT::U32, false},
    }};
    return rules;
}

std::span<const std::string_view> perLayerKeySuffixes() {
    static const std::array<std::string_view, 3> suffixes = {"feed_forward_length", "attention.head_count",
                                                             "attention.head_count_kv"};
    return suffixes;
}

const ArchitectureRules* rulesFor(std::string_view architecture) {
    const auto& rules = table();
    const auto it = std::find_if(rules.begin(), rules.end(),
                                 [&](const ArchitectureRules& r) { return r.architecture == architecture; });
    return it == rules.end() ? nullptr : &*it;
}

} // namespace organ
