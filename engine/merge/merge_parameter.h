#pragma once

#include "anatomy/anatomy.h"

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace organ {

// A parameter as mergekit's configuration gives it (../shared/specs/merge-v1.md, "Parameters
// that vary over the model"): a number, a gradient [v₀ … v_k] over the blocks, or filtered values
// [{filter, value}, …, {value}] whose values may be gradients. Stored as rules: the first whose
// filter matches a tensor (an empty filter matches every tensor) gives its value there.
struct ParamRule {
    std::string filter;         // "" matches every tensor
    std::vector<double> points; // one point: a number; more: a gradient over the blocks
    bool operator==(const ParamRule&) const = default;
};
struct ParamValue {
    std::vector<ParamRule> rules;
    static ParamValue number(double value);
    bool operator==(const ParamValue&) const = default;
};

// Bounds on what a configuration may declare, so that none makes work grow without bound.
inline constexpr std::size_t kMaxGradientPoints = 1024;
inline constexpr std::size_t kMaxParamRules = 256;
inline constexpr std::size_t kMaxFilterBytes = 256;

// Where a tensor sits: its name (in the model being made), anatomy and the model's block count.
struct TensorPlace {
    std::string name;
    TensorAnatomy anatomy;
    std::uint32_t blocks = 0;
    static TensorPlace of(std::string name, std::uint32_t blocks);
};

// The value of a gradient at p in [0, 1]: piecewise linear through (j/k, v_j).
double gradientAt(std::span<const double> points, double p);
// Where a tensor sits on a gradient: block l of L at l/(L − 1) (0 when L = 1); outside the blocks
// 1 for the output side (names starting "output": output.weight, output_norm.weight) and 0 for
// every other (the embedding side).
double gradientPosition(const TensorPlace& place);

// A mergekit filter in GGUF's names: self_attn → attn_, mlp → ffn_, input_layernorm → attn_norm,
// post_attention_layernorm → ffn_norm, embed_tokens → token_embd, lm_head → output.
std::string ggufFilter(std::string_view filter);
// Whether a filter picks the tensor: a system name (skeleton, organ, embed, norm, adapter, other)
// by the anatomy; anything else as a substring of the name after ggufFilter.
bool filterMatches(std::string_view filter, const TensorPlace& place);

// The parameter's value for the tensor, or nothing when no rule matches it.
std::optional<double> resolveParam(const ParamValue& value, const TensorPlace& place);

// The value in a plan's JSON: a number, an array of numbers, or an array of {"filter", "value"}.
nlohmann::json paramValueToJson(const ParamValue& value);
// What is wrong with `json` as a value (nothing when `out` was read).
std::optional<std::string> paramValueFromJson(const nlohmann::json& json, ParamValue& out);
// What is wrong with a rule list read from anywhere: counts, filter lengths, finite points.
std::optional<std::string> paramValueProblem(const ParamValue& value);

} // namespace organ
