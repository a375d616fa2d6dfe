#pragma once

#include "quant/quantize_recipe.h"
#include "vitals/quant_sensitivity.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace organ {

// The bits per weight of a model: 8 × its tensors' bytes / its parameters, every tensor counted
// (norms and others that stay as they are too), as organ quantize prints it. A budget in bits per
// weight is a budget of floor(bits × parameters / 8) tensor bytes.
struct ModelSize {
    std::uint64_t parameters = 0;
    std::uint64_t tensorBytes = 0;
    double bitsPerWeight() const {
        return parameters == 0 ? 0.0 : 8.0 * double(tensorBytes) / double(parameters);
    }
};
ModelSize modelSize(const GgufModel& model);
// floor(bits × parameters / 8).
std::uint64_t budgetBytesOf(const ModelSize& size, double bitsPerWeight);
// The size organ quantize writes `model` in with `recipe` (its mix, fallbacks included).
ModelSize quantizedSize(const GgufModel& model, const QuantizeRecipe& recipe, bool hasImportance);

// The fewest tensor bytes a mix of `types` can take over `grouping`'s groups: each group in its
// smallest type that fits all its rows, the other tensors as they are. Throws FormatError naming a
// group that fits none of the types.
std::uint64_t smallestMixBytes(const GgufModel& model, QuantGrouping grouping,
                               const std::vector<TensorType>& types);

// A type per group chosen to minimize the predicted KL divergence (the sum of each group's
// measured one: one group quantized at a time, interactions not modelled) under a byte budget.
struct BudgetMix {
    std::uint64_t budgetBytes = 0; // the most the tensors may take
    std::uint64_t fixedBytes = 0;  // the tensors llama-quantize does not quantize, as they are
    ModelSize size;                // the mix's: tensorBytes ≤ budgetBytes, always
    double predictedKl = 0;
    bool exact = true; // the knapsack's optimum (see solveBudget)
    struct Choice {
        std::string group;
        std::vector<std::string> tensors;
        TensorType type = TensorType::Q4_K;
        std::uint64_t bytes = 0;
        double predictedKl = 0;
    };
    std::vector<Choice> choices;
};

// The mix of `sensitivity`'s groups and types (each group's measured types are its options)
// with the least predicted KL in at most `budgetBytes` of tensors. Throws FormatError when even
// the smallest types exceed the budget (naming the least bits per weight they reach).
BudgetMix chooseBudgetMix(const GgufModel& model, const SensitivityReport& sensitivity,
                          std::uint64_t budgetBytes);

// The recipe that makes organ quantize (and llama-quantize) write the mix: every chosen tensor
// named by an anchored --tensor-type pattern, the file type that of the most bytes.
QuantizeRecipe budgetRecipe(const BudgetMix& mix, const std::string& imatrix);
// The recipe's --tensor-type options: "^blk\.0\.attn_q\.weight$=q4_k", …
std::vector<std::string> tensorTypeOptions(const QuantizeRecipe& recipe);
// The recipe's --tensor-type options as a shell takes them: --tensor-type '^blk\.0\.attn_q\.weight$=q4_k' …
std::string tensorTypeArguments(const QuantizeRecipe& recipe);

nlohmann::json budgetMixToJson(const BudgetMix& mix, const QuantizeRecipe& recipe);

} // namespace organ
