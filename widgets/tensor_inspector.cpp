#include "tensor_inspector.h"
#include "display_names.h"

#include "chart_export.h"
#include "chart_style.h"
#include "eigenvalue_plot.h"
#include "matrix_plot.h"
#include "theta_scale.h"
#include "vertical_scroll.h"

#include <QCheckBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QStackedWidget>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <qcustomplot.h>

namespace organ::widgets {
QCustomPlot* TensorInspector::makePlot(const QString& title, const QString& fileSuffix) {
    auto* plot = new QCustomPlot(this);
    plot->setMinimumSize(200, 160);
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->addElement(0, 0,
                                   new QCPTextElement(plot, title, QFont(font().family(), 10, QFont::Bold)));
    installExportMenu(plot, this, [this, title, fileSuffix] {
        const QString tensor = m_name.isEmpty() ? tr("no tensor") : m_name;
        return ChartLabel{m_model + u'-' + tensor + u'-' + fileSuffix,
                          tr("%1 — %2: %3").arg(m_model, tensor, title.toLower())};
    });
    followPalette(plot);
    fitToWidth(plot);
    return plot;
}

TensorInspector::TensorInspector(const QString& model, QWidget* parent) : QWidget(parent), m_model(model) {
    // A partner, when shown, goes on the right.
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_pages = new QStackedWidget(this);
    layout->addWidget(m_pages);
    // Before a tensor is chosen: how to choose one, not empty axes.
    m_empty =
        new QLabel(tr("<h3>No tensor selected</h3><p>Click a cell of the <b>Heatmap</b> or a tensor in the "
                      "<b>Anatomy</b> tree to see it here: its indicators, the histogram of its values, its "
                      "cross-scale spectrum, the matrix itself and its eigenvalue "
                      "spectrum.</p><p>Double-click a cell or a row to "
                      "come straight here.</p>"),
                   m_pages);
    m_empty->setObjectName(QStringLiteral("inspectorEmpty"));
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_pages->addWidget(m_empty);
    // The charts scroll when the pane is shorter than they need, rather than growing the window.
    auto* charts = new QWidget(m_pages);
    auto* grid = new QGridLayout(charts);
    m_title = new QLabel(charts);
    m_title->setTextFormat(Qt::RichText);
    m_indicators = new QLabel(charts);
    m_indicators->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_indicators->setWordWrap(true);
    m_logScale = new QCheckBox(tr("log scale"), charts);
    connect(m_logScale, &QCheckBox::toggled, this, &TensorInspector::drawHistogram);
    grid->addWidget(m_title, 0, 0, 1, 2);
    grid->addWidget(m_indicators, 1, 0);
    grid->addWidget(m_logScale, 1, 1, Qt::AlignRight);
    m_histogram = makePlot(tr("Values"), QStringLiteral("histogram"));
    m_spectrum = makePlot(tr("Cross-scale spectrum"), QStringLiteral("spectrum"));
    m_spectrum->xAxis->setTicker(integerTicker());
    m_image = makePlot(tr("The matrix"), QStringLiteral("matrix"));
    m_matrix = std::make_unique<MatrixPlot>(m_image);
    m_matrixCaption = new QLabel(charts);
    m_matrixCaption->setObjectName(QStringLiteral("matrixCaption"));
    m_matrixCaption->setWordWrap(true); // else its line (and the indicators') sets the column's width
    m_image->setMouseTracking(true);
    connect(m_image, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        const QString text = m_matrix->readout(event->pos());
        if (text.isEmpty()) {
            QToolTip::hideText();
        } else {
            QToolTip::showText(event->globalPosition().toPoint(), text, m_image);
        }
    });
    m_eigen = makePlot(tr("Eigenvalue spectrum"), QStringLiteral("eigenvalues"));
    setUpEigenvaluePlot(m_eigen);
    m_eigenCaption = new QLabel(charts);
    m_eigenCaption->setObjectName(QStringLiteral("eigenvalueCaption"));
    m_eigenCaption->setWordWrap(true);
    // Two columns of equal width whatever the charts would like (a partner beside leaves little).
    for (QCustomPlot* plot : {m_histogram, m_spectrum, m_image, m_eigen}) {
        plot->setSizePolicy(QSizePolicy::Ignored, plot->sizePolicy().verticalPolicy());
    }
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);
    m_grid = grid;
    arrangeCharts(false);
    m_pages->addWidget(verticalScroll(charts, m_pages, QStringLiteral("inspectorScroll")));
}

TensorInspector::~TensorInspector() = default;

void TensorInspector::showTensor(int tensor, const TensorInfo& info) {
    m_tensor = tensor;
    m_name = model::displayText(info.name);
    m_columns = info.ne[0];
    m_rows = info.ne[0] == 0 ? 0 : info.elements / info.ne[0];
    m_portrait.reset();
    m_lambda.reset();
    m_eigenCaption->clear();
    const auto type = tensorTypeName(info.type);
    m_typeShape = QString::fromUtf8(type.data(), qsizetype(type.size())) + QStringLiteral(", ") +
                  QString::fromStdString(info.shapeText());
    m_title->setText(titleText());
    m_pages->setCurrentIndex(1);
    drawHistogram();
    drawSpectrum();
    drawImage();
    drawEigenvalues();
    m_indicators->setText(indicatorsText());
}

