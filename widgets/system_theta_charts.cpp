#include "system_theta_charts.h"

#include "chart_export.h"
#include "chart_style.h"
#include "display_names.h"
#include "theta_scale.h"

#include <QVBoxLayout>
#include <qcustomplot.h>

namespace organ::widgets {

QColor systemColor(System system) {
    // In the order of System: blue, red, green, purple, orange, grey.
    static constexpr QRgb kColors[kSystemCount] = {0x1f77b4, 0xd62728, 0x2ca02c,
                                                   0x9467bd, 0xff7f0e, 0x7f7f7f};
    const auto index = static_cast<std::size_t>(system);
    return index < kSystemCount ? QColor(kColors[index]) : QColor(Qt::black);
}

namespace {

QString systemLabel(System system) {
    const auto name = systemName(system);
    return QString::fromUtf8(name.data(), qsizetype(name.size()));
}

} // namespace

SystemThetaCharts::SystemThetaCharts(std::shared_ptr<const ModelSnapshot> snapshot, QWidget* parent)
    : QWidget(parent), m_snapshot(std::move(snapshot)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_layers = new QCustomPlot(this);
    m_systems = new QCustomPlot(this);
    for (QCustomPlot* plot : {m_layers, m_systems}) {
        plot->setMinimumSize(200, 150);
    }
    layout->addWidget(m_layers, 3);
    layout->addWidget(m_systems, 2);
    const QString model = model::modelDisplayName(*m_snapshot->model);
    installExportMenu(m_layers, this, [model] {
        return ChartLabel{model + QStringLiteral("-theta-per-layer"), tr("%1 — θ mean per layer").arg(model)};
    });
    installExportMenu(m_systems, this, [model] {
        return ChartLabel{model + QStringLiteral("-theta-per-system"),
                          tr("%1 — θ mean per system").arg(model)};
    });
    for (QCustomPlot* plot : {m_layers, m_systems}) {
        followPalette(plot);
        fitToWidth(plot);
    }

    m_layers->plotLayout()->insertRow(0);
    m_layersTitle =
        new QCPTextElement(m_layers, tr("θ mean per layer"), QFont(font().family(), 10, QFont::Bold));
    m_layers->plotLayout()->addElement(0, 0, m_layersTitle);
    const auto& bySystem = m_snapshot->anatomy.bySystem;
    for (std::size_t s = 0; s < kSystemCount; ++s) {
        const auto system = static_cast<System>(s);
        QCPGraph* graph = m_layers->addGraph();
        graph->setName(systemLabel(system));
        graph->setPen(QPen(systemColor(system), 2));
        graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
        graph->setVisible(bySystem[s].tensors != 0);
        graph->removeFromLegend();
        if (bySystem[s].tensors != 0) {
            graph->addToLegend();
        }
    }
    for (std::size_t s = 0; s < kSystemCount; ++s) {
        const auto system = static_cast<System>(s);
        QCPGraph* after = m_layers->addGraph();
        after->setPen(QPen(systemColor(system), 2, Qt::DashLine));
        after->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, 6));
        after->removeFromLegend();
        m_afterGraphs.push_back(after);
    }
    // The legend below the plot, in a row, so that it never hides a line.
    m_layers->legend->setVisible(true);
    m_layers->legend->setFont(QFont(font().family(), 8));
    m_layers->legend->setIconSize(14, 8); // two entries per row fit a narrow chart
    m_layers->axisRect()->insetLayout()->take(m_layers->legend);
    m_layers->plotLayout()->addElement(2, 0, m_layers->legend);
    m_layers->plotLayout()->setRowStretchFactor(2, 0.001);
    // Two entries per row: the wrap first, then the fill order that rearranges the items by it.
    m_layers->legend->setWrap(2);
    m_layers->legend->setFillOrder(QCPLegend::foColumnsFirst);
    m_layers->legend->setBorderPen(Qt::NoPen);
    m_layers->xAxis->setLabel(tr("layer"));
    m_layers->xAxis->setTicker(integerTicker());
    m_layers->xAxis->setRange(-0.5, std::max<double>(0.5, m_snapshot->anatomy.layerCount() - 0.5));
    m_layers->yAxis->setLabel(tr("θ (°)"));
    m_layers->yAxis->setRange(kThetaMin, kThetaMax);

    m_systems->plotLayout()->insertRow(0);
    m_systemsTitle =
        new QCPTextElement(m_systems, tr("θ mean per system"), QFont(font().family(), 10, QFont::Bold));
    m_systems->plotLayout()->addElement(0, 0, m_systemsTitle);
    auto ticks = QSharedPointer<QCPAxisTickerText>::create();
    int position = 0;
    for (std::size_t s = 0; s < kSystemCount; ++s) {
        if (bySystem[s].tensors == 0) {
            continue;
        }
        auto* bars = new QCPBars(m_systems->xAxis, m_systems->yAxis);
        bars->setName(systemLabel(static_cast<System>(s)));
        bars->setBrush(systemColor(static_cast<System>(s)));
        bars->setPen(Qt::NoPen);
        bars->setProperty("system", int(s));
        bars->setProperty("position", position);
        m_bars.push_back(bars);
        auto* after = new QCPBars(m_systems->xAxis, m_systems->yAxis);
        QColor light = systemColor(static_cast<System>(s));
        light.setAlpha(110);
        after->setName(tr("%1 after the plan").arg(systemLabel(static_cast<System>(s))));
        after->setBrush(light);
        after->setPen(QPen(systemColor(static_cast<System>(s)), 1.2, Qt::DashLine));
        m_afterBars.push_back(after);
        ticks->addTick(position++, systemLabel(static_cast<System>(s)));
    }
    m_systems->xAxis->setTicker(ticks);
    m_systems->xAxis->setRange(-0.6, std::max(0.6, position - 0.4));
    m_systems->yAxis->setLabel(tr("θ (°)"));
    m_systems->yAxis->setRange(kThetaMin, kThetaMax);
    refresh();
}

