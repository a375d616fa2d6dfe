#pragma once

#include "anatomy/anatomy_tree.h"
#include "measure/measure_report.h"
#include "measure/model_measure.h"
#include "measure/tensor_portrait.h"
#include "theta_heatmap.h"

#include <QWidget>
#include <memory>

class QAction;
class QComboBox;
class QSplitter;
class QVBoxLayout;
class QStackedWidget;
class QLabel;
class QMenu;
class QLineEdit;
class QTabWidget;
class QTableView;
class QTreeView;
class QToolButton;

namespace organ {
struct VitalsReport;
struct ModelDiff;
struct SpectralReport;
} // namespace organ

namespace organ::model {
class GraftDocument;
class AnatomyFilterProxy;
class AnatomyTreeModel;
class MetadataTableModel;
class DiffTableModel;
class TensorResults;
} // namespace organ::model

namespace organ::widgets {

class SystemThetaCharts;
class TensorInspector;
class ThetaHeatmap;
class LayerImportanceChart;
class MetadataPage;
class TokenizerPage;
class VitalsPage;
class QuantLabPage;

// One open model: a header with its vital facts, then tabs for its anatomy tree
// (filterable, sortable, groupable by system or by layer) and its metadata.
class ModelView : public QWidget {
    Q_OBJECT
public:
    // `results`: the model's measurement, stored once in OpenModels for every view of the model;
    // the tree, heatmap, side charts, inspector and header follow it.
    ModelView(std::shared_ptr<const ModelSnapshot> snapshot, const model::TensorResults* results,
              QWidget* parent = nullptr);

    const ModelSnapshot& snapshot() const { return *m_snapshot; }
    std::shared_ptr<const ModelSnapshot> snapshotPointer() const { return m_snapshot; }
    QTreeView* anatomyView() const { return m_tree; }
    QTableView* metadataView() const;
    model::MetadataTableModel* metadataModel() const;
    MetadataPage* metadataPage() const { return m_metadataPage; }
    // What the last metadata edit said: why it was refused, or empty.
    QLabel* metadataNote() const;
    // Opens the value of the metadata table's row (of its source model) in the multi-line
    // editor: a long string (a chat template) or an array as JSON.
    void editMetadataText(int row);
    TokenizerPage* tokenizerPage() const { return m_tokenizer; }
    model::AnatomyTreeModel* anatomyModel() const { return m_treeModel; }
    model::AnatomyFilterProxy* anatomyProxy() const { return m_proxy; }
    QLineEdit* filterEdit() const { return m_filter; }
    ThetaHeatmap* heatmap() const { return m_heatmap; }
    SystemThetaCharts* systemCharts() const { return m_systemCharts; }
    TensorInspector* inspector() const { return m_inspector; }
    VitalsPage* vitalsPage() const { return m_vitals; }
    QuantLabPage* quantLabPage() const { return m_quantLab; }
    // Vital signs taken: the Vital signs page, and layer importance beside the θ heatmap (a
    // chart) and on it (a row); `text`, the file name of the text they were taken on (empty: the
    // built-in text).
    void setVitalsReport(std::shared_ptr<const VitalsReport> report, const QString& text = {});
    LayerImportanceChart* importanceChart() const { return m_importance; }
    // Δθ against a donor: per tensor of this model, θ(donor) − θ(this), nullopt without a
    // measured counterpart. Shown in the "Δθ" tab, which is enabled only while there is a
    // comparison; clearComparison() disables it and says why (its tooltip).
    void setComparison(const QString& donor, const std::vector<std::optional<double>>& deltas);
    void clearComparison(const QString& reason);
    bool hasComparison() const;
    QString comparisonReason() const;
    ThetaHeatmap* comparison() const { return m_comparison; }

    // The Δθ page's metric (Δθ, relative error, cosine): relative error and cosine come from a
    // diff of this model's values against the donor's (`organ diff`), asked for by
    // diffRequested() when first chosen; the table beneath lists the diff per tensor, and a row
    // activated asks for both tensors side by side in the inspector (diffRowActivated).
    QComboBox* comparisonMetricBox() const { return m_comparisonMetric; }
    QTableView* diffTable() const { return m_diffTable; }
    model::DiffTableModel* diffModel() const { return m_diffModel; }
    QLabel* diffNote() const { return m_diffNote; }
    // The diff against `donor` (the donor's display name; this model is its first model).
    void setDiff(const QString& donor, std::shared_ptr<const ModelDiff> diff);
    // No diff (any more), and why; the metric goes back to Δθ.
    void clearDiff(const QString& note);
    const ModelDiff* diff() const { return m_diff.get(); }
    // This model's tensor in the inspector with `partner`'s tensor beside it (names of both shown).
    void inspectPair(int tensor, const QString& partner, int partnerTensor, const TensorInfo& partnerInfo,
                     const model::TensorResults* partnerResults);

    // The Heatmap page's metric: θ, or spectral α per weight matrix (`organ spectral`), asked for
    // by spectraRequested() when first chosen and shown on a heatmap of its own.
    QComboBox* heatmapMetricBox() const { return m_heatmapMetric; }
    ThetaHeatmap* alphaMap() const { return m_alphaMap; }
    QLabel* spectraNote() const { return m_spectraNote; }
    void setSpectra(std::shared_ptr<const SpectralReport> report);
    void setSpectraNote(const QString& note); // computing, cancelled, failed
    const SpectralReport* spectra() const { return m_spectra.get(); }

