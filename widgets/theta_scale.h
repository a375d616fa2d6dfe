#pragma once

#include <QColor>

class QCPColorGradient;

namespace organ::widgets {

// The one colour scale for θ everywhere (tree cells, heatmaps): a perceptual gradient
// (viridis) over the fixed range 0°-90°, so that colours compare across models.
inline constexpr double kThetaMin = 0.0;
inline constexpr double kThetaMax = 90.0;

QCPColorGradient& thetaGradient(); // GUI thread only
QColor thetaColor(double theta);
// Blue through `middle` to red, for signed quantities on a symmetric range (Δθ, weights).
QCPColorGradient divergingGradient(const QColor& middle);

// Black or white, whichever reads on `background`.
QColor textColorOn(const QColor& background);

} // namespace organ::widgets
