#include "model_view.h"
#include "quant_lab_page.h"
#include "vitals_page.h"
#include "wrapped_label.h"

#include "anatomy/model_summary.h"
#include "anatomy_filter_proxy.h"
#include "anatomy_tree_model.h"
#include "anatomy_tree_view.h"
#include "display_names.h"
#include "graft_document.h"
#include "layer_importance_chart.h"
#include "metadata_editing.h"
#include "metadata_table_model.h"
#include "model_roles.h"
#include "report_export.h"
#include "support/text_format.h"
#include "system_theta_charts.h"
#include "tensor_inspector.h"
#include "theta_delegate.h"
#include "theta_heatmap.h"
#include "tokenizer_page.h"
#include "vertical_scroll.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QRadioButton>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableView>
#include <QTreeView>
#include <QVBoxLayout>

namespace organ::widgets {
namespace {

// Strings from the file, shown safely (control characters and invalid UTF-8 escaped).
QString text(const std::string& s) {
    return model::displayText(s);
}

} // namespace

ModelView::ModelView(std::shared_ptr<const ModelSnapshot> snapshot, const model::TensorResults* results,
                     QWidget* parent)
    : QWidget(parent), m_snapshot(std::move(snapshot)), m_results(results) {
    auto* layout = new QVBoxLayout(this);
    m_header = wrappedLabel(this, QStringLiteral("modelHeader"), Qt::RichText, true);
    m_header->setText(headerText());
    layout->addWidget(m_header);
    m_tabs = new QTabWidget(this);
    m_anatomyTab = buildAnatomyTab();
    m_heatmapTab = buildHeatmapTab();
    m_tabs->addTab(m_anatomyTab, tr("&Anatomy"));
    m_tabs->addTab(m_heatmapTab, tr("&Heatmap"));
    m_tabs->addTab(buildComparisonTab(), tr("Δθ"));
    m_inspector = new TensorInspector(model::modelDisplayName(*m_snapshot->model), this);
    m_tabs->addTab(m_inspector, tr("&Inspector"));
    m_metadataPage = new MetadataPage(m_snapshot->model, this);
    m_tabs->addTab(m_metadataPage, tr("&Metadata"));
    m_tokenizer = new TokenizerPage(m_snapshot->model, this);
    m_tabs->addTab(m_tokenizer, tr("&Tokenizer"));
    m_vitals = new VitalsPage(model::modelDisplayName(*m_snapshot->model), this);
    m_tabs->addTab(m_vitals, tr("Vital &signs")); // Alt+S: Alt+V opens the View menu
    m_quantLab = new QuantLabPage(model::modelDisplayName(*m_snapshot->model),
                                  QString::fromStdString(m_snapshot->model->path()), this);
    m_tabs->addTab(m_quantLab, tr("&Quantization"));
    // A cell clicked opens its tensor in the inspector (even one the tree's filter hides) and
    // selects its row; a double click (on a cell or a tensor's row) shows the inspector.
    for (ThetaHeatmap* map : {m_heatmap, m_alphaMap, m_comparison}) {
        connect(map, &ThetaHeatmap::tensorClicked, this, [this](int tensor) {
            selectTensor(tensor);
            inspectTensor(tensor);
        });
        connect(map, &ThetaHeatmap::tensorActivated, this, [this](int tensor) {
            inspectTensor(tensor);
            showPage(Page::Inspector);
        });
    }
    connect(m_tree, &QTreeView::doubleClicked, this, [this](const QModelIndex& index) {
        if (index.data(model::TensorIndexRole).toInt() >= 0) {
            showPage(Page::Inspector);
        }
    });
    connect(m_heatmap, &ThetaHeatmap::dropRefused, this, &ModelView::dropRefused);
    connect(static_cast<AnatomyTreeView*>(m_tree), &AnatomyTreeView::dropRefused, this,
            &ModelView::dropRefused);
    connect(m_tree->selectionModel(), &QItemSelectionModel::currentChanged, this,
            [this](const QModelIndex& current) { showCurrentTensor(current); });
    layout->addWidget(m_tabs, 1);
    m_treeModel->setResults(m_results);
    m_heatmap->setResults(m_results);
    m_systemCharts->setResults(m_results);
    m_inspector->setResults(m_results);
    connect(m_results, &model::TensorResults::reset, this, [this] { m_header->setText(headerText()); });
}

QString ModelView::headerText() const {
    const ModelSummary s = summarize(*m_snapshot->model, m_snapshot->anatomy);
    const QString arch = s.architecture.empty() ? tr("no architecture") : text(s.architecture);
    QString files = text(fileLabel(s.path));
    if (s.shards > 1) {
        files += tr(" (%1 files)").arg(s.shards);
    }
    if (m_snapshot->model->hasTensorFiles()) {
        files += tr(" (organ directory, %1 tensor files)").arg(m_snapshot->model->tensors().size());
    }
    QString measured = tr("θ not measured yet");
    if (const ModelMeasurement* m = measurement(); m != nullptr && m->model.measured != 0) {
        measured = tr("θ&nbsp;mean&nbsp;%1° &nbsp;·&nbsp; signal&nbsp;%2")
                       .arg(m->model.thetaMean, 0, 'f', 2)
                       .arg(m->model.signalMean, 0, 'f', 3);
    }
    // A LoRA adapter (general.type "adapter") says so: it is not a model that runs alone.
    QString kind = arch.toHtmlEscaped();
    const MetaValue* type = m_snapshot->model->find("general.type");
    if (type != nullptr && type->asString() == std::optional<std::string_view>("adapter")) {
        const MetaValue* adapter = m_snapshot->model->find("adapter.type");
        const auto adapterType = adapter != nullptr ? adapter->asString() : std::nullopt;
        kind = tr("%1 adapter for %2")
                   .arg(adapterType ? text(std::string(*adapterType)).toUpper().toHtmlEscaped() : tr("an"),
                        arch.toHtmlEscaped());
    }
    // Lines break between the items only: "995.16 KiB" split over two lines read as two items.
    auto whole = [](const QString& item) { return QString(item).replace(u' ', QStringLiteral("&nbsp;")); };
    const QString pattern =
        tr("<b>%1</b> &nbsp; %2 &nbsp;·&nbsp; %3&nbsp;parameters &nbsp;·&nbsp; %4 &nbsp;·&nbsp; %5") +
        QStringLiteral(" &nbsp;·&nbsp; ") + measured +
        tr("<br>%6 &nbsp;·&nbsp; %7&nbsp;bits/weight &nbsp;·&nbsp; %8 &nbsp;·&nbsp; GGUF&nbsp;v%9");
    return pattern
        .arg(text(s.name).toHtmlEscaped(), kind, whole(text(humanCount(s.parameters))),
             whole(text(humanBytes(s.fileSize))), whole(model::countOf(s.layers, tr("layer"), tr("layers"))))
        .arg(files.toHtmlEscaped())
        .arg(s.bitsPerWeight, 0, 'f', 2)
        .arg(text(s.quantizationMix).toHtmlEscaped())
        .arg(s.version);
}

QWidget* ModelView::buildAnatomyTab() {
    auto* tab = new QWidget(this);
    auto* layout = new QVBoxLayout(tab);
    // Two rows (the filter; then the toggles), so that two panes fit side by side on a laptop.
    m_filter = new QLineEdit(tab);
    m_filter->setPlaceholderText(tr("Filter tensors by name (e.g. ffn_down or blk.3.)"));
    m_filter->setClearButtonEnabled(true);
    layout->addWidget(m_filter);
    auto* bar = new QHBoxLayout;

    m_treeModel = new model::AnatomyTreeModel(this);
    m_treeModel->setSnapshot(m_snapshot);
    m_proxy = new model::AnatomyFilterProxy(this);
    m_proxy->setSourceModel(m_treeModel);
    connect(m_filter, &QLineEdit::textChanged, this, [this](const QString& text) {
        m_proxy->setFilterFixedString(text);
        // Every group left holds a match: open them all; without a filter, back to systems.
        if (text.isEmpty()) {
            m_tree->collapseAll();
            m_tree->expandToDepth(0);
        } else {
            m_tree->expandAll();
        }
    });
    // Enter: to the first match, in the tree (where the arrow keys go on from there).
    connect(m_filter, &QLineEdit::returnPressed, this, [this] {
        const QModelIndex first = m_proxy->firstTensor();
        if (first.isValid()) {
            m_tree->setFocus(Qt::ShortcutFocusReason);
            m_tree->scrollTo(first);
            m_tree->selectionModel()->setCurrentIndex(first, QItemSelectionModel::ClearAndSelect |
                                                                 QItemSelectionModel::Rows);
        }
    });

    for (std::size_t i = 0; i < kSystemCount; ++i) {
        const auto system = static_cast<System>(i);
        if (m_snapshot->anatomy.bySystem[i].tensors == 0) {
            continue;
        }
        const auto name = systemName(system);
        auto* toggle = new QCheckBox(QString::fromUtf8(name.data(), qsizetype(name.size())), tab);
        toggle->setChecked(true);
        toggle->setObjectName(QStringLiteral("system-") + toggle->text());
        connect(toggle, &QCheckBox::toggled, this,
                [this, system](bool on) { m_proxy->setSystemVisible(system, on); });
        bar->addWidget(toggle);
    }
    auto* bySystem = new QRadioButton(tr("by system"), tab);
    auto* byLayer = new QRadioButton(tr("by layer"), tab);
    bySystem->setChecked(true);
    connect(byLayer, &QRadioButton::toggled, this,
            [this](bool on) { setGrouping(on ? TreeGrouping::LayerSystem : TreeGrouping::SystemLayer); });
    bar->addStretch(1);
    bar->addWidget(bySystem);
    bar->addWidget(byLayer);
    layout->addLayout(bar);

    m_tree = new AnatomyTreeView(m_treeModel, tab);
    m_tree->setModel(m_proxy);
    m_tree->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_tree->setItemDelegateForColumn(model::AnatomyTreeModel::Theta, new ThetaDelegate(m_tree));
    m_tree->setSortingEnabled(true);
    m_tree->sortByColumn(-1, Qt::AscendingOrder);
    m_tree->setUniformRowHeights(true);
    m_tree->setAlternatingRowColors(true);
    // Names are never squeezed (a narrow pane scrolls sideways instead), and θ sits next to
    // them, so that the two that matter most stay in view.
    m_tree->header()->setStretchLastSection(false);
    for (int c = model::AnatomyTreeModel::Name; c < model::AnatomyTreeModel::ColumnCount; ++c) {
        m_tree->header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    }
    m_tree->header()->moveSection(model::AnatomyTreeModel::Theta, 1);
    m_tree->expandToDepth(0);
    m_tree->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_tree, &QWidget::customContextMenuRequested, this, [this](const QPoint& at) {
        QMenu menu(m_tree);
        addLayerActions(menu, m_tree->indexAt(at));
        if (m_document != nullptr && m_isRecipient) {
            addPurifyAction(menu, tensorsAt(m_tree->indexAt(at)));
            QAction* quantize =
                menu.addAction(tr("Quantize this model…"), this, &ModelView::quantizeRequested);
            quantize->setObjectName(QStringLiteral("quantizeAction"));
            refuseIfPlannedElsewhere(menu, {quantize});
            menu.addSeparator();
        } else if (m_document != nullptr) {
            addMergeAction(menu, tensorsAt(m_tree->indexAt(at)));
        }
        menu.addAction(tr("Export shown tensors as JSON, CSV or Markdown…"), this,
                       &ModelView::exportShownTensorsDialog);
        menu.exec(m_tree->viewport()->mapToGlobal(at));
    });
    layout->addWidget(m_tree, 1);
    return tab;
}

