#include "vitals/quant_pareto.h"

#include "quant/quant_mix.h"
#include "quant/quantize.h"
#include "support/errors.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "vitals/vitals_report.h"

#include <algorithm>
#include <chrono>
#include <map>

namespace organ {
namespace {

// The sum of the groups' KLs at the types `recipe` gives their tensors (nothing for a group it
// leaves as it is); none when a group gets a type it was not measured at, or its tensors differ.
std::optional<double> predictedKlOf(const GgufModel& model, const SensitivityReport& sensitivity,
                                    const QuantizeRecipe& recipe, bool hasImportance) {
    std::vector<MixTensor> tensors;
    for (const TensorInfo& t : model.tensors()) {
        tensors.push_back({t.name, t.type, t.ne});
    }
    const std::vector<TensorChoice> choices =
        chooseTensorTypes(mixModelOf(model.metadata()), tensors, recipe, hasImportance);
    std::map<std::string, TensorType> chosen;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (choices[i].convert && choices[i].type != tensors[i].type) {
            chosen.emplace(tensors[i].name, choices[i].type);
        }
    }
    double total = 0;
    for (const GroupSensitivity& g : sensitivity.groups) {
        std::optional<TensorType> type;
        std::size_t changed = 0;
        for (const std::string& name : g.tensors) {
            if (const auto it = chosen.find(name); it != chosen.end()) {
                ++changed;
                if (type && *type != it->second) {
                    return std::nullopt;
                }
                type = it->second;
            }
        }
        if (changed == 0) {
            continue;
        }
        const auto at = std::find_if(g.types.begin(), g.types.end(),
                                     [&](const TypeSensitivity& t) { return t.type == *type; });
        if (changed != g.tensors.size() || at == g.types.end()) {
            return std::nullopt;
        }
        total += at->klMean;
    }
    return total;
}

// The largest mix of the types measured: each group in its largest measured type.
std::uint64_t largestMixBytes(const GgufModel& model, const SensitivityReport& sensitivity) {
    std::uint64_t total = modelSize(model).tensorBytes;
    for (const GroupSensitivity& g : sensitivity.groups) {
        std::uint64_t largest = 0;
        for (const TypeSensitivity& t : g.types) {
            largest = std::max(largest, t.bytes);
        }
        total = total - g.bytes + largest;
    }
    return total;
}

nlohmann::json pointJson(const ParetoPoint& p) {
    nlohmann::json tensorTypes = nlohmann::json::array();
    for (const std::string& option : tensorTypeOptions(p.recipe)) {
        tensorTypes.push_back(jsonText(option));
    }
    nlohmann::json j = {{"label", jsonText(p.label)},
                        {"bits_per_weight", p.size.bitsPerWeight()},
                        {"tensor_bytes", p.size.tensorBytes},
                        {"predicted_kl", p.predictedKl ? nlohmann::json(*p.predictedKl) : nlohmann::json()},
                        {"file_type", quantFileTypeName(p.recipe.fileType)},
                        {"tensor_types", tensorTypes}};
    if (p.measured) {
        j["measured"] = {{"kl_mean", p.measured->klMean},
                         {"kl_p99", p.measured->klP99},
                         {"top1_agreement", p.measured->topAgreement}};
    }
    return j;
}

constexpr std::uint64_t kMaxTextBytes = 4u << 20;

} // namespace

std::string readLabText(const RootedPath& path) {
    std::string text = readSmallFile(path, kMaxTextBytes);
    checkScoredText(fileLabel(path.path), text);
    return text;
}

std::vector<TensorType> defaultBudgetTypes() {
    return {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::IQ4_XS,
            TensorType::Q5_K, TensorType::Q6_K, TensorType::Q8_0};
}

std::optional<ParetoPoint> budgetPoint(const GgufModel& model, const SensitivityReport& sensitivity,
                                       std::uint64_t budgetBytes, const std::string& imatrixFile) {
    if (budgetBytes < smallestMixBytes(model, sensitivity.grouping, sensitivity.types)) {
        return std::nullopt;
    }
    const BudgetMix mix = chooseBudgetMix(model, sensitivity, budgetBytes);
    ParetoPoint point;
    point.size = mix.size;
    point.predictedKl = mix.predictedKl;
    point.recipe = budgetRecipe(mix, imatrixFile);
    point.label = fixedDecimals(8.0 * double(budgetBytes) / double(mix.size.parameters), 2) + " bpw";
    return point;
}

