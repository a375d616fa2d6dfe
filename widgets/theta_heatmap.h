#pragma once

#include "anatomy/anatomy_tree.h"
#include "heatmap_metric.h"
#include "measure/zmeasure.h"
#include "open_models.h"
#include "tensor_drag.h"

#include <QWidget>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <vector>

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPRange;
class QCheckBox;
class QCPItemRect;
class QCPTextElement;
class QMimeData;
class QMenu;
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
    // Theta: θ on 0°-90°. Delta: one value per tensor of a metric (Δθ, donor − recipient, on a
    // diverging ±45° scale unless setMetric() says otherwise).
    enum class Mode { Theta, Delta };

    explicit ThetaHeatmap(std::shared_ptr<const ModelSnapshot> snapshot, QWidget* parent = nullptr,
                          Mode mode = Mode::Theta);

    // Delta mode: what the values are (and their colours, scale and key); clears them.
    void setMetric(HeatmapMetric metric);
    HeatmapMetric metric() const { return m_metric; }
    // Delta mode: a tensor's value, or nullopt when it has none; `detail` (when given) is its
    // tooltip's text instead of the value alone.
    void setValue(int tensor, std::optional<double> value, const QString& detail = {});
    std::optional<double> valueAt(int column, int row) const;
    QString tooltipText(int tensor) const;
    // Delta mode: what is compared ("Δθ donor − recipient"), the title of exported charts.
    void setComparisonTitle(const QString& title) { m_comparisonTitle = title; }

    // Theta mode: the cells show `results` (the model's, stored in OpenModels; null: none) and
    // follow it, a replot at most every 50 ms while results arrive.
    void setResults(const model::TensorResults* results);
    void highlightTensor(int tensor); // -1: none

    int columnCount() const { return m_columns; }
    // Column 0 is "global" (tensors outside layers) when the model has such tensors.
    bool hasGlobalColumn() const { return m_hasGlobal; }
    int columnOfLayer(std::uint32_t layer) const;
    std::optional<std::uint32_t> layerOfColumn(int column) const;
    // The colour scale: fixed (checked) or fitted to the values shown.
    QCheckBox* fixedScaleBox() const { return m_fixedScale; }
    QCPRange colorRange() const;
    int rowCount() const { return static_cast<int>(m_roles.size()); }
    const std::vector<std::string>& roles() const { return m_roles; }
    int tensorAt(int column, int row) const; // -1 when absent
    std::optional<double> thetaAt(int column, int row) const;
    int tensorAtPixel(const QPoint& pixel) const;
    QPoint pixelOfTensor(int tensor) const;
    QCustomPlot* plot() const { return m_plot; }

    // Drag and drop. A donor's heatmap drags a cell (its tensor, or the Ctrl+click selection
    // it belongs to), a row (drag from the role's
    // label: the role across layers) or a column (from the layer's label: the layer); a
    // recipient's heatmap takes drops on cells (that tensor), on an empty cell or a layer's
    // label (that layer) or elsewhere (the whole model), checked by the handler.
    void setDragSource(bool on) { m_dragSource = on; }
    void setDropHandler(model::TensorDropHandler* handler);
    std::optional<model::TensorDrag> dragForCell(int column, int row) const;
    // A click selects a cell, Ctrl+click adds cells to the selection (or takes them out); the
    // selection drags together.
    void toggleSelected(int tensor);
    // What a drag carries, as the pointer shows it: the tensor's name, or "3 tensors".
    QString dragText(const model::TensorDrag& drag) const;
    const std::set<int>& selectedTensors() const { return m_selected; }
    std::optional<model::TensorDrag> dragForRow(int row) const;
    std::optional<model::TensorDrag> dragForColumn(int column) const;
    std::optional<model::TensorDrag> dragAtPixel(const QPoint& pixel) const;
    DropTarget dropTargetAtPixel(const QPoint& pixel) const;
    // `merge`: Shift is held, the drop merges instead of replacing.
    bool canDropAt(const QMimeData* data, const QPoint& pixel, QString* message, bool merge = false);
    bool dropAt(const QMimeData* data, const QPoint& pixel, bool merge = false);

    // The plan's preview: cells the plan replaces, outlined in their donor's colour and
    // coloured with the θ they will have (the donor's measured θ, when known).
    struct PreviewCell {
        int tensor = -1;
        int donor = 0;
        QString donorName;
        QString source; // the donor's tensor
        std::optional<double> theta;
        bool purified = false; // the plan purifies it: `theta` is what purification is expected to give
        bool merged = false;   // the plan merges it: `theta` is the merged tensor's, as it will be written
    };
    void setPreview(const std::vector<PreviewCell>& cells);
    const std::vector<PreviewCell>& preview() const { return m_preview; }
    // The θ a cell shows: the preview's when the plan replaces it, else the model's.
    std::optional<double> shownThetaAt(int column, int row) const;

    // Vital signs' layer importance as a row beneath the cells (θ mode): each layer's angular
    // distance between its input and output, darker where the layer changes the hidden state
    // more; hovering shows it with the block influence.
    void setLayerImportance(const std::vector<double>& angular, const std::vector<double>& influence);
    // The angular distance the row shows in a column (none for "global" or before vitals).
    std::optional<double> importanceAt(int column) const;
    // Where the row is on the value axis (a row's gap below the last role); nullopt without it.
    std::optional<double> importanceRowPosition() const;

    // Actions of the cell under the pointer (-1: none) in the context menu, above "Save as…".
    void setContextActions(std::function<void(QMenu& menu, int tensor)> actions) {
        m_contextActions = std::move(actions);
    }