QString TensorInspector::titleText() const {
    const QString model = m_named ? m_model.toHtmlEscaped() + QStringLiteral(": ") : QString();
    return model + QStringLiteral("<b>") + m_name.toHtmlEscaped() + QStringLiteral("</b> &nbsp; ") +
           m_typeShape.toHtmlEscaped();
}

void TensorInspector::setNamed(bool named) {
    m_named = named;
    m_title->setText(titleText());
}

TensorInspector* TensorInspector::partner() {
    if (m_partner == nullptr) {
        m_partner = new TensorInspector(QString(), this);
        m_partner->setObjectName(QStringLiteral("partnerInspector"));
        layout()->addWidget(m_partner);
        m_partner->hide();
    }
    return m_partner;
}

void TensorInspector::showPartner(bool show) {
    if (m_partner == nullptr && !show) {
        return;
    }
    partner()->setVisible(show);
    // Two inspectors share the pane: one chart a row each, so that every chart keeps its width.
    for (TensorInspector* inspector : {this, m_partner}) {
        inspector->setNamed(show);
        inspector->arrangeCharts(show);
    }
}

void TensorInspector::arrangeCharts(bool oneColumn) {
    for (int row = 2; row < 8; ++row) {
        m_grid->setRowStretch(row, 0);
    }
    if (oneColumn) {
        int row = 2;
        for (QWidget* w : std::initializer_list<QWidget*>{m_histogram, m_spectrum, m_image, m_matrixCaption,
                                                          m_eigen, m_eigenCaption}) {
            m_grid->addWidget(w, row, 0, 1, 2);
            m_grid->setRowStretch(row, qobject_cast<QCustomPlot*>(w) != nullptr ? 1 : 0);
            ++row;
        }
        return;
    }
    m_grid->addWidget(m_histogram, 2, 0);
    m_grid->addWidget(m_spectrum, 2, 1);
    m_grid->addWidget(m_image, 3, 0);
    m_grid->addWidget(m_eigen, 3, 1);
    m_grid->addWidget(m_matrixCaption, 4, 0);
    m_grid->addWidget(m_eigenCaption, 4, 1);
    m_grid->setRowStretch(2, 2);
    m_grid->setRowStretch(3, 3);
}

bool TensorInspector::hasPartnerShown() const {
    return m_partner != nullptr && !m_partner->isHidden();
}

void TensorInspector::setEigenvalues(int tensor, std::shared_ptr<const std::vector<double>> lambda,
                                     const SpectralFit& fit, const QString& what) {
    if (tensor != m_tensor) {
        return;
    }
    m_lambda = std::move(lambda);
    m_fit = fit;
    m_matrixWhat = what;
    const QString matrix = what.isEmpty() ? QString() : what + QStringLiteral(": ");
    if (!fit.alpha) {
        m_eigenCaption->setText(matrix + tr("fewer than 10 positive eigenvalues: no tail to fit"));
    } else {
        m_eigenCaption->setText(matrix +
                                tr("α %1 (%2)%3 · tail %4 of %5 eigenvalues · stable rank %6 · λmax %7")
                                    .arg(*fit.alpha, 0, 'f', 2)
                                    .arg(QString::fromStdString(spectralLabel(fit)))
                                    .arg(isUnreliable(fit) ? tr(", unreliable (α > 8)") : QString())
                                    .arg(fit.tail)
                                    .arg(m_lambda->size())
                                    .arg(fit.stableRank, 0, 'f', 2)
                                    .arg(fit.lambdaMax, 0, 'g', 4));
    }
    drawEigenvalues();
}

void TensorInspector::setEigenvalueNote(int tensor, const QString& note) {
    if (tensor != m_tensor) {
        return;
    }
    m_lambda.reset();
    m_eigenCaption->setText(note);
    drawEigenvalues();
}

QString TensorInspector::eigenvalueCaption() const {
    return m_eigenCaption->text();
}

void TensorInspector::drawEigenvalues() {
    drawEigenvalueSpectrum(m_eigen, m_lambda ? *m_lambda : std::vector<double>(), m_fit);
}

QString TensorInspector::matrixCaption() const {
    return m_matrixCaption->text();
}

bool TensorInspector::isEmptyShown() const {
    return m_pages->currentWidget() == m_empty;
}

void TensorInspector::setResults(const model::TensorResults* results) {
    model::followResults(
        this, m_results, results,
        [this](int tensor) {
            if (tensor == m_tensor) {
                resultChanged();
            }
        },
        [this] { resultChanged(); });
}

