#include "layer_importance_chart.h"

#include "chart_export.h"
#include "chart_style.h"

#include <algorithm>

namespace organ::widgets {

LayerImportanceChart::LayerImportanceChart(const QString& model, QWidget* parent)
    : QCustomPlot(parent), m_model(model) {
    setObjectName(QStringLiteral("layerImportanceChart"));
    plotLayout()->insertRow(0);
    plotLayout()->addElement(
        0, 0, new QCPTextElement(this, tr("Layer importance"), QFont(font().family(), 10, QFont::Bold)));
    xAxis->setLabel(tr("layer"));
    yAxis->setLabel(tr("change of the hidden state"));
    m_angular = new QCPBars(xAxis, yAxis);
    m_angular->setName(tr("angular distance"));
    m_angular->setWidth(0.6);
    m_angular->setBrush(QColor(0x3b, 0x6e, 0xb4));
    m_angular->setPen(Qt::NoPen);
    m_influence = addGraph();
    m_influence->setName(tr("block influence"));
    m_influence->setPen(QPen(QColor(0xe0, 0x7b, 0x1a), 2));
    m_influence->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
    // The legend under the chart, two entries side by side: it never hides a bar.
    legend->setVisible(true);
    legend->setFont(QFont(font().family(), 8));
    legend->setIconSize(14, 8);
    legend->setBorderPen(Qt::NoPen);
    axisRect()->insetLayout()->take(legend);
    plotLayout()->addElement(2, 0, legend);
    plotLayout()->setRowStretchFactor(2, 0.001);
    legend->setWrap(2);
    legend->setFillOrder(QCPLegend::foColumnsFirst);
    QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
    ticker->setTickStep(1.0);
    xAxis->setTicker(ticker);
    finishChart(this, [this] {
        return ChartLabel{m_model + QStringLiteral("-layer-importance"),
                          tr("%1 — layer importance (angular distance, block influence)").arg(m_model)};
    });
}

void LayerImportanceChart::setImportance(const LayerImportance& importance) {
    const int layers = int(importance.angular.size());
    QVector<double> x(layers);
    QVector<double> angular(layers);
    QVector<double> influence(layers);
    double top = 0.05;
    for (int l = 0; l < layers; ++l) {
        x[l] = l;
        angular[l] = importance.angular[std::size_t(l)];
        influence[l] = importance.blockInfluence[std::size_t(l)];
        top = std::max({top, angular[l], influence[l]});
    }
    m_angular->setData(x, angular);
    m_influence->setData(x, influence);
    xAxis->setRange(-0.6, layers - 0.4);
    yAxis->setRange(0, top * 1.1);
    replot();
}

} // namespace organ::widgets
