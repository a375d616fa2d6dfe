#pragma once

#include "gguf/gguf_model.h"
#include "quant/imatrix_file.h"
#include "quant/quantize_recipe.h"
#include "support/job.h"
#include "vitals/layer_states.h"
#include "vitals/vitals_report.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace organ {

// How the quantizable tensors are grouped: each alone, a layer's together, or a role's (attn_v,
// ffn_down…) across the layers together. Tensors outside the layers are each their own group.
enum class QuantGrouping { Tensor, Layer, Role };
std::optional<QuantGrouping> quantGroupingFromName(std::string_view name); // tensor, layer, role
std::string_view quantGroupingName(QuantGrouping grouping);

// Tensors that take one type together, in llama-quantize's order.
struct QuantGroup {
    std::string name; // the tensor's name, "blk.3", or the role ("attn_v")
    std::vector<const TensorInfo*> tensors;
};
std::vector<QuantGroup> quantGroups(const GgufModel& model, QuantGrouping grouping);
// Whether `type`'s block fits every row of the group.
bool groupFits(const QuantGroup& group, TensorType type);

struct SensitivityRequest {
    std::string text;      // empty: the built-in text of vital signs
    std::size_t chunk = 0; // as organ vitals --chunk
    std::vector<TensorType> types{TensorType::Q2_K};
    QuantGrouping grouping = QuantGrouping::Tensor;
    unsigned threads = 0; // for the forward pass (0: one per core)
};

// The model with one group quantized to one type, against the model itself.
struct TypeSensitivity {
    TensorType type = TensorType::Q2_K;
    std::uint64_t bytes = 0; // the group's bytes in that type
    double klMean = 0;
    double klP99 = 0;
    double topAgreement = 1;
};

struct GroupSensitivity {
    std::string name;
    std::vector<std::string> tensors;
    std::uint64_t elements = 0;
    std::uint64_t bytes = 0;            // as stored
    std::vector<TypeSensitivity> types; // the requested types whose block fits every row of the group
    double seconds = 0;                 // its forward passes, wall-clock
};

struct SensitivityReport {
    std::string model;
    QuantGrouping grouping = QuantGrouping::Tensor;
    std::vector<TensorType> types;
    bool importance = false;
    std::size_t tokens = 0;
    std::size_t chunk = 0;
    std::size_t scored = 0;
    double perplexity = 0;       // the model's own, on the text
    double referenceSeconds = 0; // its forward pass, whose logits every group is compared with
    std::vector<GroupSensitivity> groups;
    std::vector<std::string> notes;
};

// The model's own run on a request's text, which every quantized run is compared with: its logits
// on the positions scored and, when they fit in the memory vital signs allow, the hidden states
// entering each layer of every piece (a group's run starts at its first changed layer). Made by
// measureSensitivity; kept by a caller that runs the same model on the same text again.
struct SensitivityReference : StatesRun {
    std::string model; // the model's path
    std::string text;
    double perplexity = 0;
    double seconds = 0; // what its run took
    std::vector<std::string> notes;
    // Whether it is the run of `model` on the request's text and chunk.
    bool matches(const GgufModel& model, const SensitivityRequest& request) const;
};

// For each group and type: the KL divergence of the model with only that group quantized (as
// organ quantize encodes it, with `importance` read from `imatrixFile` when given) from the model
// itself, on the request's text, by the forward pass on weights that are never written. The
// model's own logits are computed once; each quantized group is encoded once per type. With
// `reference`: a run it holds that matches is used instead of running the model again, and the
// run made is left there (the report's referenceSeconds are then 0). Throws FormatError,
// VitalsUnavailable (as takeVitals). Cancelled: nullopt.
std::optional<SensitivityReport>
measureSensitivity(const std::shared_ptr<const GgufModel>& model, const ImatrixData* importance,
                   const std::string& imatrixFile, const SensitivityRequest& request,
                   const ProgressFn& progress = {}, const StopToken* stop = nullptr,
                   std::shared_ptr<const SensitivityReference>* reference = nullptr);

// The model as organ quantize writes it with `recipe` (never written: its converted tensors
// encoded in memory, with `importance` read from `imatrixFile` when given), run on the
// reference's text: its KL divergence from the model. Throws FormatError (a recipe llama-quantize
// refuses). Cancelled: nullopt.
std::optional<TypeSensitivity> measureMixDivergence(const std::shared_ptr<const GgufModel>& model,
                                                    const QuantizeRecipe& recipe,
                                                    const ImatrixData* importance,
                                                    const SensitivityReference& reference, unsigned threads,
                                                    const StopToken* stop = nullptr);

// A report sensitivityToJson wrote (alone, or as the "sensitivity" of organ quantize --target-bpw
// --json), read back for `model`: its groups must be the model's under its grouping (names,
// tensors, each type's bytes), its divergences finite and not negative. Throws FormatError or
// IoError naming the file and what is wrong.
SensitivityReport readSensitivity(const RootedPath& path, const GgufModel& model);

// `organ quantize --sensitivity --json`.
nlohmann::json sensitivityToJson(const SensitivityReport& report);
// The terminal's table: per group, the KL mean per type.
std::string sensitivityText(const SensitivityReport& report);

} // namespace organ
