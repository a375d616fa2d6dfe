#include "vitals/budget_mix.h"

#include "quant/mix_budget.h"
#include "quant/quant_mix.h"
#include "support/errors.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <cmath>
#include <map>

namespace organ {
namespace {

// The file type whose own type is `type` (the _M mixes for the K-quants).
QuantFileType fileTypeOf(TensorType type) {
    for (QuantFileType f :
         {QuantFileType::Q2_K, QuantFileType::Q3_K_M, QuantFileType::Q4_K_M, QuantFileType::Q5_K_M,
          QuantFileType::Q6_K, QuantFileType::Q8_0, QuantFileType::Q4_0, QuantFileType::Q4_1,
          QuantFileType::Q5_0, QuantFileType::Q5_1, QuantFileType::IQ4_NL, QuantFileType::IQ4_XS}) {
        if (defaultTensorType(f) == type) {
            return f;
        }
    }
    return QuantFileType::Q8_0;
}

// A tensor's name as a pattern that matches it alone.
std::string anchoredPattern(const std::string& name) {
    std::string out = "^";
    for (char c : name) {
        if (std::string_view(".[]{}()*+?|^$\\").find(c) != std::string_view::npos) {
            out += '\\';
        }
        out += c;
    }
    return out + "$";
}

std::string lowerCase(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

} // namespace

ModelSize modelSize(const GgufModel& model) {
    ModelSize size;
    for (const TensorInfo& t : model.tensors()) {
        size.parameters += t.elements;
        size.tensorBytes += t.bytes;
    }
    return size;
}

std::uint64_t budgetBytesOf(const ModelSize& size, double bitsPerWeight) {
    return static_cast<std::uint64_t>(std::floor(bitsPerWeight * double(size.parameters) / 8.0));
}

ModelSize quantizedSize(const GgufModel& model, const QuantizeRecipe& recipe, bool hasImportance) {
    std::vector<MixTensor> mix;
    for (const TensorInfo& t : model.tensors()) {
        mix.push_back({t.name, t.type, t.ne});
    }
    const std::vector<TensorChoice> choices =
        chooseTensorTypes(mixModelOf(model.metadata()), mix, recipe, hasImportance);
    ModelSize size;
    for (std::size_t i = 0; i < mix.size(); ++i) {
        size.parameters += model.tensors()[i].elements;
        size.tensorBytes += storedBytes(choices[i].type, model.tensors()[i].elements);
    }
    return size;
}

std::uint64_t smallestMixBytes(const GgufModel& model, QuantGrouping grouping,
                               const std::vector<TensorType>& types) {
    std::uint64_t total = modelSize(model).tensorBytes;
    for (const QuantGroup& g : quantGroups(model, grouping)) {
        std::optional<std::uint64_t> smallest;
        std::uint64_t stored = 0;
        for (const TensorInfo* t : g.tensors) {
            stored += t->bytes;
        }
        for (TensorType type : types) {
            std::uint64_t bytes = 0;
            bool fits = true;
            for (const TensorInfo* t : g.tensors) {
                fits = fits && t->ne[0] % traitsOf(type).blockSize == 0;
                bytes += storedBytes(type, t->elements);
            }
            if (fits && (!smallest || bytes < *smallest)) {
                smallest = bytes;
            }
        }
        if (!smallest) {
            throw FormatError(g.name + ": none of the types fits its rows");
        }
        total = total - stored + *smallest;
    }
    return total;
}

BudgetMix chooseBudgetMix(const GgufModel& model, const SensitivityReport& sensitivity,
                          std::uint64_t budgetBytes) {
    BudgetMix mix;
    const ModelSize whole = modelSize(model);
    mix.size.parameters = whole.parameters;
    mix.budgetBytes = budgetBytes;
    std::map<std::string, bool> grouped;
    std::vector<std::vector<BudgetOption>> options;
    std::uint64_t least = 0;
    for (const GroupSensitivity& g : sensitivity.groups) {
        for (const std::string& name : g.tensors) {
            grouped[name] = true;
        }
        options.emplace_back();
        std::uint64_t smallest = UINT64_MAX;
        for (const TypeSensitivity& t : g.types) {
            options.back().push_back({t.bytes, t.klMean});
            smallest = std::min(smallest, t.bytes);
        }
        if (g.types.empty()) {
            throw FormatError(g.name + ": none of the types measured fits its rows");
        }
        least += smallest;
    }
    for (const TensorInfo& t : model.tensors()) {
        mix.fixedBytes += grouped.count(t.name) ? 0 : t.bytes;
    }
    const auto solution = mix.budgetBytes >= mix.fixedBytes
                              ? solveBudget(options, mix.budgetBytes - mix.fixedBytes)
                              : std::nullopt;
    if (!solution) {
        throw FormatError(fileLabel(model.path()) + ": " +
                          fixedDecimals(8.0 * double(budgetBytes) / double(whole.parameters), 4) +
                          " bits per weight is below the smallest mix of the types measured (" +
                          fixedDecimals(8.0 * double(least + mix.fixedBytes) / double(whole.parameters), 4) +
                          ")");
    }
    mix.exact = solution->exact;
    mix.predictedKl = solution->cost;
    mix.size.tensorBytes = mix.fixedBytes + solution->bytes;
    for (std::size_t g = 0; g < sensitivity.groups.size(); ++g) {
        const GroupSensitivity& group = sensitivity.groups[g];
        const TypeSensitivity& t = group.types[solution->choice[g]];
        mix.choices.push_back({group.name, group.tensors, t.type, t.bytes, t.klMean});
    }
    return mix;
}

QuantizeRecipe budgetRecipe(const BudgetMix& mix, const std::string& imatrix) {
    std::map<TensorType, std::uint64_t> bytes;
    for (const BudgetMix::Choice& c : mix.choices) {
        if (traitsOf(c.type).quantized) {
            bytes[c.type] += c.bytes;
        }
    }
    const auto most = std::max_element(bytes.begin(), bytes.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    QuantizeRecipe recipe;
    recipe.fileType = fileTypeOf(most != bytes.end() ? most->first : TensorType::Q8_0);
    recipe.imatrix = imatrix;
    for (const BudgetMix::Choice& c : mix.choices) {
        for (const std::string& name : c.tensors) {
            recipe.tensorTypes.emplace_back(anchoredPattern(name), c.type);
        }
    }
    return recipe;
}

std::vector<std::string> tensorTypeOptions(const QuantizeRecipe& recipe) {
    std::vector<std::string> out;
    for (const auto& [pattern, type] : recipe.tensorTypes) {
        out.push_back(pattern + "=" + lowerCase(tensorTypeName(type)));
    }
    return out;
}

std::string tensorTypeArguments(const QuantizeRecipe& recipe) {
    std::string out;
    for (const std::string& option : tensorTypeOptions(recipe)) {
        out += (out.empty() ? "" : " ") + std::string("--tensor-type '") + option + "'";
    }
    return out;
}

nlohmann::json budgetMixToJson(const BudgetMix& mix, const QuantizeRecipe& recipe) {
    nlohmann::json choices = nlohmann::json::array();
    for (const BudgetMix::Choice& c : mix.choices) {
        nlohmann::json tensors = nlohmann::json::array();
        for (const std::string& name : c.tensors) {
            tensors.push_back(jsonText(name));
        }
        choices.push_back({{"group", jsonText(c.group)},
                           {"tensors", tensors},
                           {"type", tensorTypeName(c.type)},
                           {"bytes", c.bytes},
                           {"predicted_kl", c.predictedKl}});
    }
    nlohmann::json tensorTypes = nlohmann::json::array();
    for (const std::string& option : tensorTypeOptions(recipe)) {
        tensorTypes.push_back(jsonText(option));
    }
    return {{"budget_bytes", mix.budgetBytes},
            {"budget_bits_per_weight",
             mix.size.parameters == 0 ? 0.0 : 8.0 * double(mix.budgetBytes) / double(mix.size.parameters)},
            {"fixed_bytes", mix.fixedBytes},
            {"tensor_bytes", mix.size.tensorBytes},
            {"parameters", mix.size.parameters},
            {"bits_per_weight", mix.size.bitsPerWeight()},
            {"predicted_kl", mix.predictedKl},
            {"method", mix.exact ? "exact multiple-choice knapsack" : "knapsack on sizes rounded up"},
            {"file_type", quantFileTypeName(recipe.fileType)},
            {"tensor_types", tensorTypes},
            {"choices", choices}};
}

} // namespace organ
