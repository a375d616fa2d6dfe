#include "pareto_chart.h"

#include "chart_export.h"
#include "chart_style.h"
#include "display_names.h"

#include <QToolTip>
#include <cmath>

namespace organ::widgets {
namespace {

constexpr double kPickPixels = 10;

QColor oursColor() {
    return QColor(0x2c, 0xa0, 0x2c);
}
QColor referenceColor() {
    return QColor(0xd6, 0x27, 0x28);
}

// The KL a point is drawn at: measured when it was, else predicted; none when neither is > 0.
std::optional<double> shownKl(const ParetoPoint& p, bool measured) {
    const std::optional<double> kl =
        measured && p.measured ? std::optional(p.measured->klMean) : p.predictedKl;
    return kl && *kl > 0 ? kl : std::nullopt;
}

} // namespace

ParetoChart::ParetoChart(const QString& model, QWidget* parent) : QCustomPlot(parent), m_model(model) {
    setObjectName(QStringLiteral("paretoChart"));
    plotLayout()->insertRow(0);
    plotLayout()->addElement(0, 0,
                             new QCPTextElement(this, tr("Bits per weight against KL divergence"),
                                                QFont(font().family(), 10, QFont::Bold)));
    xAxis->setLabel(tr("bits per weight (every tensor counted)"));
    yAxis->setLabel(tr("KL divergence from the model (mean, nats)"));
    yAxis->setScaleType(QCPAxis::stLogarithmic);
    yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTickerLog));
    yAxis->setNumberFormat(QStringLiteral("eb"));
    yAxis->setNumberPrecision(0);
    legend->setVisible(true);
    legend->setFont(QFont(font().family(), 8));
    legend->setBorderPen(Qt::NoPen);
    axisRect()->insetLayout()->take(legend);
    plotLayout()->addElement(2, 0, legend);
    plotLayout()->setRowStretchFactor(2, 0.001);
    legend->setFillOrder(QCPLegend::foRowsFirst);
    setMouseTracking(true);
    finishChart(this, [this] {
        return ChartLabel{
            m_model + QStringLiteral("-pareto"),
            tr("%1 — bits per weight against KL divergence: llama-quantize's mixes and budget mixes")
                .arg(m_model)};
    });
}

void ParetoChart::setReport(std::shared_ptr<const ParetoReport> report) {
    m_report = std::move(report);
    clearGraphs();
    clearItems();
    m_shown.clear();
    const ParetoReport& r = *m_report;
    const bool measured = std::any_of(r.references.begin(), r.references.end(),
                                      [](const ParetoPoint& p) { return p.measured.has_value(); });
    QCPGraph* curve = addGraph();
    curve->setName(tr("budget mixes, predicted KL (sum of the groups')"));
    curve->setPen(QPen(oursColor(), 2));
    curve->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
    QCPGraph* oursMeasured = addGraph();
    oursMeasured->setName(tr("budget mix at a reference's size, measured KL"));
    oursMeasured->setLineStyle(QCPGraph::lsNone);
    oursMeasured->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, oursColor().darker(130), 9));
    QCPGraph* references = addGraph();
    references->setName(measured ? tr("llama-quantize's mixes, measured KL")
                                 : tr("llama-quantize's mixes, predicted KL"));
    references->setLineStyle(QCPGraph::lsNone);
    references->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssDiamond, referenceColor(), referenceColor(), 10));
    double low = INFINITY;
    double high = 0;
    double left = INFINITY;
    double right = 0;
    const auto add = [&](QCPGraph* graph, const ParetoPoint& p, bool reference, double kl) {
        const double x = p.size.bitsPerWeight();
        graph->addData(x, kl);
        m_shown.push_back({&p, reference, x, kl});
        low = std::min(low, kl);
        high = std::max(high, kl);
        left = std::min(left, x);
        right = std::max(right, x);
    };
    for (const ParetoPoint& p : r.mixes) {
        if (const auto kl = shownKl(p, false)) {
            add(curve, p, false, *kl);
        }
        if (p.measured && p.measured->klMean > 0) {
            add(oursMeasured, p, false, p.measured->klMean);
        }
    }
    for (const ParetoPoint& p : r.references) {
        if (const auto kl = shownKl(p, true)) {
            add(references, p, true, *kl);
            // The label on the side away from our mix at its size, which is drawn at the same x.
            const auto ours = std::find_if(r.mixes.begin(), r.mixes.end(), [&](const ParetoPoint& m) {
                return m.label == p.label + "'s size";
            });
            const std::optional<double> oursKl = ours != r.mixes.end() ? shownKl(*ours, true) : std::nullopt;
            const bool above = !oursKl || *oursKl <= *kl;
            auto* label = new QCPItemText(this);
            label->position->setCoords(m_shown.back().x, *kl);
            label->setPositionAlignment(Qt::AlignHCenter | (above ? Qt::AlignBottom : Qt::AlignTop));
            label->setPadding(above ? QMargins(0, 0, 0, 8) : QMargins(0, 8, 0, 0));
            label->setText(QString::fromStdString(p.label));
            label->setColor(referenceColor());
            label->setFont(QFont(font().family(), 8, QFont::Bold));
            label->setClipToAxisRect(false);
        }
    }
    if (oursMeasured->dataCount() == 0) {
        removeGraph(oursMeasured);
    }
    xAxis->setRange(left <= right ? QCPRange(left - 0.4, right + 0.4) : QCPRange(2, 9));
    yAxis->setRange(low <= high ? QCPRange(low / 2, high * 4) : QCPRange(1e-5, 1));
    legend->setWrap(1);
    replot();
}