// The layers under the pointer and in the selection, for the recipient's layer operations.
std::vector<std::uint32_t> ModelView::layersAt(const QModelIndex& index) const {
    std::vector<std::uint32_t> layers;
    auto add = [&](const QModelIndex& proxyIndex) {
        const DropTarget target = m_treeModel->dropTarget(m_proxy->mapToSource(proxyIndex));
        if (target.layer) {
            layers.push_back(*target.layer);
        }
    };
    if (index.isValid()) {
        add(index);
    }
    for (const QModelIndex& selected : m_tree->selectionModel()->selectedRows()) {
        add(selected);
    }
    std::sort(layers.begin(), layers.end());
    layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
    return layers;
}

std::vector<int> ModelView::tensorsAt(const QModelIndex& index) const {
    std::vector<int> tensors;
    std::function<void(const QModelIndex&)> add = [&](const QModelIndex& at) {
        const int tensor = at.data(model::TensorIndexRole).toInt();
        if (at.data(model::NodeKindRole).toInt() == int(AnatomyNode::Kind::Tensor) && tensor >= 0) {
            tensors.push_back(tensor);
            return;
        }
        for (int row = 0; row < m_proxy->rowCount(at); ++row) {
            add(m_proxy->index(row, 0, at));
        }
    };
    if (index.isValid()) {
        add(index.siblingAtColumn(0));
    }
    for (const QModelIndex& selected : m_tree->selectionModel()->selectedRows()) {
        add(selected);
    }
    std::sort(tensors.begin(), tensors.end());
    tensors.erase(std::unique(tensors.begin(), tensors.end()), tensors.end());
    return tensors;
}

