#pragma once

#include "gguf/gguf_model.h"
#include "graft/graft_plan.h"
#include "purify/purification.h"
#include "support/job.h"

#include <optional>
#include <string>
#include <vector>

namespace organ {

// What purifying a tensor did: its θ before and after (Z-measure v1, default parameters), the
// relative change ‖y − x‖/‖x‖, the share of coefficients kept (fft) and the type it was stored in.
struct PurifiedTensor {
    std::string name;
    TensorType from = TensorType::F32;
    TensorType to = TensorType::F32;
    std::optional<double> thetaBefore;
    std::optional<double> thetaAfter;
    double relativeChange = 0;
    double keptFraction = 1;
};

struct PurifyOutcome {
    JobResult written;
    std::vector<PurifiedTensor> tensors;
    std::vector<std::string> findings; // e.g. a type without a quantizer stored as F16
};

// Purifies the tensors of `model` that `select` picks (all of them when it is empty) and writes
// the model to `output` with the rest untouched. A tensor is stored in its own type when the
// engine can quantize to it, else in F16 (a finding says so). The metadata records
// organ.purify.{version, method, keep | threshold and attenuation, tensors}.
PurifyOutcome purifyModel(const GgufModel& model, const TensorSelector& select, const PurifyParams& params,
                          const std::string& output, const ProgressFn& progress = {},
                          const StopToken* stop = nullptr);

} // namespace organ
