#pragma once

#include "vitals/quant_pareto.h"

#include <memory>
#include <qcustomplot.h>
#include <vector>

namespace organ::widgets {

// Bits per weight (x) against KL divergence (y, logarithmic): llama-quantize's mixes as labelled
// points, the budget mixes as a curve (predicted KL) with the measured ones at the references'
// sizes. A click on a point chooses it (pointChosen), when choosing is allowed.
class ParetoChart : public QCustomPlot {
    Q_OBJECT
public:
    ParetoChart(const QString& model, QWidget* parent = nullptr);
    void setReport(std::shared_ptr<const ParetoReport> report);
    void setChoosable(bool on) { m_choosable = on; }

    // The points a click can choose, with where they are drawn (bits per weight, KL).
    struct Shown {
        const ParetoPoint* point = nullptr;
        bool reference = false;
        double x = 0;
        double y = 0;
    };
    const std::vector<Shown>& shown() const { return m_shown; }
    // The point drawn within a few pixels of `pixel`, or -1.
    int pointAtPixel(const QPoint& pixel) const;
    QPoint pixelOf(int shown) const;

signals:
    void pointChosen(const organ::ParetoPoint& point);

private:
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

    QString m_model;
    std::shared_ptr<const ParetoReport> m_report;
    std::vector<Shown> m_shown;
    bool m_choosable = false;
};

} // namespace organ::widgets
