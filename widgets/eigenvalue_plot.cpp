#include "eigenvalue_plot.h"

#include "chart_style.h"

#include <QCoreApplication>
#include <cmath>
#include <qcustomplot.h>

namespace organ::widgets {
namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("organ::widgets::EigenvaluePlot", text);
}

void setLogAxis(QCPAxis* axis, const QString& label) {
    axis->setScaleType(QCPAxis::stLogarithmic);
    axis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    axis->setNumberFormat(QStringLiteral("eb"));
    axis->setNumberPrecision(0);
    axis->setLabel(label);
}

} // namespace

void setUpEigenvaluePlot(QCustomPlot* plot) {
    // Below the axes, an entry a row: the tail's entry is long (α, D, the tail's size).
    legendBelow(plot);
    plot->legend->setIconSize(14, 8);
    plot->legend->setWrap(1);
}

void drawEigenvalueSpectrum(QCustomPlot* plot, const std::vector<double>& lambda, const SpectralFit& fit) {
    plot->clearGraphs();
    plot->clearItems();
    setLogAxis(plot->xAxis, tr("eigenvalue λ = σ²"));
    setLogAxis(plot->yAxis, tr("share ≥ λ"));
    plot->legend->setVisible(!lambda.empty());
    if (lambda.empty()) {
        plot->replot();
        return;
    }
    const double m = double(lambda.size());
    QVector<double> x;
    QVector<double> y;
    for (std::size_t i = 0; i < lambda.size(); ++i) {
        if (lambda[i] > 0) { // ascending: λ_i has m − i eigenvalues ≥ it
            x << lambda[i];
            y << (m - double(i)) / m;
        }
    }
    QCPGraph* points = plot->addGraph();
    points->setName(tr("eigenvalues"));
    points->setData(x, y, true);
    points->setLineStyle(QCPGraph::lsNone);
    points->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(0x31, 0x68, 0x8e), 4));
    plot->rescaleAxes();
    if (fit.alpha && fit.tail > 0) {
        const double alpha = *fit.alpha;
        const double top = double(fit.tail) / m;
        auto line = [&](double l) { return top * std::pow(l / fit.xmin, 1.0 - alpha); };
        QCPGraph* tail = plot->addGraph();
        tail->setName(tr("fit α %1, D %2").arg(alpha, 0, 'f', 2).arg(fit.ksDistance, 0, 'f', 3));
        tail->setPen(QPen(QColor(0xd6, 0x27, 0x28), 2));
        tail->setData({fit.xmin, fit.lambdaMax}, {line(fit.xmin), line(fit.lambdaMax)}, true);
        auto* xmin = new QCPItemStraightLine(plot);
        xmin->point1->setCoords(fit.xmin, y.isEmpty() ? 1.0 : y.back());
        xmin->point2->setCoords(fit.xmin, 1.0);
        xmin->setPen(QPen(QColor(0x66, 0x66, 0x66), 1, Qt::DashLine));
        QCPGraph* mark = plot->addGraph(); // the legend's entry for the dashed line
        mark->setName(tr("xmin %1").arg(fit.xmin, 0, 'g', 4));
        mark->setPen(xmin->pen());
    }
    plot->xAxis->scaleRange(1.3, std::sqrt(plot->xAxis->range().lower * plot->xAxis->range().upper));
    plot->yAxis->setRange(plot->yAxis->range().lower / 1.5, 1.5);
    plot->replot();
}

} // namespace organ::widgets
