#include "heatmap_metric.h"

#include "theta_scale.h"

#include <QCoreApplication>
#include <algorithm>
#include <iterator>
#include <qcustomplot.h>

namespace organ::widgets {
namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("organ::widgets::HeatmapMetric", text);
}

constexpr double kDeltaRange = 45.0;
// α from 1 to 9: the spec's over-trained (< 2), well-trained (2–6) and under-trained (> 6)
// bands, and α > 8 (unreliable) at the top.
constexpr double kAlphaLow = 1.0;
constexpr double kAlphaHigh = 9.0;

double alphaPosition(double alpha) {
    return (alpha - kAlphaLow) / (kAlphaHigh - kAlphaLow);
}

// Each metric's texts, in the order of HeatmapMetric (TR marks the ones tr() translates).
struct MetricTexts {
    const char* name;
    const char* key; // the line under the chart
    const char* suffix;
    const char* fixedScale;
    const char* value; // a cell's value in its tooltip: "%1" and its format
    char valueFormat;
    int valuePrecision;
};

#define TR(text) QT_TRANSLATE_NOOP("organ::widgets::HeatmapMetric", text)
constexpr MetricTexts kMetricTexts[] = {
    {TR("Δθ"),
     TR("Δθ = the donor's θ − the recipient's · background colour: Δθ = 0, unchanged (or no such "
        "tensor) · dark grey: no measured counterpart in the donor"),
     "delta-theta-heatmap", TR("Fixed scale ±45°"), TR("Δθ %1° (donor − recipient)"), 'f', 2},
    {TR("relative error"),
     TR("relative error ‖donor − recipient‖ / ‖recipient‖ · background colour: identical values · "
        "dark grey: not in both models with one shape"),
     "relative-error-heatmap", TR("Fixed scale 0–1"), TR("relative error %1"), 'g', 4},
    {TR("cosine"),
     TR("cosine of the donor's and the recipient's values · background colour: 1, the same "
        "direction · dark grey: not in both models with one shape"),
     "cosine-heatmap", TR("Fixed scale 0–1"), TR("cosine %1"), 'f', 6},
    {TR("spectral α"),
     TR("α of the eigenvalue spectrum's power-law tail (spectral v1) · red: over-trained (α < 2) · "
        "green: well-trained · blue: under-trained (α > 6) · dark grey: no α (1-D, or under 16 "
        "rows or columns)"),
     "alpha-heatmap", TR("Fixed scale α 1–9"), TR("α %1"), 'f', 2},
};
#undef TR
static_assert(std::size(kMetricTexts) == std::size_t(HeatmapMetric::Alpha) + 1);

const MetricTexts& texts(HeatmapMetric metric) {
    return kMetricTexts[static_cast<std::size_t>(metric)];
}

} // namespace

QString metricName(HeatmapMetric metric) {
    return tr(texts(metric).name);
}

QString metricKey(HeatmapMetric metric) {
    return tr(texts(metric).key);
}

QString metricSuffix(HeatmapMetric metric) {
    return QString::fromLatin1(texts(metric).suffix);
}

QString fixedScaleText(HeatmapMetric metric) {
    return tr(texts(metric).fixedScale);
}

QString fixedScaleTip(HeatmapMetric metric) {
    return metric == HeatmapMetric::DeltaTheta
               ? tr("The same colours for every comparison; uncheck to fit them to the largest |Δθ|")
               : tr("The same colours for every model; uncheck to fit them to the values shown");
}

bool fixedScaleByDefault(HeatmapMetric metric) {
    return metric == HeatmapMetric::Alpha;
}

QCPRange metricRange(HeatmapMetric metric, bool fixed, double low, double high) {
    const bool any = low <= high;
    switch (metric) {
    case HeatmapMetric::DeltaTheta: {
        // All equal (a model against itself): a small symmetric range, so that zero is mid-scale.
        const double largest = any ? std::max(std::abs(low), std::abs(high)) : 0.0;
        const double limit = fixed ? kDeltaRange : (largest > 0 ? largest : 1.0);
        return {-limit, limit};
    }
    case HeatmapMetric::RelativeError:
        return fixed || !any || high <= 0 ? QCPRange(0, 1) : QCPRange(0, high);
    case HeatmapMetric::Cosine:
        return fixed || !any || low >= 1 ? QCPRange(0, 1) : QCPRange(low, 1);
    case HeatmapMetric::Alpha:
        return fixed || !any || high <= low ? QCPRange(kAlphaLow, kAlphaHigh) : QCPRange(low, high);
    }
    return {};
}

QString scaleLabel(HeatmapMetric metric, bool fixed, const QCPRange& range) {
    if (metric == HeatmapMetric::DeltaTheta) {
        return fixed ? tr("Δθ (°)") : tr("Δθ (°), fitted ±%1").arg(range.upper, 0, 'f', 2);
    }
    return fixed ? metricName(metric) : tr("%1, fitted").arg(metricName(metric));
}

QCPColorGradient metricGradient(HeatmapMetric metric, const QColor& background) {
    QCPColorGradient g;
    g.clearColorStops();
    switch (metric) {
    case HeatmapMetric::DeltaTheta:
        return divergingGradient(background);
    case HeatmapMetric::RelativeError:
        g.setColorStopAt(0.0, background);
        g.setColorStopAt(0.4, QColor(0xf4, 0xa5, 0x82));
        g.setColorStopAt(1.0, QColor(0xb2, 0x18, 0x2b));
        break;
    case HeatmapMetric::Cosine:
        g.setColorStopAt(0.0, QColor(0x21, 0x66, 0xac));
        g.setColorStopAt(0.6, QColor(0x92, 0xc5, 0xde));
        g.setColorStopAt(1.0, background);
        break;
    case HeatmapMetric::Alpha:
        g.setColorStopAt(0.0, QColor(0xb2, 0x18, 0x2b));
        g.setColorStopAt(alphaPosition(2.0), QColor(0xf4, 0xa5, 0x82));
        g.setColorStopAt(alphaPosition(3.0), QColor(0x5a, 0xae, 0x61));
        g.setColorStopAt(alphaPosition(5.0), QColor(0x1b, 0x78, 0x37));
        g.setColorStopAt(alphaPosition(6.0), QColor(0x92, 0xc5, 0xde));
        g.setColorStopAt(1.0, QColor(0x2d, 0x00, 0x4b));
        break;
    }
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    return g;
}

QString metricValueText(HeatmapMetric metric, double value) {
    const MetricTexts& t = texts(metric);
    return tr(t.value).arg(value, 0, t.valueFormat, t.valuePrecision);
}

} // namespace organ::widgets