void ModelView::addPurifyAction(QMenu& menu, std::vector<int> tensors) {
    if (tensors.empty()) {
        return;
    }
    const QString what =
        tensors.size() == 1
            ? model::displayText(m_snapshot->model->tensors()[std::size_t(tensors.front())].name)
            : tr("%n tensors", nullptr, int(tensors.size()));
    QAction* action =
        menu.addAction(tr("Purify %1…").arg(what), this, [this, tensors] { emit purifyRequested(tensors); });
    action->setObjectName(QStringLiteral("purifyAction"));
    refuseIfPlannedElsewhere(menu, {action});
    menu.addSeparator();
}

// The heatmap's cell under the pointer, with the cells selected by Ctrl+click.
std::vector<int> ModelView::heatmapPick(int tensor) const {
    std::vector<int> tensors(m_heatmap->selectedTensors().begin(), m_heatmap->selectedTensors().end());
    if (tensor >= 0 && std::find(tensors.begin(), tensors.end(), tensor) == tensors.end()) {
        tensors.insert(tensors.begin(), tensor);
    }
    return tensors;
}

// The tensors under the pointer (or selected), and the whole model whatever is under it.
void ModelView::addMergeAction(QMenu& menu, std::vector<int> tensors) {
    menu.setToolTipsVisible(true);
    if (!tensors.empty()) {
        const QString what =
            tensors.size() == 1
                ? model::displayText(m_snapshot->model->tensors()[std::size_t(tensors.front())].name)
                : tr("%n tensors", nullptr, int(tensors.size()));
        QAction* action = menu.addAction(tr("Merge %1 into the recipient…").arg(what), this,
                                         [this, tensors] { emit mergeRequested(tensors); });
        action->setObjectName(QStringLiteral("mergeAction"));
        action->setToolTip(tr("Or drag onto the recipient with Shift held"));
    }
    QAction* whole = menu.addAction(tr("Merge the whole model into the recipient…"), this,
                                    [this] { emit mergeRequested({}); });
    whole->setObjectName(QStringLiteral("mergeModelAction"));
    whole->setToolTip(tr("Every tensor this model shares with the recipient"));
    menu.addSeparator();
}

