// ModelView's metrics besides θ: spectral α on the Heatmap page, and the diff against the donor
// (relative error, cosine, the table) on the Δθ page.
#include "model_view.h"

#include "diff_table_model.h"
#include "display_names.h"
#include "measure/model_diff.h"
#include "measure/spectral.h"
#include "model_roles.h"
#include "row_table.h"
#include "tensor_inspector.h"
#include "theta_heatmap.h"
#include "wrapped_label.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

namespace organ::widgets {
namespace {

// The α heatmap's value of a tensor: the mean over its matrices' α (one for a 2-D tensor, one
// per expert of a 3-D one), and its tooltip with the spec's labels.
struct TensorAlpha {
    std::optional<double> value;
    QString detail;
};

QString label(const SpectralFit& fit) {
    QString text = QString::fromStdString(spectralLabel(fit));
    if (isUnreliable(fit)) {
        text += QCoreApplication::translate("organ::widgets::ModelView", ", unreliable (α > 8)");
    }
    return text;
}

TensorAlpha alphaOf(const MatrixSpectrum* first, std::size_t count) {
    auto tr = [](const char* text) { return QCoreApplication::translate("organ::widgets::ModelView", text); };
    TensorAlpha out;
    std::vector<const SpectralFit*> fits;
    for (std::size_t k = 0; k < count; ++k) {
        if (first[k].fit && first[k].fit->alpha) {
            fits.push_back(&*first[k].fit);
        }
    }
    if (fits.empty()) {
        out.detail = first[0].fit ? tr("no α: fewer than 10 positive eigenvalues")
                                  : tr("no α: fewer than 16 rows or columns");
        return out;
    }
    if (count == 1) {
        const SpectralFit& f = *fits.front();
        out.value = *f.alpha;
        out.detail = tr("α %1 — %2\nD %3 · tail %4 of %5 eigenvalues · λmax %6 · stable rank %7")
                         .arg(*f.alpha, 0, 'f', 2)
                         .arg(label(f))
                         .arg(f.ksDistance, 0, 'f', 3)
                         .arg(f.tail)
                         .arg(std::min(first[0].rows, first[0].columns))
                         .arg(f.lambdaMax, 0, 'g', 4)
                         .arg(f.stableRank, 0, 'f', 2);
        return out;
    }
    double sum = 0;
    double low = *fits.front()->alpha;
    double high = low;
    int over = 0;
    int under = 0;
    for (const SpectralFit* f : fits) {
        sum += *f->alpha;
        low = std::min(low, *f->alpha);
        high = std::max(high, *f->alpha);
        over += *f->alpha < 2 ? 1 : 0;
        under += *f->alpha > 6 ? 1 : 0;
    }
    out.value = sum / double(fits.size());
    out.detail =
        tr("α %1, the mean of %2 experts (%3 – %4)\nover-trained %5 · well-trained %6 · under-trained %7")
            .arg(*out.value, 0, 'f', 2)
            .arg(fits.size())
            .arg(low, 0, 'f', 2)
            .arg(high, 0, 'f', 2)
            .arg(over)
            .arg(int(fits.size()) - over - under)
            .arg(under);
    return out;
}

QString diffDetail(const TensorDiff& t) {
    auto tr = [](const char* text) { return QCoreApplication::translate("organ::widgets::ModelView", text); };
    const DiffSums& s = t.sums;
    const auto re = s.relativeError();
    const auto cos = s.cosine();
    const auto sqnr = s.sqnrDb();
    QString text = tr("relative error %1 · cosine %2\nSQNR %3 · max |Δ| %4 · %5% of values changed")
                       .arg(re ? QString::number(*re, 'g', 4) : tr("—"))
                       .arg(cos ? QString::number(*cos, 'f', 6) : tr("—"))
                       .arg(sqnr ? tr("%1 dB").arg(*sqnr, 0, 'f', 1) : tr("∞"))
                       .arg(s.maxAbs, 0, 'g', 4)
                       .arg(s.values > 0 ? 100.0 * double(s.changed) / double(s.values) : 0.0, 0, 'f', 2);
    if (t.identical) {
        text += tr("\nidentical bytes");
    }
    return text;
}

// A "Metric:" choice on `bar`: its caption, then the box (returned) with `metrics`.
QComboBox* addMetricBox(QHBoxLayout* bar, QWidget* parent, const QString& objectName,
                        const QStringList& metrics, const QString& toolTip) {
    auto* caption = new QLabel(QCoreApplication::translate("organ::widgets::ModelView", "Met&ric:"), parent);
    auto* box = new QComboBox(parent);
    box->setObjectName(objectName);
    box->addItems(metrics);
    box->setToolTip(toolTip);
    caption->setBuddy(box);
    bar->addWidget(caption);
    bar->addWidget(box);
    return box;
}

} // namespace

QWidget* ModelView::buildHeatmapMetricBar(QWidget* parent) {
    auto* bar = new QWidget(parent);
    auto* layout = new QHBoxLayout(bar);
    layout->setContentsMargins(4, 0, 4, 0);
    m_heatmapMetric = addMetricBox(layout, bar, QStringLiteral("heatmapMetric"),
                                   {tr("θ (Z-measure)"), tr("α (spectral: heavy-tail exponent)")},
                                   tr("α of each weight matrix's eigenvalue spectrum (organ spectral): "
                                      "computed on the engine thread when first chosen"));
    m_spectraNote = new QLabel(bar);
    m_spectraNote->setObjectName(QStringLiteral("spectraNote"));
    layout->addWidget(m_spectraNote, 1);
    connect(m_heatmapMetric, &QComboBox::currentIndexChanged, this, &ModelView::showHeatmapMetric);
    return bar;
}

void ModelView::showHeatmapMetric() {
    const bool alpha = m_heatmapMetric->currentIndex() == 1;
    m_heatmapStack->setCurrentWidget(alpha ? m_alphaMap : m_heatmap);
    if (alpha && !m_spectra) {
        emit spectraRequested();
    }
}

void ModelView::setSpectra(std::shared_ptr<const SpectralReport> report) {
    m_spectra = std::move(report);
    // Matrices come in the model's tensor order, one per 2-D tensor, one per expert of a 3-D one.
    const auto& tensors = m_snapshot->model->tensors();
    const auto& matrices = m_spectra->matrices;
    std::size_t next = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo& t = tensors[i];
        const std::size_t count = t.nDims < 2 ? 0 : std::size_t(t.ne[2] * t.ne[3]);
        if (count == 0 || next + count > matrices.size()) {
            m_alphaMap->setValue(int(i), std::nullopt, tr("no α: not a matrix"));
            continue;
        }
        const TensorAlpha alpha = alphaOf(&matrices[next], count);
        m_alphaMap->setValue(int(i), alpha.value, alpha.detail);
        next += count;
    }
    setSpectraNote(tr("%n matrices, spectral v1", nullptr, int(matrices.size())));
}