int ParetoChart::pointAtPixel(const QPoint& pixel) const {
    int best = -1;
    double bestDistance = kPickPixels;
    for (int i = 0; i < int(m_shown.size()); ++i) {
        const QPoint at = pixelOf(i);
        const double distance = std::hypot(double(at.x() - pixel.x()), double(at.y() - pixel.y()));
        if (distance <= bestDistance) {
            best = i;
            bestDistance = distance;
        }
    }
    return best;
}

QPoint ParetoChart::pixelOf(int shown) const {
    const Shown& s = m_shown[std::size_t(shown)];
    return QPointF(xAxis->coordToPixel(s.x), yAxis->coordToPixel(s.y)).toPoint();
}

void ParetoChart::mousePressEvent(QMouseEvent* event) {
    QCustomPlot::mousePressEvent(event);
    const int at = event->button() == Qt::LeftButton ? pointAtPixel(event->position().toPoint()) : -1;
    if (at >= 0 && m_choosable) {
        emit pointChosen(*m_shown[std::size_t(at)].point);
    }
}

void ParetoChart::mouseMoveEvent(QMouseEvent* event) {
    QCustomPlot::mouseMoveEvent(event);
    const int at = pointAtPixel(event->position().toPoint());
    if (at < 0) {
        QToolTip::hideText();
        return;
    }
    const ParetoPoint& p = *m_shown[std::size_t(at)].point;
    QString text = m_shown[std::size_t(at)].reference
                       ? tr("llama-quantize %1").arg(QString::fromStdString(p.label))
                       : tr("budget mix (%1)").arg(QString::fromStdString(p.label));
    text += tr("\n%1 bits per weight").arg(model::finiteNumber(p.size.bitsPerWeight(), 4));
    if (p.predictedKl) {
        text += tr("\npredicted KL %1").arg(model::finiteNumber(*p.predictedKl, 6));
    }
    if (p.measured) {
        text +=
            tr("\nmeasured KL %1, p99 %2, top-1 %3 %")
                .arg(model::finiteNumber(p.measured->klMean, 6), model::finiteNumber(p.measured->klP99, 4),
                     model::finiteNumber(100 * p.measured->topAgreement, 1));
    }
    if (m_choosable) {
        text += tr("\nClick: plan this mix");
    }
    QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

} // namespace organ::widgets
