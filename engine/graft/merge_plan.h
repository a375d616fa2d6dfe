#pragma once

#include "graft/graft_check.h"
#include "graft/graft_plan.h"
#include "merge/merge_config.h"

#include <optional>
#include <string>

namespace organ {

// The graft plan of a merge configuration: the base (else the first model) as the recipient, the
// other models as donors (ids from their file names), then a merge operation (passthrough: a
// stack_layers of the slices), and a quantize operation for out_type. `output` becomes the plan's.
GraftPlan mergePlanOf(const MergeConfig& config, const std::string& output);

// What only the open models tell: a slice's layer_range that is not every block of the base.
std::optional<std::string> mergeConfigProblem(const MergeConfig& config, const GraftModels& models);

} // namespace organ