void ModelView::setSpectraNote(const QString& note) {
    m_spectraNote->setText(note);
}

void ModelView::buildDiffTable(QVBoxLayout* tabLayout, QSplitter* splitter) {
    auto* bar = new QHBoxLayout;
    m_comparisonMetric = addMetricBox(bar, m_comparisonTab, QStringLiteral("comparisonMetric"),
                                      {tr("Δθ"), tr("relative error"), tr("cosine")},
                                      tr("Relative error and cosine compare the two models' values tensor by "
                                         "tensor (organ diff), on the engine thread when first chosen"));
    m_diffNote = wrappedLabel(m_comparisonTab, QStringLiteral("diffNote"));
    bar->addWidget(m_diffNote, 1);
    tabLayout->addLayout(bar);
    m_diffSplitter = splitter;
    m_diffModel = new model::DiffTableModel(this);
    m_diffTable = sortableRowTable(m_diffModel, QStringLiteral("diffTable"), splitter, this);
    m_diffTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_diffTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_diffTable->setToolTip(tr("Double-click or Enter: both tensors side by side in the inspector"));
    // Shown with a diff; the heatmap keeps the page's height until then.
    m_diffTable->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Ignored);
    m_diffTable->setMinimumHeight(100);
    m_diffTable->hide();
    splitter->addWidget(m_diffTable);
    connect(m_diffTable, &QTableView::activated, this, [this](const QModelIndex& index) {
        const int tensor = index.data(model::TensorIndexRole).toInt();
        if (tensor >= 0) {
            emit diffRowActivated(tensor);
        }
    });
    connect(m_comparisonMetric, &QComboBox::currentIndexChanged, this, &ModelView::showComparisonMetric);
    clearDiff(QString());
}