std::optional<ParetoReport> measurePareto(const std::shared_ptr<const GgufModel>& model,
                                          const ImatrixData* importance, const std::string& imatrixFile,
                                          const ParetoRequest& request, const ProgressFn& progress,
                                          const StopToken* stop,
                                          std::shared_ptr<const SensitivityReference>* reference) {
    std::shared_ptr<const SensitivityReference> own = reference != nullptr ? *reference : nullptr;
    auto sensitivity =
        measureSensitivity(model, importance, imatrixFile, request.sensitivity, progress, stop, &own);
    if (!sensitivity) {
        return std::nullopt;
    }
    if (reference != nullptr) {
        *reference = own;
    }
    ParetoReport report;
    report.sensitivity = std::move(*sensitivity);
    const GgufModel& m = *model;
    const SensitivityReport& s = report.sensitivity;
    for (QuantFileType type : request.references) {
        ParetoPoint point;
        point.label = std::string(quantFileTypeName(type));
        point.recipe.fileType = type;
        point.recipe.imatrix = imatrixFile;
        point.size = quantizedSize(m, point.recipe, importance != nullptr);
        point.predictedKl = predictedKlOf(m, s, point.recipe, importance != nullptr);
        report.references.push_back(std::move(point));
    }
    const std::uint64_t least = smallestMixBytes(m, s.grouping, s.types);
    const std::uint64_t most = largestMixBytes(m, s);
    const std::size_t steps = std::max<std::size_t>(request.budgets, 2);
    for (std::size_t i = 0; i < steps; ++i) {
        const std::uint64_t budget = least + (most - least) * i / (steps - 1);
        if (auto point = budgetPoint(m, s, budget, imatrixFile)) {
            report.mixes.push_back(std::move(*point));
        }
    }
    // Ours at each reference's size: the comparison the chart is for.
    std::vector<std::size_t> atReference;
    for (const ParetoPoint& r : report.references) {
        if (auto point = budgetPoint(m, s, r.size.tensorBytes, imatrixFile)) {
            point->label = r.label + "'s size";
            atReference.push_back(report.mixes.size());
            report.mixes.push_back(std::move(*point));
        }
    }
    if (request.measure) {
        const auto start = std::chrono::steady_clock::now();
        std::vector<ParetoPoint*> measured;
        for (ParetoPoint& r : report.references) {
            measured.push_back(&r);
        }
        for (std::size_t i : atReference) {
            measured.push_back(&report.mixes[i]);
        }
        ProgressThrottle throttle(progress);
        for (std::size_t i = 0; i < measured.size(); ++i) {
            throttle.report(i, measured.size(), "measuring the mixes");
            measured[i]->measured = measureMixDivergence(model, measured[i]->recipe, importance, *own,
                                                         request.sensitivity.threads, stop);
            if (!measured[i]->measured) {
                return std::nullopt;
            }
        }
        throttle.report(measured.size(), measured.size(), "done", true);
        report.mixSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    std::stable_sort(
        report.mixes.begin(), report.mixes.end(),
        [](const ParetoPoint& a, const ParetoPoint& b) { return a.size.tensorBytes < b.size.tensorBytes; });
    return report;
}

nlohmann::json paretoToJson(const ParetoReport& report) {
    nlohmann::json references = nlohmann::json::array();
    for (const ParetoPoint& p : report.references) {
        references.push_back(pointJson(p));
    }
    nlohmann::json mixes = nlohmann::json::array();
    for (const ParetoPoint& p : report.mixes) {
        mixes.push_back(pointJson(p));
    }
    return {{"format", "organ-quantize-pareto"},
            {"version", 1},
            {"references", references},
            {"mixes", mixes},
            {"reference_seconds", report.sensitivity.referenceSeconds},
            {"mix_seconds", report.mixSeconds},
            {"sensitivity", sensitivityToJson(report.sensitivity)}};
}

} // namespace organ
