#include "anatomy/anatomy.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace organ {
namespace {

using M = AnatomyRule::Match;
constexpr System E = System::Embed;
constexpr System S = System::Skeleton;
constexpr System O = System::Organ;
constexpr System N = System::Norm;
constexpr System X = System::Other;

// Names follow gguf-py's TENSOR_NAMES. Exact rules are tried before prefix rules, so
// "ssm_norm" is a norm although "ssm_" tensors belong to the skeleton. Sequence-mixing
// tensors that replace attention (Mamba's SSM, RWKV's time mix, short convolutions) are
// skeleton; RWKV's channel mix is its FFN, so organ.
constexpr AnatomyRule kRules[] = {
    {"token_embd", M::Exact, E, "token_embd", false, "token embedding (vocabulary × embedding)"},
    {"per_layer_token_embd", M::Exact, E, "", false, "Gemma 3n per-layer token embedding"},
    {"token_types", M::Exact, E, "token_types", false, "BERT token-type embedding"},
    {"position_embd", M::Exact, E, "pos_embd", false, "learned position embedding"},
    {"pos_embd", M::Exact, E, "pos_embd", false, "learned position embedding"},
    {"token_embd_norm", M::Exact, N, "", false, "norm after the token embedding"},
    {"rope_freqs", M::Exact, X, "", false, "RoPE frequency factors (not learned weights)"},
    {"rope_factors_long", M::Exact, X, "", false, "LongRoPE long-context factors"},
    {"rope_factors_short", M::Exact, X, "", false, "LongRoPE short-context factors"},

    {"attn_norm", M::Exact, N, "", true, "pre-attention norm"},
    {"attn_norm_2", M::Exact, N, "", true, "second pre-attention norm"},
    {"attn_q_norm", M::Exact, N, "", true, "per-head query norm"},
    {"attn_k_norm", M::Exact, N, "", true, "per-head key norm"},
    {"attn_q_a_norm", M::Exact, N, "", true, "MLA query low-rank norm"},
    {"attn_kv_a_norm", M::Exact, N, "", true, "MLA key-value low-rank norm"},
    {"attn_sub_norm", M::Exact, N, "", true, "BitNet attention sub-norm"},
    {"attn_output_norm", M::Exact, N, "", true, "norm after attention (BERT)"},
    {"post_attention_norm", M::Exact, N, "", true, "post-attention norm (Gemma 2/3)"},
    {"cross_attn_norm", M::Exact, N, "", true, "cross-attention norm (T5 decoder)"},
    {"ssm_norm", M::Exact, N, "", true, "SSM output norm"},
    {"ssm_dt_norm", M::Exact, N, "", true, "SSM time-step norm"},
    {"ssm_b_norm", M::Exact, N, "", true, "SSM B norm"},
    {"ssm_c_norm", M::Exact, N, "", true, "SSM C norm"},
    {"time_mix_ln", M::Exact, N, "", true, "RWKV time-mix group norm"},
    {"indexer.k_norm", M::Exact, N, "", true, "sparse-attention indexer key norm"},

    {"attn_q", M::Exact, S, "", true, "query projection"},
    {"attn_k", M::Exact, S, "", true, "key projection"},
    {"attn_v", M::Exact, S, "", true, "value projection"},
    {"attn_qkv", M::Exact, S, "", true, "fused query-key-value projection"},
    {"attn_q_a", M::Exact, S, "", true, "MLA query down-projection"},
    {"attn_q_b", M::Exact, S, "", true, "MLA query up-projection"},
    {"attn_kv_a_mqa", M::Exact, S, "", true, "MLA key-value down-projection with RoPE part"},
    {"attn_kv_b", M::Exact, S, "", true, "MLA key-value up-projection (older layout)"},
    {"attn_k_b", M::Exact, S, "", true, "MLA per-head key up-projection"},
    {"attn_v_b", M::Exact, S, "", true, "MLA per-head value up-projection"},
    {"attn_output", M::Exact, S, "", true, "attention output projection"},
    {"attn_o", M::Exact, S, "attn_output", true, "attention output projection (T5)"},
    {"attn_gate", M::Exact, S, "", true, "attention output gate"},
    {"attn_sinks", M::Exact, S, "", true, "attention sink logits"},
    {"attn_rot_embd", M::Exact, S, "", true, "rotary embedding table"},
    {"attn_rel_b", M::Exact, S, "", true, "relative position bias (T5)"},
    {"cross_attn_q", M::Exact, S, "", true, "cross-attention query"},
    {"cross_attn_k", M::Exact, S, "", true, "cross-attention key"},
    {"cross_attn_v", M::Exact, S, "", true, "cross-attention value"},
    {"cross_attn_o", M::Exact, S, "", true, "cross-attention output"},
    {"cross_attn_rel_b", M::Exact, S, "", true, "cross-attention relative bias"},
    {"vis_attn_qkv", M::Exact, S, "", true, "visual-expert attention (CogVLM)"},
    {"vis_attn_output", M::Exact, S, "", true, "visual-expert attention output"},
    {"indexer.", M::Prefix, S, "", true, "sparse-attention indexer"},
    {"ssm_", M::Prefix, S, "", true, "state-space sequence mixer (Mamba)"},
    {"time_mix_", M::Prefix, S, "", true, "RWKV time mix (sequence mixing)"},
    {"shortconv.", M::Prefix, S, "", true, "short convolution sequence mixer (LFM2)"},

    {"ffn_norm", M::Exact, N, "", true, "pre-FFN norm"},
    {"ffn_sub_norm", M::Exact, N, "", true, "BitNet FFN sub-norm"},
    {"ffn_norm_exps", M::Exact, N, "", true, "per-expert norm"},
    {"post_ffw_norm", M::Exact, N, "", true, "post-FFN norm (Gemma 2/3)"},
    {"pre_ffw_norm_2", M::Exact, N, "", true, "second pre-FFN norm"},
    {"post_ffw_norm_1", M::Exact, N, "", true, "post-FFN norm 1"},
    {"post_ffw_norm_2", M::Exact, N, "", true, "post-FFN norm 2"},
    {"layer_output_norm", M::Exact, N, "", true, "norm after the FFN (BERT)"},
    {"post_norm", M::Exact, N, "", true, "per-layer output norm (Gemma 3n)"},
    {"laurel_post_norm", M::Exact, N, "", true, "LAuReL norm (Gemma 3n)"},
    {"altup_router_norm", M::Exact, N, "", true, "AltUp router norm (Gemma 3n)"},

    {"ffn_gate_inp", M::Exact, O, "", true, "MoE router"},
    {"ffn_gate_inp_shexp", M::Exact, O, "", true, "shared-expert gate"},
    {"exp_probs_b", M::Exact, O, "", true, "MoE router score bias"},
    {"ffn_gate", M::Exact, O, "", true, "FFN gate projection"},
    {"ffn_up", M::Exact, O, "", true, "FFN up projection"},
    {"ffn_down", M::Exact, O, "", true, "FFN down projection"},
    {"ffn", M::Exact, O, "ffn_act", true, "FFN activation scale"},
    {"ffn_gate_exps", M::Exact, O, "", true, "MoE experts' gate projections"},
    {"ffn_up_exps", M::Exact, O, "", true, "MoE experts' up projections"},
    {"ffn_down_exps", M::Exact, O, "", true, "MoE experts' down projections"},
    {"ffn_gate_up_exps", M::Exact, O, "", true, "MoE experts' fused gate-up projections"},
    {"ffn_gate_shexp", M::Exact, O, "", true, "shared expert gate projection"},
    {"ffn_up_shexp", M::Exact, O, "", true, "shared expert up projection"},
    {"ffn_down_shexp", M::Exact, O, "", true, "shared expert down projection"},
    {"ffn_gate_chexps", M::Exact, O, "", true, "chunked experts' gate projections"},
    {"ffn_up_chexps", M::Exact, O, "", true, "chunked experts' up projections"},
    {"ffn_down_chexps", M::Exact, O, "", true, "chunked experts' down projections"},
    {"ffn_latent_down", M::Exact, O, "", true, "MoE latent down projection"},
    {"ffn_latent_up", M::Exact, O, "", true, "MoE latent up projection"},
    {"vis_gate", M::Exact, O, "", true, "visual-expert FFN gate"},
    {"vis_up", M::Exact, O, "", true, "visual-expert FFN up"},
    {"vis_down", M::Exact, O, "", true, "visual-expert FFN down"},
    {"channel_mix_", M::Prefix, O, "", true, "RWKV channel mix (its FFN)"},

    {"output_norm", M::Exact, N, "", false, "final norm"},
    {"output", M::Exact, E, "output", false, "output projection to the vocabulary (LM head)"},
};

constexpr std::string_view kSystemNames[kSystemCount] = {"embed", "skeleton", "organ",
                                                         "norm",  "adapter",  "other"};

// Splits "blk.12.attn_q.weight" into layer 12 and "attn_q.weight"; T5's "enc."/"dec."
// blocks keep their prefix in the role.
std::optional<std::uint32_t> takeLayer(std::string_view& rest, std::string& rolePrefix) {
    for (std::string_view stack : {"enc.", "dec."}) {
        if (rest.starts_with(stack) && rest.substr(stack.size()).starts_with("blk.")) {
            rolePrefix = std::string(stack.substr(0, 3)) + "_";
            rest.remove_prefix(stack.size());
            break;
        }
    }
    const auto parsed = parseLayerName(rest);
    if (!parsed) {
        rolePrefix.clear();
        return std::nullopt;
    }
    rest = parsed->rest;
    return parsed->layer;
}

bool matches(const AnatomyRule& rule, std::string_view stem) {
    return rule.match == M::Exact ? stem == rule.stem : stem.starts_with(rule.stem);
}

} // namespace