// Operations go into the plan of one recipient: on another model they are offered disabled,
// with the reason, before anything is asked.
void ModelView::refuseIfPlannedElsewhere(QMenu& menu, const QList<QAction*>& actions) const {
    const QString refusal = m_document->refusal(QString::fromStdString(m_snapshot->model->path()));
    if (refusal.isEmpty()) {
        return;
    }
    menu.setToolTipsVisible(true);
    for (QAction* action : actions) {
        action->setEnabled(false);
        action->setToolTip(refusal);
        action->setStatusTip(refusal);
    }
}

void ModelView::addLayerActions(QMenu& menu, const QModelIndex& index) {
    if (m_document == nullptr || !m_isRecipient) {
        return;
    }
    const std::vector<std::uint32_t> layers = layersAt(index);
    if (layers.empty()) {
        return;
    }
    const QString path = QString::fromStdString(m_snapshot->model->path());
    // The layer under the pointer, else the first selected one.
    const std::uint32_t layer =
        m_treeModel->dropTarget(m_proxy->mapToSource(index)).layer.value_or(layers.front());
    QAction* duplicate = menu.addAction(tr("Duplicate layer %1").arg(layer), this,
                                        [this, path, layer] { m_document->duplicateLayer(path, layer); });
    QAction* remove = menu.addAction(tr("Remove layer %1").arg(layer), this,
                                     [this, path, layer] { m_document->removeLayer(path, layer); });
    const std::uint32_t first = layers.front();
    const std::uint32_t last = layers.back();
    QAction* repeat =
        menu.addAction(tr("Repeat layers %1–%2 after themselves (passthrough stack)").arg(first).arg(last),
                       this, [this, path, first, last] { m_document->repeatLayers(path, first, last); });
    refuseIfPlannedElsewhere(menu, {duplicate, remove, repeat});
    menu.addSeparator();
}

