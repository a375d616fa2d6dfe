#pragma once

#include "anatomy/anatomy_tree.h"
#include "measure/zmeasure.h"
#include "open_models.h"

#include <QWidget>
#include <map>
#include <memory>
#include <optional>
#include <vector>

class QCustomPlot;
class QCPBars;
class QCPTextElement;
class QCPGraph;

namespace organ::widgets {

// Beside the heatmap: θ mean per layer for each anatomical system (lines), and θ mean per
// system over the whole model (bars), on the fixed 0°-90° axis. Updated as results arrive.
class SystemThetaCharts : public QWidget {
    Q_OBJECT
public:
    explicit SystemThetaCharts(std::shared_ptr<const ModelSnapshot> snapshot, QWidget* parent = nullptr);

    // The charts show `results` (the model's, stored in OpenModels; null: none) and follow it.
    void setResults(const model::TensorResults* results);

    // The plan's preview: per tensor the θ it will have (the donor's), for the tensors the
    // plan replaces; drawn beside today's values (dashed lines, lighter bars). Empty: none.
    void setPreview(std::map<int, std::optional<double>> thetaAfter);
    bool hasPreview() const { return !m_after.empty(); }

    QCustomPlot* layerPlot() const { return m_layers; }
    QCustomPlot* systemPlot() const { return m_systems; }
    // The values drawn: θ mean of `system` in `layer` (or over the model with no layer).
    // With `afterPlan`, the θ the plan's chimera will have there (replaced tensors with the
    // donor's θ).
    std::optional<double> meanTheta(System system, std::optional<std::uint32_t> layer,
                                    bool afterPlan = false) const;

private:
    void scheduleRefresh();
    void refresh();

    std::shared_ptr<const ModelSnapshot> m_snapshot;
    const model::TensorResults* m_results = nullptr;
    std::map<int, std::optional<double>> m_after;
    std::vector<QCPGraph*> m_afterGraphs; // per system, dashed
    std::vector<QCPBars*> m_bars;         // per system shown
    std::vector<QCPBars*> m_afterBars;
    QCPTextElement* m_layersTitle = nullptr;
    QCPTextElement* m_systemsTitle = nullptr;
    QCustomPlot* m_layers = nullptr;
    QCustomPlot* m_systems = nullptr;
    bool m_refreshPending = false;
};

// One colour per anatomical system, shared by every chart.
QColor systemColor(System system);

} // namespace organ::widgets