signals:
    void tensorClicked(int tensor);
    void tensorActivated(int tensor); // double click
    // Tensors were dropped where they do not fit: why (for the status bar).
    void dropRefused(const QString& reason);

private:
    // The importance row's place: a row's gap below the last role.
    static double importanceRowBelow(int rows) { return rows + 0.5; }
    void buildGrid();
    void buildPlot();
    void refreshCell(int tensor);
    void refreshAllCells();
    const std::optional<ZResult>& result(int tensor) const;
    void updateRange();
    void scheduleReplot();
    void drawSelection();
    void showTooltip(QMouseEvent* event);
    std::pair<int, int> cellOf(int tensor) const;
    std::pair<int, int> cellAtPixel(const QPoint& pixel) const;
    bool eventFilter(QObject* watched, QEvent* event) override;
    void showDropMark(const QPoint& pixel, bool fits);
    std::optional<model::TensorDrag> dragOf(std::vector<int> tensors, model::TensorDrag::Pick pick) const;

    std::shared_ptr<const ModelSnapshot> m_snapshot;
    Mode m_mode = Mode::Theta;
    HeatmapMetric m_metric = HeatmapMetric::DeltaTheta;
    std::vector<std::optional<double>> m_values; // per tensor, Delta mode
    std::vector<QString> m_details;              // per tensor, Delta mode: the tooltip's text
    QString m_comparisonTitle;
    std::vector<std::string> m_roles; // rows, in anatomical order
    bool m_hasGlobal = true;
    int m_columns = 0;                         // "global" (when any) + one per layer
    std::vector<int> m_cells;                  // column * rows + row → tensor, -1 absent
    std::vector<std::pair<int, int>> m_cellOf; // tensor → (column, row)
    const model::TensorResults* m_results = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCPColorMap* m_presence = nullptr; // absent / not measured / constant
    QCPColorMap* m_theta = nullptr;
    QCPColorScale* m_scale = nullptr;
    QCheckBox* m_fixedScale = nullptr;
    QCPItemRect* m_highlight = nullptr;
    bool m_replotPending = false;
    bool m_dragSource = false;
    model::TensorDropHandler* m_dropHandler = nullptr;
    QPoint m_pressAt{-1, -1};
    int m_narrowOnRelease = -1; // a selected cell pressed: the selection becomes it, unless dragged
    QCPItemRect* m_dropMark = nullptr;
    std::vector<PreviewCell> m_preview;
    std::vector<int> m_previewOf; // per tensor: index into m_preview, -1 none
    std::vector<QCPItemRect*> m_previewMarks;
    std::set<int> m_selected;
    std::vector<QCPItemRect*> m_selectionMarks;
    QCPTextElement* m_key = nullptr;
    QCPColorMap* m_importanceMap = nullptr;
    std::vector<double> m_angular; // per layer
    std::vector<double> m_influence;
    std::function<void(QMenu&, int)> m_contextActions;
};

} // namespace organ::widgets
