#pragma once

#include "vitals/budget_mix.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace organ {

// The text a sensitivity runs on, read from a file of at most 4 MiB. Throws IoError or FormatError
// (an empty text) naming the file.
std::string readLabText(const RootedPath& path);

// The types a budget mix chooses among by default: Q2_K, Q3_K, Q4_K, IQ4_XS, Q5_K, Q6_K, Q8_0.
std::vector<TensorType> defaultBudgetTypes();

// What the quantization lab's Pareto chart shows: bits per weight against KL divergence, for
// llama-quantize's fixed mixes and for budget mixes (chooseBudgetMix) at a sweep of sizes.
struct ParetoRequest {
    SensitivityRequest sensitivity; // its types are the budget mixes' options
    std::vector<QuantFileType> references{QuantFileType::Q3_K_M, QuantFileType::Q4_K_M, QuantFileType::Q5_K_M,
                                          QuantFileType::Q6_K};
    std::size_t budgets = 12; // budget mixes from the smallest mix of the types to the largest
    // Each reference, and the budget mix at its size, written in memory and run on the text: their
    // measured KL beside the predicted one.
    bool measure = true;
};

struct ParetoPoint {
    std::string label; // "Q4_K_M", or the budget's bits per weight
    ModelSize size;
    // The sum of the groups' measured KLs at the types the mix gives them; none when the mix gives
    // a group a type it was not measured at (or its tensors different types).
    std::optional<double> predictedKl;
    std::optional<TypeSensitivity> measured; // the whole mix, run on the text
    QuantizeRecipe recipe;                   // what organ quantize (and the window's plan) takes
};

struct ParetoReport {
    SensitivityReport sensitivity;
    std::vector<ParetoPoint> references; // llama-quantize's mixes, in the request's order
    std::vector<ParetoPoint> mixes; // the budget mixes, by size (the sweep and one at each reference's size)
    double mixSeconds = 0;          // measuring the mixes
};

// The budget mix under `budgetBytes` as a point (its predicted KL, its recipe); nullopt when the
// budget is below the smallest mix of the types measured.
std::optional<ParetoPoint> budgetPoint(const GgufModel& model, const SensitivityReport& sensitivity,
                                       std::uint64_t budgetBytes, const std::string& imatrixFile);

// The sensitivity (measureSensitivity, reusing `reference` as it does), then the points. Throws
// as measureSensitivity does. Cancelled: nullopt.
std::optional<ParetoReport> measurePareto(const std::shared_ptr<const GgufModel>& model,
                                          const ImatrixData* importance, const std::string& imatrixFile,
                                          const ParetoRequest& request, const ProgressFn& progress = {},
                                          const StopToken* stop = nullptr,
                                          std::shared_ptr<const SensitivityReference>* reference = nullptr);

// The HTTP API's quant-lab result: references and mixes (bits per weight, bytes, predicted and
// measured KL, the recipe's options) and the sensitivity it came from.
nlohmann::json paretoToJson(const ParetoReport& report);

} // namespace organ
