#include "quant_lab_charts.h"

#include "anatomy/anatomy.h"
#include "chart_export.h"
#include "chart_style.h"
#include "display_names.h"
#include "system_theta_charts.h"

#include <QCoreApplication>
#include <QToolTip>
#include <cmath>
#include <map>

namespace organ::widgets {
namespace {

QString typeName(TensorType type) {
    return QString::fromUtf8(tensorTypeName(type));
}

void logarithmic(QCPAxis* axis) {
    axis->setScaleType(QCPAxis::stLogarithmic);
    QSharedPointer<QCPAxisTickerLog> ticker(new QCPAxisTickerLog);
    axis->setTicker(ticker);
    axis->setNumberFormat(QStringLiteral("eb"));
    axis->setNumberPrecision(0);
}

// A range around positive values, a little beyond them on the logarithmic axis.
void fitLogRange(QCPAxis* axis, double low, double high) {
    if (!(low > 0) || !(high >= low)) {
        axis->setRange(1e-4, 1);
        return;
    }
    axis->setRange(low / 2, high * 2);
}

} // namespace

std::optional<double> quantMetricValue(const TypeError& error, QuantMetric metric) {
    switch (metric) {
    case QuantMetric::RelativeRms:
        return error.relativeRms;
    case QuantMetric::WeightedRms:
        return error.weightedRelativeRms;
    case QuantMetric::CosineLoss:
        return 1.0 - error.cosine;
    case QuantMetric::Theta:
        return error.theta;
    }
    return std::nullopt;
}

QString quantMetricName(QuantMetric metric) {
    switch (metric) {
    case QuantMetric::RelativeRms:
        return QCoreApplication::translate("organ::widgets::QuantLab", "relative RMS error");
    case QuantMetric::WeightedRms:
        return QCoreApplication::translate("organ::widgets::QuantLab",
                                           "relative RMS error, importance-weighted");
    case QuantMetric::CosineLoss:
        return QCoreApplication::translate("organ::widgets::QuantLab", "1 − cosine");
    case QuantMetric::Theta:
        return QCoreApplication::translate("organ::widgets::QuantLab", "θ after quantization (°)");
    }
    return {};
}

QuantErrorHeatmap::QuantErrorHeatmap(const QString& model, QWidget* parent)
    : QCustomPlot(parent), m_model(model) {
    setObjectName(QStringLiteral("quantErrorHeatmap"));
    m_title = addChartTitle(this, tr("Quantization error"));
    xAxis->setLabel(tr("layer"));
    yAxis->setRangeReversed(true);
    xAxis->grid()->setVisible(false);
    yAxis->grid()->setVisible(false);
    m_map = new QCPColorMap(xAxis, yAxis);
    m_scale = new QCPColorScale(this);
    plotLayout()->addElement(1, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_map->setColorScale(m_scale);
    // Plasma: dark where the error is least, yellow where most; never white, which is an absent cell.
    QCPColorGradient gradient;
    gradient.setColorStops({{0.0, QColor(0x0d, 0x08, 0x87)},
                            {0.25, QColor(0x7e, 0x03, 0xa8)},
                            {0.5, QColor(0xcc, 0x47, 0x78)},
                            {0.75, QColor(0xf8, 0x95, 0x40)},
                            {1.0, QColor(0xf0, 0xf9, 0x21)}});
    gradient.setNanHandling(QCPColorGradient::nhTransparent);
    m_map->setGradient(gradient);
    m_map->setInterpolate(false);
    auto* group = new QCPMarginGroup(this);
    axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    setMouseTracking(true);
    finishChart(this, [this] {
        return ChartLabel{
            m_model + QStringLiteral("-quant-error-") + typeName(m_type).toLower(),
            tr("%1 — %2 in %3 per layer and role").arg(m_model, quantMetricName(m_metric), typeName(m_type))};
    });
}

void QuantErrorHeatmap::setReport(std::shared_ptr<const QuantErrorReport> report) {
    m_report = std::move(report);
    m_roles.clear();
    std::map<std::pair<std::size_t, std::string>, int> rowOf; // (anatomical order, role)
    std::uint32_t layers = 0;
    m_hasGlobal = false;
    for (const TensorErrors& t : m_report->tensors) {
        const TensorAnatomy a = classifyTensor(t.name);
        rowOf.emplace(std::pair(a.order, a.role), 0);
        layers = a.layer ? std::max(layers, *a.layer + 1) : layers;
        m_hasGlobal = m_hasGlobal || !a.layer;
    }
    for (auto& [key, row] : rowOf) {
        row = int(m_roles.size());
        m_roles.push_back(key.second);
    }
    m_columns = int(layers) + (m_hasGlobal ? 1 : 0);
    m_cells.assign(std::size_t(m_columns) * m_roles.size(), -1);
    for (std::size_t i = 0; i < m_report->tensors.size(); ++i) {
        const TensorAnatomy a = classifyTensor(m_report->tensors[i].name);
        const int column = a.layer ? int(*a.layer) + (m_hasGlobal ? 1 : 0) : 0;
        m_cells[std::size_t(column) * m_roles.size() + std::size_t(rowOf.at({a.order, a.role}))] = int(i);
    }
    QSharedPointer<QCPAxisTickerText> columns(new QCPAxisTickerText);
    for (int c = 0; c < m_columns; ++c) {
        columns->addTick(c,
                         m_hasGlobal && c == 0 ? tr("global") : QString::number(c - (m_hasGlobal ? 1 : 0)));
    }
    xAxis->setTicker(columns);
    QSharedPointer<QCPAxisTickerText> rows(new QCPAxisTickerText);
    for (int r = 0; r < int(m_roles.size()); ++r) {
        rows->addTick(r, model::displayText(m_roles[std::size_t(r)]));
    }
    yAxis->setTicker(rows);
    showType(m_type, m_metric);
}

void QuantErrorHeatmap::showType(TensorType type, QuantMetric metric) {
    m_type = type;
    m_metric = metric;
    if (!m_report) {
        return;
    }
    const int rows = int(m_roles.size());
    m_values.assign(m_cells.size(), std::nullopt);
    m_map->data()->setSize(std::max(m_columns, 1), std::max(rows, 1));
    m_map->data()->setRange(QCPRange(0, std::max(m_columns - 1, 0)), QCPRange(0, std::max(rows - 1, 0)));
    double low = INFINITY;
    double high = -INFINITY;
    for (int c = 0; c < m_columns; ++c) {
        for (int r = 0; r < rows; ++r) {
            const std::size_t cell = std::size_t(c) * std::size_t(rows) + std::size_t(r);
            const int tensor = m_cells[cell];
            std::optional<double> value;
            if (tensor >= 0) {
                for (const TypeError& e : m_report->tensors[std::size_t(tensor)].types) {
                    value = e.type == type ? quantMetricValue(e, metric) : value;
                }
            }
            m_values[cell] = value;
            m_map->data()->setCell(c, r, value ? *value : std::nan(""));
            if (value) {
                low = std::min(low, *value);
                high = std::max(high, *value);
            }
        }
    }
    m_map->setDataRange(low <= high ? QCPRange(low, low == high ? low + 1e-9 : high) : QCPRange(0, 1));
    m_scale->axis()->setLabel(quantMetricName(metric));
    setWrappedText(m_title, tr("%1 in %2, per layer and role").arg(quantMetricName(metric), typeName(type)));
    xAxis->setRange(-0.5, m_columns - 0.5);
    yAxis->setRange(-0.5, rows - 0.5);
    replot();
}

int QuantErrorHeatmap::tensorAt(int column, int row) const {
    const int rows = int(m_roles.size());
    return column >= 0 && column < m_columns && row >= 0 && row < rows
               ? m_cells[std::size_t(column) * std::size_t(rows) + std::size_t(row)]
               : -1;
}

std::optional<double> QuantErrorHeatmap::valueAt(int column, int row) const {
    const int rows = int(m_roles.size());
    return tensorAt(column, row) >= 0 ? m_values[std::size_t(column) * std::size_t(rows) + std::size_t(row)]
                                      : std::nullopt;
}

std::pair<int, int> QuantErrorHeatmap::cellOf(const std::string& name) const {
    const int rows = int(m_roles.size());
    for (int c = 0; c < m_columns; ++c) {
        for (int r = 0; r < rows; ++r) {
            const int t = tensorAt(c, r);
            if (t >= 0 && m_report->tensors[std::size_t(t)].name == name) {
                return {c, r};
            }
        }
    }
    return {-1, -1};
}

void QuantErrorHeatmap::mouseMoveEvent(QMouseEvent* event) {
    QCustomPlot::mouseMoveEvent(event);
    const QPointF at = event->position();
    const int column = int(std::lround(xAxis->pixelToCoord(at.x())));
    const int row = int(std::lround(yAxis->pixelToCoord(at.y())));
    const int tensor = axisRect()->rect().contains(at.toPoint()) ? tensorAt(column, row) : -1;
    if (tensor < 0) {
        QToolTip::hideText();
        return;
    }
    const std::optional<double> value = valueAt(column, row);
    QToolTip::showText(event->globalPosition().toPoint(),
                       tr("%1 in %2: %3 %4")
                           .arg(model::displayText(m_report->tensors[std::size_t(tensor)].name),
                                typeName(m_type), quantMetricName(m_metric),
                                value ? model::finiteNumber(*value, m_metric == QuantMetric::Theta ? 2 : 5)
                                      : tr("not measured")),
                       this);
}

QuantSystemChart::QuantSystemChart(const QString& model, QWidget* parent)
    : QCustomPlot(parent), m_model(model) {
    setObjectName(QStringLiteral("quantSystemChart"));
    setWrappedText(addChartTitle(this, QString()),
                   tr("Bits per weight against the error, per system (the mean over its tensors' elements)"));
    xAxis->setLabel(tr("bits per weight"));
    logarithmic(yAxis);
    legendBelow(this);
    finishChart(this, [this] {
        return ChartLabel{m_model + QStringLiteral("-quant-error-by-system"),
                          tr("%1 — bits per weight against the error, per system").arg(m_model)};
    });
}

void QuantSystemChart::setReport(std::shared_ptr<const QuantErrorReport> report, QuantMetric metric) {
    clearGraphs();
    clearItems();
    m_series.clear();
    // Per system and type: Σ elements × value, Σ elements, Σ bytes.
    struct Sum {
        double weighted = 0;
        double elements = 0;
        double bytes = 0;
    };
    std::map<System, std::map<TensorType, Sum>> sums;
    for (const TensorErrors& t : report->tensors) {
        const System system = classifyTensor(t.name).system;
        for (const TypeError& e : t.types) {
            if (const auto value = quantMetricValue(e, metric)) {
                Sum& s = sums[system][e.type];
                s.weighted += double(t.elements) * *value;
                s.elements += double(t.elements);
                s.bytes += double(e.bytes);
            }
        }
    }
    double low = INFINITY;
    double high = 0;
    double left = INFINITY;
    double right = 0;
    const bool logScale = metric != QuantMetric::Theta;
    yAxis->setScaleType(logScale ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (logScale) {
        logarithmic(yAxis);
    } else {
        yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        yAxis->setNumberFormat(QStringLiteral("g"));
        yAxis->setNumberPrecision(3);
    }
    for (const auto& [system, types] : sums) {
        std::vector<Point> points;
        for (const auto& [type, s] : types) {
            const double value = s.weighted / s.elements;
            if (logScale && !(value > 0)) {
                continue;
            }
            points.push_back({8.0 * s.bytes / s.elements, value, type});
        }
        std::sort(points.begin(), points.end(),
                  [](const Point& a, const Point& b) { return a.bitsPerWeight < b.bitsPerWeight; });
        QCPGraph* graph = addGraph();
        const auto name = systemName(system);
        graph->setName(QString::fromUtf8(name.data(), qsizetype(name.size())));
        graph->setPen(QPen(systemColor(system), 2));
        graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
        for (const Point& p : points) {
            graph->addData(p.bitsPerWeight, p.value);
            low = std::min(low, p.value);
            high = std::max(high, p.value);
            left = std::min(left, p.bitsPerWeight);
            right = std::max(right, p.bitsPerWeight);
        }
        // The types named once, beside the first system's points: types of one size (Q4_K and
        // IQ4_NL) share a label, and labels alternate below-left and above-right of the line, which
        // falls to the right, so that neighbours neither cross it nor each other.
        if (m_series.empty()) {
            std::vector<std::pair<const Point*, QString>> labels;
            for (const Point& p : points) {
                if (!labels.empty() &&
                    std::abs(labels.back().first->bitsPerWeight - p.bitsPerWeight) < 0.01) {
                    labels.back().second += QStringLiteral(", ") + typeName(p.type);
                } else {
                    labels.emplace_back(&p, typeName(p.type));
                }
            }
            for (std::size_t i = 0; i < labels.size(); ++i) {
                const bool below = i % 2 == 0;
                auto* label = new QCPItemText(this);
                label->position->setCoords(labels[i].first->bitsPerWeight, labels[i].first->value);
                label->setPositionAlignment(below ? Qt::AlignRight | Qt::AlignTop
                                                  : Qt::AlignLeft | Qt::AlignBottom);
                label->setPadding(below ? QMargins(0, 4, 4, 0) : QMargins(4, 0, 0, 4));
                label->setText(labels[i].second);
                label->setFont(QFont(font().family(), 7));
                label->setColor(palette().color(QPalette::WindowText));
            }
        }
        m_series.emplace_back(graph->name(), std::move(points));
    }
    yAxis->setLabel(quantMetricName(metric));
    if (logScale) {
        fitLogRange(yAxis, low, high);
    } else {
        yAxis->setRange(low <= high ? QCPRange(low - 1, high + 1) : QCPRange(0, 90));
    }
    xAxis->setRange(left <= right ? QCPRange(left - 0.5, right + 0.5) : QCPRange(0, 17));
    legend->setWrap(int(std::max<std::size_t>(m_series.size(), 1)));
    replot();
}

} // namespace organ::widgets
