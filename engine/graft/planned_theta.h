#pragma once

#include "graft/graft_check.h"
#include "graft/graft_plan.h"
#include "support/job.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace organ {

// θ of a chimera tensor as the plan makes it — merged, purified and stored in its planned type —
// with nothing written.
struct PlannedTheta {
    std::string name;            // in the chimera
    std::optional<double> theta; // none: constant, or no finite value
    std::string error;           // why its bytes could not be made (then no θ)
};

// Makes each named tensor of the chimera from the plan's sources, one tensor in memory at a time,
// measures it as organ measure does (the default sample) and drops it. A name the chimera lacks
// gets an error. `each` is called after every tensor with how many are done; a requested stop
// ends early, with the tensors measured so far.
std::vector<PlannedTheta>
measurePlannedTensors(const GraftPlan& plan, const GraftModels& models, const CompatibilityReport& report,
                      const std::vector<std::string>& names,
                      const std::function<void(const PlannedTheta&, std::size_t done)>& each = {},
                      const StopToken* stop = nullptr);

} // namespace organ
