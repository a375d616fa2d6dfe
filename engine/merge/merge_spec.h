#pragma once

#include "merge/merge_method.h"
#include "merge/merge_parameter.h"

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace organ {

// One model of a merge: its id (a plan's "base" or donor id; a path in a configuration being
// read) and its own parameters (weight, density, gamma).
struct MergeModel {
    std::string model;
    std::map<std::string, ParamValue> parameters;
    bool operator==(const MergeModel&) const = default;
};

// One merge, as mergekit's configuration and a plan's merge operation say it.
struct MergeSpec {
    MergeMethod method = MergeMethod::Linear;
    std::string base; // the model task vectors are taken from; "" for none (linear)
    std::vector<MergeModel> models;
    // Global numbers: t (slerp), and weight, density, gamma for the models that do not set them.
    std::map<std::string, ParamValue> parameters;
    std::optional<bool> normalize;
    std::optional<bool> rescale;
    std::uint64_t seed = 0; // dare_*: the masks' generator (merge/dare_mask.h)
    bool operator==(const MergeSpec&) const = default;

    // The models combined: every listed one for linear; for the others the listed ones that are
    // not the base (slerp: the one beside the base). Indices into `models`.
    std::vector<std::size_t> mergedModels() const;
    // Every model the merge names: its base (when it has one), then its models, in order.
    std::vector<std::string> modelIds() const;
    // The base (when it has one) and every model renamed by `rename` (ids to paths, or back).
    void renameModels(const std::function<std::string(const std::string&)>& rename);
};

// What is wrong with parameter `name` holding `value` in a merge by `method`: not one of its
// parameters (those it takes named), or a share (density, gamma) outside [0, 1].
std::optional<std::string> mergeParameterProblem(MergeMethod method, const std::string& name,
                                                 const ParamValue& value);

// What is wrong with the merge, whatever the models hold: a method that needs a base without one,
// too few or too many models, a parameter the method does not take (named), a value out of range
// (density and gamma in [0, 1]). Nothing when it is sound.
std::optional<std::string> mergeSpecProblem(const MergeSpec& spec);
// What a sound merge leaves out whatever the models hold, for a warning: a merged model whose
// weight, or whose density where the method thins by it, is 0 everywhere ("farm contributes
// nothing: its weight is 0 everywhere"), and slerp at t = 0 everywhere (the base as it stands).
std::vector<std::string> mergeSpecNoOps(const MergeSpec& spec);

// How many filter rules resolving one tensor's parameters may try (every merged model's and the
// defaults'), so that a plan's check can bound tensors × rules before it resolves them: 64 models
// of 256 filtered weights over a stack of thousands of blocks would take minutes.
std::uint64_t mergeRuleLookups(const MergeSpec& spec);
inline constexpr std::uint64_t kMaxMergeRuleLookups = std::uint64_t(1) << 24;

// A plan's merge operation: {"method", "base", "models": [{"model", "parameters"}], "parameters",
// "seed"}; the keys are added to `out`. Reading ignores other keys (the operation's own).
void mergeSpecToJson(const MergeSpec& spec, nlohmann::json& out);
// Throws FormatError "<where>: <problem>".
MergeSpec mergeSpecFromJson(const nlohmann::json& object, const std::string& where);

// The parameters of one tensor, resolved: one entry per merged model (mergedModels' order).
struct ModelTensorParams {
    double weight = 1;
    double density = 1;
    double gamma = 0.01;
};
struct TensorMergeParams {
    MergeMethod method = MergeMethod::Linear;
    std::vector<ModelTensorParams> models;
    double t = 0;
    bool normalize = false;
    bool rescale = true;
    std::uint64_t seed = 0;
    std::string stream; // the tensor's name, which DARE's masks are drawn for
};
// The spec's values at `place`. `stream`: the name DARE's masks are drawn for (the inputs' name
// of the tensor). Throws FormatError naming the model and the tensor when a value the method needs
// is missing (a weight no rule gives) or out of range.
TensorMergeParams resolveTensorParams(const MergeSpec& spec, const TensorPlace& place,
                                      const std::string& stream);

// The organ.merge.parameters text: the spec as JSON (without the models' ids).
nlohmann::json mergeParametersJson(const MergeSpec& spec);

} // namespace organ