    // Surgery: the recipient's tree and heatmap take drops (checked and planned by
    // `document`) and offer layer operations; a donor's are drag sources.
    void setSurgery(model::GraftDocument* document, bool recipient);
    bool isRecipient() const { return m_isRecipient; }
    // The plan's preview on the heatmap, with its legend above it (empty: none).
    void setPlanPreview(const std::vector<ThetaHeatmap::PreviewCell>& cells, const QString& legend);
    QLabel* planPreviewLabel() const { return m_previewLabel; }

signals:
    // Its pane closed it; it is deleted later.
    void closing();
    // The current tensor changed (tree or heatmap): the window fetches its portrait.
    void tensorSelected(int tensor);
    // Tensors dropped on the tree or heatmap did not fit: why.
    void dropRefused(const QString& reason);
    // The recipient's "Purify…" (tree or heatmap context menu) on these tensors.
    void purifyRequested(std::vector<int> tensors);
    // The recipient's "Quantize this model…" (tree context menu).
    void quantizeRequested();
    // A donor's "Merge into the recipient…" (tree or heatmap context menu) on these tensors
    // (none: the whole model).
    void mergeRequested(std::vector<int> tensors);
    void diffRequested();
    void diffRowActivated(int tensor);
    void spectraRequested();

public:
    enum class Page { Anatomy, Heatmap, Delta, Inspector, Metadata, Tokenizer, Vitals, Quantization };
    QTabWidget* tabs() const { return m_tabs; }
    void showPage(Page page); // nothing when the page is disabled (Δθ without a comparison)
    // Shows the anatomy tab and puts the keyboard focus in its filter box.
    void focusFilter();
    // Selects a tensor's row in the tree (expanding and scrolling to it); nothing when filtered out.
    void selectTensor(int tensor);
    // Shows a tensor in the inspector (and outlines its heatmap cell), asking for its portrait.
    void inspectTensor(int tensor);
    QString headerText() const;

    const model::TensorResults* results() const { return m_results; }
    // The whole measurement, once complete (null before).
    const ModelMeasurement* measurement() const { return m_results->measurement(); }
    // The tensors the tree shows (filter and system toggles applied) with their results so
    // far (unmeasured ones have no θ), groups aggregated over them: what the tree exports.
    MeasuredModel shownTensorsReport() const;
    // Asks for a file and writes shownTensorsReport() as JSON, CSV or Markdown.
    void exportShownTensorsDialog();

private:
    QWidget* buildAnatomyTab();
    QWidget* buildHeatmapTab();
    QWidget* buildComparisonTab();
    QWidget* buildHeatmapMetricBar(QWidget* parent);
    // The metric's bar into the Δθ page's layout, the table under the heatmap in `splitter`.
    void buildDiffTable(QVBoxLayout* tabLayout, QSplitter* splitter);
    void showComparisonMetric();
    void showHeatmapMetric();
    void setGrouping(TreeGrouping grouping);
    void showCurrentTensor(const QModelIndex& current);
    std::vector<std::uint32_t> layersAt(const QModelIndex& index) const;
    void addLayerActions(QMenu& menu, const QModelIndex& index);
    // The tensors under the pointer's row and the selected rows (a group: every tensor in it).
    std::vector<int> tensorsAt(const QModelIndex& index) const;
    void refuseIfPlannedElsewhere(QMenu& menu, const QList<QAction*>& actions) const;
    void addPurifyAction(QMenu& menu, std::vector<int> tensors);
    void addMergeAction(QMenu& menu, std::vector<int> tensors);
    std::vector<int> heatmapPick(int tensor) const;

    std::shared_ptr<const ModelSnapshot> m_snapshot;
    const model::TensorResults* m_results;
    QLabel* m_header = nullptr;
    QTabWidget* m_tabs = nullptr;
    QWidget* m_anatomyTab = nullptr;
    QWidget* m_heatmapTab = nullptr;
    QTreeView* m_tree = nullptr;
    MetadataPage* m_metadataPage = nullptr;
    TokenizerPage* m_tokenizer = nullptr;
    QLineEdit* m_filter = nullptr;
    ThetaHeatmap* m_heatmap = nullptr;
    SystemThetaCharts* m_systemCharts = nullptr;
    LayerImportanceChart* m_importance = nullptr;
    TensorInspector* m_inspector = nullptr;
    VitalsPage* m_vitals = nullptr;
    QuantLabPage* m_quantLab = nullptr;
    ThetaHeatmap* m_comparison = nullptr;
    QLabel* m_previewLabel = nullptr;
    model::GraftDocument* m_document = nullptr;
    bool m_isRecipient = false;
    QWidget* m_comparisonTab = nullptr;
    QLabel* m_comparisonLabel = nullptr;
    QComboBox* m_comparisonMetric = nullptr;
    QString m_donorName;                         // of the comparison
    std::vector<std::optional<double>> m_deltas; // Δθ per tensor, while there is a comparison
    std::shared_ptr<const ModelDiff> m_diff;
    std::vector<int> m_diffRowOf; // per tensor: its row in m_diff->tensors, -1 none
    QTableView* m_diffTable = nullptr;
    QSplitter* m_diffSplitter = nullptr;
    model::DiffTableModel* m_diffModel = nullptr;
    QLabel* m_diffNote = nullptr;
    QComboBox* m_heatmapMetric = nullptr;
    QStackedWidget* m_heatmapStack = nullptr;
    ThetaHeatmap* m_alphaMap = nullptr;
    QLabel* m_spectraNote = nullptr;
    std::shared_ptr<const SpectralReport> m_spectra;
    model::AnatomyTreeModel* m_treeModel = nullptr;
    model::AnatomyFilterProxy* m_proxy = nullptr;
};

} // namespace organ::widgets