void ModelView::showComparisonMetric() {
    const int index = m_comparisonMetric->currentIndex();
    const HeatmapMetric metric = index == 1   ? HeatmapMetric::RelativeError
                                 : index == 2 ? HeatmapMetric::Cosine
                                              : HeatmapMetric::DeltaTheta;
    m_comparison->setMetric(metric);
    m_comparison->setComparisonTitle(
        tr("%1 %2 − %3").arg(metricName(metric), m_donorName, model::modelDisplayName(*m_snapshot->model)));
    if (metric == HeatmapMetric::DeltaTheta) {
        for (std::size_t i = 0; i < m_deltas.size(); ++i) {
            m_comparison->setValue(int(i), m_deltas[i]);
        }
        return;
    }
    if (!m_diff) {
        emit diffRequested();
        return;
    }
    for (std::size_t i = 0; i < m_diffRowOf.size(); ++i) {
        const int row = m_diffRowOf[i];
        if (row < 0) {
            m_comparison->setValue(int(i), std::nullopt, tr("not in both models with one shape"));
            continue;
        }
        const TensorDiff& t = m_diff->tensors[std::size_t(row)];
        m_comparison->setValue(int(i),
                               metric == HeatmapMetric::Cosine ? t.sums.cosine() : t.sums.relativeError(),
                               diffDetail(t));
    }
}

void ModelView::setDiff(const QString& donor, std::shared_ptr<const ModelDiff> diff) {
    m_diff = std::move(diff);
    const GgufModel& model = *m_snapshot->model;
    m_diffRowOf.assign(model.tensors().size(), -1);
    std::vector<int> tensorOfRow;
    for (std::size_t row = 0; row < m_diff->tensors.size(); ++row) {
        const TensorInfo* t = model.findTensor(m_diff->tensors[row].name);
        const int tensor = t == nullptr ? -1 : int(t - model.tensors().data());
        tensorOfRow.push_back(tensor);
        if (tensor >= 0) {
            m_diffRowOf[std::size_t(tensor)] = int(row);
        }
    }
    m_diffModel->setDiff(m_diff, std::move(tensorOfRow));
    if (m_diffTable->isHidden()) {
        m_diffTable->show();
        const int height = m_diffSplitter->height();
        m_diffSplitter->setSizes({height - height / 3, height / 3});
    }
    const auto identical = std::count_if(m_diff->tensors.begin(), m_diff->tensors.end(),
                                         [](const TensorDiff& t) { return t.identical; });
    QString note = tr("%1 against %2: %n tensors compared", nullptr, int(m_diff->tensors.size()))
                       .arg(model::modelDisplayName(model), donor) +
                   tr(", %n identical", nullptr, int(identical));
    const std::size_t apart = m_diff->onlyInA.size() + m_diff->onlyInB.size() + m_diff->shapes.size();
    if (apart > 0) {
        note += tr(", %n not in both with one shape", nullptr, int(apart));
    }
    m_diffNote->setText(note);
    showComparisonMetric();
}

void ModelView::clearDiff(const QString& note) {
    m_diff.reset();
    m_diffRowOf.clear();
    m_diffModel->setDiff(nullptr, {});
    m_diffTable->hide();
    m_diffNote->setText(note.isEmpty() ? tr("Choose relative error or cosine to compare the values with the "
                                            "donor's, tensor by tensor")
                                       : note);
    if (m_comparisonMetric->currentIndex() != 0) {
        m_comparisonMetric->setCurrentIndex(0); // back to Δθ, without asking for a diff
    }
}

void ModelView::inspectPair(int tensor, const QString& partner, int partnerTensor,
                            const TensorInfo& partnerInfo, const model::TensorResults* partnerResults) {
    m_heatmap->highlightTensor(tensor);
    m_inspector->showTensor(tensor, m_snapshot->model->tensors()[std::size_t(tensor)]);
    TensorInspector* other = m_inspector->partner();
    other->setModelName(partner);
    other->setResults(partnerResults);
    other->showTensor(partnerTensor, partnerInfo);
    m_inspector->showPartner(true);
    showPage(Page::Inspector);
    emit tensorSelected(tensor);
}

} // namespace organ::widgets
