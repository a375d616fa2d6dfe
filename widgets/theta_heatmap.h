#pragma once

#include "anatomy_tree.h"
#include "zmeasure.h"

#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPItemRect;
class QMouseEvent;

namespace organ::widgets {

// θ per layer (x) and role (y): one cell per tensor, on the fixed 0°-90° scale, no
// interpolation. Tensors outside layers (embeddings, output, final norm) are the first
// column, "global". Absent cells are white, cells not measured yet grey, constant tensors
// (no θ) salmon, never a colour of the θ scale. Hover shows the tensor and its indicators;
// a click selects it.
class ThetaHeatmap : public QWidget {
    Q_OBJECT
public:
    // Theta: θ on 0°-90°. Delta: Δθ (donor − recipient) on a diverging ±45° scale.
    enum class Mode { Theta, Delta };
    static constexpr double kDeltaRange = 45.0;

    explicit ThetaHeatmap(std::shared_ptr<const ModelSnapshot> snapshot, QWidget* parent = nullptr,
                          Mode mode = Mode::Theta);

    // Delta mode: a tensor's Δθ, or nullopt when it has no measured counterpart.
    void setDelta(int tensor, std::optional<double> delta);
    std::optional<double> deltaAt(int column, int row) const;

    void setTensorResult(int tensor, const ZResult& result);
    void highlightTensor(int tensor); // -1: none

    int columnCount() const { return m_columns; }
    int rowCount() const { return static_cast<int>(m_roles.size()); }
    const std::vector<std::string>& roles() const { return m_roles; }
    int tensorAt(int column, int row) const; // -1 when absent
    std::optional<double> thetaAt(int column, int row) const;
    int tensorAtPixel(const QPoint& pixel) const;
    QPoint pixelOfTensor(int tensor) const;
    QCustomPlot* plot() const { return m_plot; }

signals:
    void tensorClicked(int tensor);

private:
    void buildGrid();
    void buildPlot();
    void refreshCell(int tensor);
    void scheduleReplot();
    void showTooltip(QMouseEvent* event);
    std::pair<int, int> cellOf(int tensor) const;

    std::shared_ptr<const ModelSnapshot> m_snapshot;
    Mode m_mode = Mode::Theta;
    std::vector<std::optional<double>> m_delta; // per tensor, Delta mode
    std::vector<std::string> m_roles;           // rows, in anatomical order
    int m_columns = 0;                          // "global" + one per layer
    std::vector<int> m_cells;                   // column * rows + row → tensor, -1 absent
    std::vector<std::optional<ZResult>> m_results;
    QCustomPlot* m_plot = nullptr;
    QCPColorMap* m_presence = nullptr; // absent / not measured / constant
    QCPColorMap* m_theta = nullptr;
    QCPColorScale* m_scale = nullptr;
    QCPItemRect* m_highlight = nullptr;
    bool m_replotPending = false;
};

} // namespace organ::widgets