void ModelView::setSurgery(model::GraftDocument* document, bool recipient) {
    m_document = document;
    m_isRecipient = recipient;
    m_vitals->setCanPlanRemoval(recipient);
    m_tree->setDragEnabled(!recipient);
    m_tree->setAcceptDrops(recipient);
    m_tree->viewport()->setAcceptDrops(recipient);
    m_tree->setDropIndicatorShown(recipient);
    // A drop lands on the row under the pointer (never "between" rows, which would mean
    // their parent).
    m_tree->setDragDropOverwriteMode(recipient);
    m_tree->setDragDropMode(recipient ? QAbstractItemView::DropOnly : QAbstractItemView::DragOnly);
    m_tree->setDefaultDropAction(Qt::CopyAction);
    m_treeModel->setDragSource(!recipient);
    m_treeModel->setDropHandler(recipient ? document : nullptr);
    m_metadataPage->setDocument(document, recipient);
    m_heatmap->setDragSource(!recipient);
    m_heatmap->setDropHandler(recipient ? document : nullptr);
    if (recipient && document != nullptr) {
        m_heatmap->setContextActions(
            [this](QMenu& menu, int tensor) { addPurifyAction(menu, heatmapPick(tensor)); });
    } else if (document != nullptr) {
        m_heatmap->setContextActions(
            [this](QMenu& menu, int tensor) { addMergeAction(menu, heatmapPick(tensor)); });
    } else {
        m_heatmap->setContextActions({});
    }
    if (!recipient) {
        setPlanPreview({}, QString());
    }
}

void ModelView::setPlanPreview(const std::vector<ThetaHeatmap::PreviewCell>& cells, const QString& legend) {
    m_heatmap->setPreview(cells);
    std::map<int, model::AnatomyTreeModel::PlanMark> marks;
    std::map<int, std::optional<double>> after;
    for (const ThetaHeatmap::PreviewCell& cell : cells) {
        marks[cell.tensor] = cell.merged ? model::AnatomyTreeModel::PlanMark{cell.donor, cell.donorName, true}
                                         : model::AnatomyTreeModel::PlanMark{
                                               cell.donor, tr("%1 of %2").arg(cell.source, cell.donorName)};
        after[cell.tensor] = cell.theta;
    }
    m_treeModel->setPlanMarks(std::move(marks));
    m_systemCharts->setPreview(std::move(after));
    m_previewLabel->setText(legend);
    m_previewLabel->setVisible(!legend.isEmpty());
}

MeasuredModel ModelView::shownTensorsReport() const {
    const GgufModel& model = *m_snapshot->model;
    MeasuredModel report{m_snapshot->model, m_snapshot->anatomy, {}, {}};
    ModelMeasurement& m = report.measurement;
    m.path = model.path();
    m.name = model.name();
    m.architecture = model.architecture();
    if (const ModelMeasurement* measured = measurement()) {
        m.params = measured->params;
        m.fromCache = measured->fromCache;
    }
    const auto& tensors = model.tensors();
    m.tensors.resize(tensors.size());
    report.include.resize(tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (const auto& result = m_results->at(static_cast<int>(i))) {
            m.tensors[i] = *result;
        } else {
            m.tensors[i].N = tensors[i].elements;
        }
        report.include[i] = m_proxy->mapFromSource(m_treeModel->indexOfTensor(static_cast<int>(i))).isValid();
    }
    aggregateMeasurement(model, m_snapshot->anatomy, m, report.include);
    return report;
}

