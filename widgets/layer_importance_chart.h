#pragma once

#include "vitals/vital_signs.h"

#include <qcustomplot.h>

namespace organ::widgets {

// Vital signs' layer importance: per layer the angular distance between the hidden state
// entering and leaving it (bars) and the block influence 1 − cos (line). Exports like every
// chart; `model` names the files and titles.
class LayerImportanceChart : public QCustomPlot {
    Q_OBJECT
public:
    LayerImportanceChart(const QString& model, QWidget* parent = nullptr);
    void setImportance(const LayerImportance& importance);

private:
    QString m_model;
    QCPBars* m_angular = nullptr;
    QCPGraph* m_influence = nullptr;
};

} // namespace organ::widgets
