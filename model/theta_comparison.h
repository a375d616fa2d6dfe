#pragma once

#include "anatomy/anatomy_tree.h"
#include "measure/model_measure.h"

#include <QString>
#include <optional>
#include <vector>

namespace organ::model {

// Δθ of a donor against a recipient, per recipient tensor: θ(donor) − θ(recipient) for the
// tensor of the same name, nullopt where either has no θ. Only models of one architecture
// whose shared tensor names have equal shapes are comparable; otherwise `reason` says why.
struct ThetaComparison {
    bool comparable = false;
    QString reason;
    std::vector<std::optional<double>> deltas; // per recipient tensor
};

// Either measurement may be null (not measured yet): the comparison then says so.
ThetaComparison compareTheta(const ModelSnapshot& recipient, const ModelMeasurement* recipientTheta,
                             const ModelSnapshot& donor, const ModelMeasurement* donorTheta);

} // namespace organ::model
