#pragma once

#include <QColor>
#include <QString>

class QCPColorGradient;
class QCPRange;

namespace organ::widgets {

// What a value heatmap's cells show: Δθ against a donor, the diff's relative error or cosine
// against another model (`organ diff`), or a matrix's spectral α (`organ spectral`).
enum class HeatmapMetric { DeltaTheta, RelativeError, Cosine, Alpha };

QString metricName(HeatmapMetric metric);   // "Δθ", "relative error", …
QString metricKey(HeatmapMetric metric);    // the line under the chart: how to read the colours
QString metricSuffix(HeatmapMetric metric); // of exported files: "delta-theta-heatmap"
QString fixedScaleText(HeatmapMetric metric);
QString fixedScaleTip(HeatmapMetric metric);
bool fixedScaleByDefault(HeatmapMetric metric);
// The colour range: the fixed one, or fitted to the values' `low` … `high` (low > high: none).
QCPRange metricRange(HeatmapMetric metric, bool fixed, double low, double high);
QString scaleLabel(HeatmapMetric metric, bool fixed, const QCPRange& range);
// `background`: the chart's, the colour of "no difference" (Δθ 0, relative error 0, cosine 1).
QCPColorGradient metricGradient(HeatmapMetric metric, const QColor& background);
// A cell's value in its tooltip, without a detail from the one who set it.
QString metricValueText(HeatmapMetric metric, double value);

} // namespace organ::widgets
