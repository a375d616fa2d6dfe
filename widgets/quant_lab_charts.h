#pragma once

#include "measure/quant_error.h"

#include <memory>
#include <optional>
#include <qcustomplot.h>
#include <vector>

namespace organ::widgets {

// What the quantization lab's error charts show of a TypeError: lower is better for each.
enum class QuantMetric { RelativeRms, WeightedRms, CosineLoss, Theta };
// The value (1 − cosine for CosineLoss), none when the report has none (θ not measured, no matrix).
std::optional<double> quantMetricValue(const TypeError& error, QuantMetric metric);
QString quantMetricName(QuantMetric metric);

// The error of one type per layer (x) and role (y), tensors outside the layers in the first
// column ("global"), on a colour scale fitted to the values shown. Hover names the tensor.
class QuantErrorHeatmap : public QCustomPlot {
    Q_OBJECT
public:
    QuantErrorHeatmap(const QString& model, QWidget* parent = nullptr);
    void setReport(std::shared_ptr<const QuantErrorReport> report);
    void showType(TensorType type, QuantMetric metric);
    TensorType type() const { return m_type; }

    int columnCount() const { return m_columns; }
    const std::vector<std::string>& roles() const { return m_roles; }
    // The tensor (index into the report) of a cell, -1 when absent, and the value it shows.
    int tensorAt(int column, int row) const;
    std::optional<double> valueAt(int column, int row) const;
    // The cell of a tensor by name: (column, row), or (-1, -1).
    std::pair<int, int> cellOf(const std::string& name) const;

private:
    void mouseMoveEvent(QMouseEvent* event) override;

    QString m_model;
    std::shared_ptr<const QuantErrorReport> m_report;
    TensorType m_type = TensorType::Q4_K;
    QuantMetric m_metric = QuantMetric::RelativeRms;
    std::vector<std::string> m_roles;
    int m_columns = 0;
    bool m_hasGlobal = false;
    std::vector<int> m_cells; // column * rows + row → tensor, -1 absent
    std::vector<std::optional<double>> m_values;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QCPTextElement* m_title = nullptr;
};

// Bits per weight against the error per system (embed, skeleton, organs…): one line a system
// through the candidate types, each point the elements-weighted mean of the metric over the
// system's tensors in that type.
class QuantSystemChart : public QCustomPlot {
    Q_OBJECT
public:
    QuantSystemChart(const QString& model, QWidget* parent = nullptr);
    void setReport(std::shared_ptr<const QuantErrorReport> report, QuantMetric metric);
    struct Point {
        double bitsPerWeight = 0;
        double value = 0;
        TensorType type = TensorType::Q4_K;
    };
    // Per system shown (in the legend's order): its name and points by bits per weight.
    const std::vector<std::pair<QString, std::vector<Point>>>& series() const { return m_series; }

private:
    QString m_model;
    std::vector<std::pair<QString, std::vector<Point>>> m_series;
};

} // namespace organ::widgets