void ModelView::exportShownTensorsDialog() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export shown tensors"),
                                                      QString::fromStdString(m_snapshot->model->name()) +
                                                          QStringLiteral("-tensors.csv"),
                                                      measurementReportFilters());
    QString error;
    if (!path.isEmpty() && !writeMeasurementReport(shownTensorsReport(), path, &error)) {
        QMessageBox::critical(this, tr("Cannot export the tensors"), error);
    }
}

// The tree's current row: outline its cell, show it in the inspector, ask for its portrait.
void ModelView::showCurrentTensor(const QModelIndex& current) {
    inspectTensor(current.isValid() ? current.data(model::TensorIndexRole).toInt() : -1);
}

void ModelView::inspectTensor(int tensor) {
    m_heatmap->highlightTensor(tensor);
    if (tensor < 0 || (tensor == m_inspector->tensor() && !m_inspector->hasPartnerShown())) {
        return;
    }
    m_inspector->showPartner(false);
    m_inspector->showTensor(tensor, m_snapshot->model->tensors()[static_cast<std::size_t>(tensor)]);
    emit tensorSelected(tensor);
}

QWidget* ModelView::buildComparisonTab() {
    m_comparisonTab = new QWidget(this);
    auto* layout = new QVBoxLayout(m_comparisonTab);
    m_comparisonLabel = wrappedLabel(m_comparisonTab, QStringLiteral("comparisonTitle"));
    layout->addWidget(m_comparisonLabel);
    auto* splitter = new QSplitter(Qt::Vertical, m_comparisonTab);
    splitter->setChildrenCollapsible(false);
    m_comparison = new ThetaHeatmap(m_snapshot, splitter, ThetaHeatmap::Mode::Delta);
    splitter->addWidget(m_comparison);
    buildDiffTable(layout, splitter);
    layout->addWidget(splitter, 1);
    return m_comparisonTab;
}

void ModelView::setComparison(const QString& donor, const std::vector<std::optional<double>>& deltas) {
    const QString name = model::modelDisplayName(*m_snapshot->model);
    m_donorName = donor;
    m_comparisonLabel->setText(
        tr("Against the donor <b>%1</b>. Δθ: red where the donor is more structured, blue where it is "
           "noisier; relative error and cosine compare the values; unchanged tensors in the background "
           "colour.")
            .arg(donor.toHtmlEscaped()));
    m_deltas = deltas;
    showComparisonMetric();
    const int tab = m_tabs->indexOf(m_comparisonTab);
    m_tabs->setTabEnabled(tab, true);
    m_tabs->setTabToolTip(tab, tr("θ(%1) − θ(%2) per tensor").arg(donor, name));
}

void ModelView::clearComparison(const QString& reason) {
    m_deltas.clear();
    clearDiff(QString()); // the page's title says why
    showComparisonMetric();
    const int tab = m_tabs->indexOf(m_comparisonTab);
    if (m_tabs->currentIndex() == tab) {
        showPage(Page::Heatmap);
    }
    m_tabs->setTabEnabled(tab, false);
    m_tabs->setTabToolTip(tab, reason);
    m_comparisonLabel->setText(reason.toHtmlEscaped());
}

bool ModelView::hasComparison() const {
    return m_tabs->isTabEnabled(m_tabs->indexOf(m_comparisonTab));
}

QString ModelView::comparisonReason() const {
    return m_tabs->tabToolTip(m_tabs->indexOf(m_comparisonTab));
}

