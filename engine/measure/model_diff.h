#pragma once

#include "anatomy/tensor_selector.h"
#include "gguf/gguf_model.h"
#include "support/job.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace organ {

// Sums over the values of one tensor (or a group of them) in two models, in double: a the first
// model's values, b the second's.
struct DiffSums {
    double aa = 0;             // Σ a²
    double bb = 0;             // Σ b²
    double ab = 0;             // Σ a·b
    double dd = 0;             // Σ (b − a)²
    double maxAbs = 0;         // max |b − a| (NaN values left out)
    std::uint64_t changed = 0; // values whose decoded value differs (two NaNs do not)
    std::uint64_t values = 0;
    // Values a[i] and b[i] for i < count, in order.
    void addValues(const float* a, const float* b, std::size_t count);
    void add(const DiffSums& other);
    // ‖b − a‖ / ‖a‖: 0 when nothing changed, nullopt when ‖a‖ = 0 but b differs, or a sum is not finite.
    std::optional<double> relativeError() const;
    // a·b / (‖a‖ ‖b‖): 1 when both are 0, 0 when one is; nullopt when not finite.
    std::optional<double> cosine() const;
    // 10·log10(‖a‖² / ‖b − a‖²), the signal-to-quantization-noise ratio: nullopt when nothing
    // changed (infinite) or ‖a‖ = 0.
    std::optional<double> sqnrDb() const;
};

// One tensor present in both models with the same shape; its types may differ.
struct TensorDiff {
    std::string name;
    TensorType typeA = TensorType::F32;
    TensorType typeB = TensorType::F32;
    bool identical = false; // the same type and the same bytes
    DiffSums sums;
};

// A tensor of one name whose shapes differ between the models: listed, not compared.
struct ShapeMismatch {
    std::string name;
    std::string shapeA;
    std::string shapeB;
};

// Several tensors' sums together: a system, or a layer.
struct DiffGroup {
    std::string label; // "skeleton", "layer 3", "no layer"
    std::uint64_t tensors = 0;
    std::uint64_t identical = 0;
    DiffSums sums;
};

struct ModelDiff {
    std::string a; // the files' labels
    std::string b;
    std::vector<TensorDiff> tensors;  // in the first model's order
    std::vector<std::string> onlyInA; // selected tensors the other model lacks
    std::vector<std::string> onlyInB;
    std::vector<ShapeMismatch> shapes; // same name, other shape
    std::vector<DiffGroup> bySystem;   // in anatomical order, systems with tensors compared
    std::vector<DiffGroup> byLayer;    // by layer number, then tensors outside layers
};

// Every selected tensor of `a` and `b` compared value by value (each decoded from its own type, a
// few MiB at a time), on `threads` workers (0: one per core). Cancelled: nullopt.
std::optional<ModelDiff> diffModels(const GgufModel& a, const GgufModel& b, const TensorSelector& select,
                                    const ProgressFn& progress = {}, const StopToken* stop = nullptr,
                                    unsigned threads = 0);

// `organ diff --json` (docs/diff-json.md).
nlohmann::json modelDiffToJson(const ModelDiff& diff);
// The terminal's report: the summary, per system, per layer, then each tensor that changed.
std::string modelDiffText(const ModelDiff& diff);

} // namespace organ