const std::optional<ZResult>& TensorInspector::result() const {
    static const std::optional<ZResult> none;
    return m_results == nullptr ? none : m_results->at(m_tensor);
}

void TensorInspector::resultChanged() {
    if (m_tensor < 0) {
        return;
    }
    m_indicators->setText(indicatorsText());
    drawSpectrum();
}

void TensorInspector::setPortrait(int tensor, std::shared_ptr<const TensorPortrait> portrait) {
    if (tensor != m_tensor) {
        return;
    }
    m_portrait = std::move(portrait);
    drawHistogram();
    drawImage();
}

QString TensorInspector::indicatorsText() const {
    const auto& measured = result();
    if (!measured) {
        return m_tensor < 0 ? QString() : tr("not measured yet");
    }
    const ZResult& z = *measured;
    if (z.constant) {
        return tr("constant: no θ");
    }
    if (!z.hasTheta()) {
        return tr("no finite values");
    }
    QString text = tr("θ %1°   signal %2   H %3   K %4   C %5")
                       .arg(*z.theta, 0, 'f', 2)
                       .arg(*z.signal, 0, 'f', 3)
                       .arg(*z.H, 0, 'f', 3)
                       .arg(*z.K, 0, 'f', 2)
                       .arg(*z.C, 0, 'f', 2);
    text += z.beta ? tr("   β %1").arg(*z.beta, 0, 'f', 3) : tr("   β —");
    if (z.nonFinite != 0) {
        text += tr("   (%1 NaN/∞ left out)").arg(z.nonFinite);
    }
    return text;
}

void TensorInspector::drawHistogram() {
    m_histogram->clearPlottables();
    if (m_portrait && !m_portrait->histogram.empty() && m_portrait->histogramValues != 0) {
        auto* bars = new QCPBars(m_histogram->xAxis, m_histogram->yAxis);
        const auto& h = m_portrait->histogram;
        const double width = (m_portrait->maximum - m_portrait->minimum) / static_cast<double>(h.size());
        bars->setWidth(width > 0 ? width : 1.0);
        bars->setPen(Qt::NoPen);
        bars->setBrush(QColor(0x31, 0x68, 0x8e));
        double top = 1;
        for (std::size_t i = 0; i < h.size(); ++i) {
            bars->addData(m_portrait->minimum + (i + 0.5) * width, static_cast<double>(h[i]));
            top = std::max(top, static_cast<double>(h[i]));
        }
        const bool log = m_logScale->isChecked();
        m_histogram->yAxis->setScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
        m_histogram->yAxis->setTicker(log ? QSharedPointer<QCPAxisTicker>(new QCPAxisTickerLog)
                                          : QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        m_histogram->yAxis->setRange(log ? 0.8 : 0.0, top * (log ? 2.0 : 1.05));
        m_histogram->xAxis->setRange(m_portrait->minimum - width, m_portrait->maximum + width);
    }
    m_histogram->xAxis->setLabel(tr("value"));
    m_histogram->yAxis->setLabel(tr("count"));
    m_histogram->replot();
}

void TensorInspector::drawSpectrum() {
    m_spectrum->clearGraphs();
    m_spectrum->xAxis->setLabel(tr("Haar level j (1 = finest)"));
    m_spectrum->yAxis->setLabel(tr("log₂ E_j"));
    const auto& measured = result();
    if (measured && !measured->levelEnergies.empty()) {
        QVector<double> x;
        QVector<double> y;
        for (std::size_t j = 0; j < measured->levelEnergies.size(); ++j) {
            if (measured->levelEnergies[j] > 0) {
                x << static_cast<double>(j + 1);
                y << std::log2(measured->levelEnergies[j]);
            }
        }
        QCPGraph* points = m_spectrum->addGraph();
        points->setData(x, y);
        points->setLineStyle(QCPGraph::lsNone);
        points->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(0x1f, 0x9e, 0x89), 7));
        if (measured->beta && x.size() >= 2) {
            // The least-squares line whose slope is β, through the points' centre.
            double mx = 0, my = 0;
            for (int i = 0; i < x.size(); ++i) {
                mx += x[i] / x.size();
                my += y[i] / y.size();
            }
            QCPGraph* fit = m_spectrum->addGraph();
            fit->setPen(QPen(QColor(0xd6, 0x27, 0x28), 1.5, Qt::DashLine));
            fit->setData({x.front(), x.back()},
                         {my + *measured->beta * (x.front() - mx), my + *measured->beta * (x.back() - mx)});
        }
        m_spectrum->rescaleAxes();
        m_spectrum->xAxis->setRange(0.5, x.isEmpty() ? 1.5 : x.back() + 0.5);
        m_spectrum->yAxis->scaleRange(1.2);
    }
    m_spectrum->replot();
}

void TensorInspector::drawImage() {
    m_matrix->show(m_portrait, m_columns, m_rows);
    m_matrixCaption->setText(m_portrait ? m_matrix->caption() : QString());
    m_image->replot();
}

} // namespace organ::widgets