std::string_view systemName(System system) {
    return kSystemNames[static_cast<std::size_t>(system)];
}

std::optional<System> systemFromName(std::string_view name) {
    for (std::size_t i = 0; i < kSystemCount; ++i) {
        if (kSystemNames[i] == name) {
            return static_cast<System>(i);
        }
    }
    return std::nullopt;
}

std::span<const AnatomyRule> anatomyRules() {
    return kRules;
}

TensorAnatomy classifyTensor(std::string_view name) {
    TensorAnatomy result;
    std::string_view rest = name;
    std::string rolePrefix;
    result.layer = takeLayer(rest, rolePrefix);

    std::string adapterSuffix;
    for (std::string_view lora : {".lora_a", ".lora_b"}) {
        if (rest.ends_with(lora)) {
            adapterSuffix = std::string(lora);
            rest.remove_suffix(lora.size());
        }
    }
    if (rest.ends_with(".weight")) {
        rest.remove_suffix(7);
    } else if (rest.ends_with(".bias")) {
        rest.remove_suffix(5);
        result.isBias = true;
    }

    const bool inLayer = result.layer.has_value();
    const AnatomyRule* found = nullptr;
    for (const M pass : {M::Exact, M::Prefix}) {
        for (const auto& rule : kRules) {
            if (rule.match == pass && rule.inLayer == inLayer && matches(rule, rest)) {
                found = &rule;
                break;
            }
        }
        if (found != nullptr) {
            break;
        }
    }
    std::string role = rolePrefix;
    if (found != nullptr) {
        result.system = found->system;
        role += found->role.empty() ? rest : found->role;
        result.order = static_cast<std::size_t>(found - kRules);
    } else {
        result.system = System::Other;
        role += rest;
        result.order = std::size(kRules);
    }
    if (result.isBias) {
        role += ".bias";
    }
    if (!adapterSuffix.empty()) {
        result.system = System::Adapter;
        role += adapterSuffix;
    }
    result.role = std::move(role);
    return result;
}

