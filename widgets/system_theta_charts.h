#pragma once

#include "anatomy_tree.h"
#include "zmeasure.h"

#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

class QCustomPlot;

namespace organ::widgets {

// Beside the heatmap: θ mean per layer for each anatomical system (lines), and θ mean per
// system over the whole model (bars), on the fixed 0°-90° axis. Updated as results arrive.
class SystemThetaCharts : public QWidget {
    Q_OBJECT
public:
    explicit SystemThetaCharts(std::shared_ptr<const ModelSnapshot> snapshot, QWidget* parent = nullptr);

    void setTensorResult(int tensor, const ZResult& result);
    void setTensorResults(const std::vector<ZResult>& results);

    QCustomPlot* layerPlot() const { return m_layers; }
    QCustomPlot* systemPlot() const { return m_systems; }
    // The values drawn: θ mean of `system` in `layer` (or over the model with no layer).
    std::optional<double> meanTheta(System system, std::optional<std::uint32_t> layer) const;

private:
    void scheduleRefresh();
    void refresh();

    std::shared_ptr<const ModelSnapshot> m_snapshot;
    std::vector<std::optional<double>> m_theta; // per tensor
    QCustomPlot* m_layers = nullptr;
    QCustomPlot* m_systems = nullptr;
    bool m_refreshPending = false;
};

// One colour per anatomical system, shared by every chart.
QColor systemColor(System system);

} // namespace organ::widgets
