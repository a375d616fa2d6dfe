#pragma once

#include "anatomy/anatomy.h"
#include "gguf/gguf_model.h"
#include "measure/zmeasure.h"
#include "support/job.h"

#include <functional>
#include <string>
#include <vector>

namespace organ {

// θ statistics of a group of tensors (a system, a role, a layer or the whole model).
struct ThetaGroup {
    std::string key;
    std::uint64_t tensors = 0;  // in the group
    std::uint64_t measured = 0; // with a θ (constant and unreadable tensors have none)
    std::uint64_t parameters = 0;
    double thetaMean = 0;
    double thetaMin = 0;
    double thetaMax = 0;
    double signalMean = 0;
};

struct ModelMeasurement {
    std::string path;
    std::string name;
    std::string architecture;
    ZParams params;
    std::vector<ZResult> tensors; // parallel to GgufModel::tensors()
    ThetaGroup model;
    std::vector<ThetaGroup> bySystem; // in System order, only systems present
    std::vector<ThetaGroup> byRole;   // in anatomical order
    std::vector<ThetaGroup> byLayer;  // layer 0 …; key "0", "1" …
    bool fromCache = false;
};

struct MeasureOptions {
    ZParams params;
    unsigned threads = 0; // 0: one per core
    // Called as each tensor's result is ready (from the workers, one call at a time), so
    // that a view can fill in θ while the rest is measured.
    std::function<void(std::size_t tensor, const ZResult& result)> onTensor;
};

// Measures every tensor of a model. Tensors are spread over the threads; a tensor whose
// sample is large is measured by all threads together. Runs on the calling thread (and
// its workers); `progress` is called from the workers, serialised, at most ~10 times a second.
JobResult measureModel(const GgufModel& model, const ModelAnatomy& anatomy, const MeasureOptions& options,
                       ModelMeasurement& out, const ProgressFn& progress = {},
                       const StopToken* stop = nullptr);

// Fills the groups of `m` from its per-tensor results: every tensor's, or only those that
// `include` (parallel to the tensors) marks.
void aggregateMeasurement(const GgufModel& model, const ModelAnatomy& anatomy, ModelMeasurement& m,
                          const std::vector<bool>& include = {});

// The Z-ranking: one row per model, highest θ mean first.
std::vector<const ModelMeasurement*> zRanking(const std::vector<ModelMeasurement>& models);
std::vector<const ModelMeasurement*> zRanking(std::vector<const ModelMeasurement*> models);

unsigned defaultThreadCount();

} // namespace organ