ModelAnatomy analyzeAnatomy(const GgufModel& model) {
    ModelAnatomy anatomy;
    anatomy.tensors.reserve(model.tensors().size());
    for (const auto& tensor : model.tensors()) {
        TensorAnatomy entry = classifyTensor(tensor.name);
        anatomy.bySystem[static_cast<std::size_t>(entry.system)].add(tensor);
        if (entry.layer) {
            if (*entry.layer >= anatomy.byLayer.size()) {
                anatomy.byLayer.resize(*entry.layer + 1);
            }
            anatomy.byLayer[*entry.layer].add(tensor);
        } else {
            anatomy.outsideLayers.add(tensor);
        }
        anatomy.byType[tensor.type].add(tensor);
        anatomy.total.add(tensor);
        anatomy.tensors.push_back(std::move(entry));
    }
    return anatomy;
}

std::string quantizationMix(const ModelAnatomy& anatomy) {
    std::vector<std::pair<TensorType, GroupStats>> types(anatomy.byType.begin(), anatomy.byType.end());
    std::sort(types.begin(), types.end(),
              [](const auto& a, const auto& b) { return a.second.bytes > b.second.bytes; });
    std::string text;
    for (const auto& [type, stats] : types) {
        if (!text.empty()) {
            text += ", ";
        }
        const double share = anatomy.total.bytes == 0 ? 0.0 : 100.0 * stats.bytes / anatomy.total.bytes;
        char buffer[64];
        std::snprintf(buffer, sizeof buffer, "%s %.1f%%", std::string(tensorTypeName(type)).c_str(), share);
        text += buffer;
    }
    return text.empty() ? "no tensors" : text;
}

} // namespace organ