void SystemThetaCharts::setResults(const model::TensorResults* results) {
    model::followResults(
        this, m_results, results, [this] { scheduleRefresh(); }, [this] { scheduleRefresh(); });
}

void SystemThetaCharts::setPreview(std::map<int, std::optional<double>> thetaAfter) {
    if (thetaAfter.empty() && m_after.empty()) {
        return;
    }
    m_after = std::move(thetaAfter);
    scheduleRefresh();
}

std::optional<double> SystemThetaCharts::meanTheta(System system, std::optional<std::uint32_t> layer,
                                                   bool afterPlan) const {
    double sum = 0;
    int count = 0;
    const auto& tensors = m_snapshot->anatomy.tensors;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (tensors[i].system != system || (layer && tensors[i].layer != layer)) {
            continue;
        }
        const auto after = afterPlan ? m_after.find(int(i)) : m_after.end();
        const std::optional<double> theta = after != m_after.end() ? after->second
                                            : m_results != nullptr ? m_results->theta(int(i))
                                                                   : std::nullopt;
        if (theta.has_value()) {
            sum += theta.value();
            ++count;
        }
    }
    return count == 0 ? std::nullopt : std::optional(sum / count);
}

// Results arrive per tensor: redraw at most every 100 ms.
void SystemThetaCharts::scheduleRefresh() {
    redrawSoon(this, m_refreshPending, 100, [this] { refresh(); });
}

void SystemThetaCharts::refresh() {
    const std::uint32_t layers = m_snapshot->anatomy.layerCount();
    for (std::size_t s = 0; s < kSystemCount; ++s) {
        QVector<double> x;
        QVector<double> y;
        for (std::uint32_t layer = 0; layer < layers; ++layer) {
            if (const auto mean = meanTheta(static_cast<System>(s), layer)) {
                x << layer;
                y << *mean;
            }
        }
        m_layers->graph(static_cast<int>(s))->setData(x, y, true);
    }
    // The plan's θ: only where it changes something, so that the dashes stand for the plan.
    for (std::size_t s = 0; s < kSystemCount; ++s) {
        const auto system = static_cast<System>(s);
        QVector<double> x;
        QVector<double> y;
        for (std::uint32_t layer = 0; layer < layers && !m_after.empty(); ++layer) {
            const auto before = meanTheta(system, layer);
            const auto after = meanTheta(system, layer, true);
            if (after && after != before) {
                x << layer;
                y << *after;
            }
        }
        m_afterGraphs[s]->setData(x, y, true);
    }
    // The dashes are named in the titles: a legend entry per system would not fit.
    setWrappedText(m_layersTitle, m_after.empty() ? tr("θ mean per layer")
                                                  : tr("θ mean per layer\n(dashed: after the plan)"));
    setWrappedText(m_systemsTitle, m_after.empty() ? tr("θ mean per system")
                                                   : tr("θ mean per system\n(light: after the plan)"));
    const bool preview = !m_after.empty();
    for (std::size_t k = 0; k < m_bars.size(); ++k) {
        const auto system = static_cast<System>(m_bars[k]->property("system").toInt());
        const double position = m_bars[k]->property("position").toDouble();
        const auto before = meanTheta(system, std::nullopt);
        const auto after = meanTheta(system, std::nullopt, true);
        const bool changed = preview && after != before;
        // Side by side while the plan changes the system, one wide bar otherwise.
        m_bars[k]->setWidth(changed ? 0.38 : 0.7);
        m_bars[k]->data()->clear();
        if (before) {
            m_bars[k]->addData(changed ? position - 0.2 : position, *before);
        }
        m_afterBars[k]->setWidth(0.38);
        m_afterBars[k]->data()->clear();
        if (changed && after) {
            m_afterBars[k]->addData(position + 0.2, *after);
        }
    }
    m_layers->replot(QCustomPlot::rpQueuedReplot);
    m_systems->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace organ::widgets