QWidget* ModelView::buildHeatmapTab() {
    auto* tab = new QWidget(this);
    auto* layout = new QVBoxLayout(tab);
    layout->setContentsMargins(0, 0, 0, 0);
    m_previewLabel = wrappedLabel(tab, QStringLiteral("planPreview"), Qt::RichText);
    m_previewLabel->hide();
    layout->addWidget(m_previewLabel);
    auto* splitter = new QSplitter(Qt::Horizontal, tab);
    layout->addWidget(splitter, 1);
    layout->insertWidget(0, buildHeatmapMetricBar(tab));
    m_heatmapStack = new QStackedWidget(splitter);
    m_heatmap = new ThetaHeatmap(m_snapshot, m_heatmapStack);
    m_alphaMap = new ThetaHeatmap(m_snapshot, m_heatmapStack, ThetaHeatmap::Mode::Delta);
    m_alphaMap->setObjectName(QStringLiteral("alphaMap"));
    m_alphaMap->setMetric(HeatmapMetric::Alpha);
    m_alphaMap->setComparisonTitle(
        tr("%1 — spectral α per layer and role").arg(model::modelDisplayName(*m_snapshot->model)));
    m_heatmapStack->addWidget(m_heatmap);
    m_heatmapStack->addWidget(m_alphaMap);
    // Beside the heatmap: θ per layer and system, and, once vital signs are taken, how much
    // each layer changes the hidden state. They scroll when the pane is too short for them all
    // rather than squeezing their legends or growing the window.
    auto* side = new QWidget(splitter);
    auto* sideLayout = new QVBoxLayout(side);
    sideLayout->setContentsMargins(0, 0, 0, 0);
    m_systemCharts = new SystemThetaCharts(m_snapshot, side);
    sideLayout->addWidget(m_systemCharts, 3);
    m_importance = new LayerImportanceChart(model::modelDisplayName(*m_snapshot->model), side);
    m_importance->setMinimumSize(200, 150);   // as narrow as the charts above it
    m_importance->yAxis->setLabel(QString()); // narrow: the title says what it is
    m_importance->hide();
    sideLayout->addWidget(m_importance, 2);
    splitter->addWidget(m_heatmapStack);
    splitter->addWidget(verticalScroll(side, splitter, QStringLiteral("heatmapSideCharts")));
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);
    // Every model's heatmap tab opens with the split the user last chose.
    splitter->setObjectName(QStringLiteral("heatmapSplitter"));
    const QString key = QStringLiteral("layout/heatmapSplitter");
    splitter->restoreState(QSettings().value(key).toByteArray());
    connect(splitter, &QSplitter::splitterMoved, this,
            [splitter, key] { QSettings().setValue(key, splitter->saveState()); });
    return tab;
}

void ModelView::setVitalsReport(std::shared_ptr<const VitalsReport> report, const QString& text) {
    const LayerImportance& importance = report->importance;
    m_heatmap->setLayerImportance(importance.angular, importance.blockInfluence);
    m_importance->setImportance(importance);
    m_importance->show();
    m_vitals->setReport(std::move(report), text);
}

void ModelView::selectTensor(int tensor) {
    const QModelIndex index = m_proxy->mapFromSource(m_treeModel->indexOfTensor(tensor));
    if (!index.isValid()) {
        return;
    }
    m_tree->scrollTo(index);
    m_tree->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect |
                                                         QItemSelectionModel::Rows);
}

void ModelView::showPage(Page page) {
    QWidget* const pages[] = {m_anatomyTab,   m_heatmapTab, m_comparisonTab, m_inspector,
                              m_metadataPage, m_tokenizer,  m_vitals,        m_quantLab};
    QWidget* const widget = pages[static_cast<int>(page)];
    if (m_tabs->isTabEnabled(m_tabs->indexOf(widget))) {
        m_tabs->setCurrentWidget(widget);
    }
}

void ModelView::focusFilter() {
    showPage(Page::Anatomy);
    m_filter->setFocus(Qt::ShortcutFocusReason);
    m_filter->selectAll();
}

void ModelView::setGrouping(TreeGrouping grouping) {
    m_treeModel->setGrouping(grouping);
    m_tree->expandToDepth(0);
}

QTableView* ModelView::metadataView() const {
    return m_metadataPage->table();
}

model::MetadataTableModel* ModelView::metadataModel() const {
    return m_metadataPage->tableModel();
}

QLabel* ModelView::metadataNote() const {
    return m_metadataPage->note();
}

void ModelView::editMetadataText(int row) {
    m_metadataPage->editText(row);
}

} // namespace organ::widgets
