#include "surgeon_charts.h"

#include "anatomy/anatomy.h"
#include "chart_export.h"
#include "chart_style.h"
#include "display_names.h"

#include <QCoreApplication>
#include <algorithm>
#include <cmath>
#include <iterator>

namespace organ::widgets {
namespace {

// The systems the surgeon changes per block, and a tensor of each that a merge's filters place.
struct SystemColumn {
    System system;
    const char* name;
    const char* tensor; // "blk.%1.<role>.weight"
};
const SystemColumn kColumns[] = {
    {System::Skeleton, QT_TRANSLATE_NOOP("organ::widgets::Surgeon", "attention"), "attn_q"},
    {System::Organ, QT_TRANSLATE_NOOP("organ::widgets::Surgeon", "feed-forward"), "ffn_up"}};

QString columnName(const SystemColumn& c) {
    return QCoreApplication::translate("organ::widgets::Surgeon", c.name);
}

QString q(const std::string& text) {
    return QString::fromStdString(text);
}

QColor chosenColor() {
    return QColor(0xd6, 0x27, 0x28);
}
QColor candidateColor() {
    return QColor(0x1f, 0x77, 0xb4);
}
QColor ruledOutColor() {
    return QColor(0x99, 0x99, 0x99);
}

QCPGraph* pointsGraph(QCustomPlot* plot, const QString& name, QCPScatterStyle style) {
    QCPGraph* graph = plot->addGraph();
    graph->setName(name);
    graph->setLineStyle(QCPGraph::lsNone);
    graph->setScatterStyle(style);
    return graph;
}

// The objective's axis: linear with a margin; logarithmic when the values span more than a factor
// of 8 (a pruning whose first block's removal costs ten times the rest would squeeze them flat).
void fitObjectiveAxis(QCPAxis* axis, double low, double high) {
    if (!(low <= high)) {
        axis->setRange(0, 1);
        return;
    }
    const bool wide = low > 0 && high / low > 8;
    axis->setScaleType(wide ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (wide) {
        QSharedPointer<QCPAxisTickerLog> ticker(new QCPAxisTickerLog);
        ticker->setLogBase(high / low > 100 ? 10 : 2);
        axis->setTicker(ticker);
        axis->setNumberFormat(QStringLiteral("g"));
        axis->setNumberPrecision(3);
        axis->setRange(low / 1.3, high * 1.3);
        return;
    }
    axis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    axis->setNumberFormat(QStringLiteral("g"));
    axis->setNumberPrecision(6);
    const double pad = high > low ? (high - low) * 0.08 : std::max(std::abs(low) * 0.05, 0.01);
    axis->setRange(low - pad, high + pad);
}

} // namespace

PlanChanges planChanges(const GraftPlan& plan, std::uint32_t blocks) {
    PlanChanges out;
    const auto merge =
        std::find_if(plan.operations.begin(), plan.operations.end(),
                     [](const GraftOperation& o) { return o.kind == GraftOperation::Kind::Merge; });
    if (merge != plan.operations.end()) {
        out.kind = PlanChanges::Kind::Weights;
        const MergeSpec& spec = merge->merge;
        for (const std::size_t m : spec.mergedModels()) {
            for (const SystemColumn& c : kColumns) {
                out.columns << q(spec.models[m].model) + u'\n' + columnName(c);
            }
        }
        out.cells.assign(blocks, std::vector<PlanChanges::Cell>(std::size_t(out.columns.size())));
        for (std::uint32_t b = 0; b < blocks; ++b) {
            int column = 0;
            for (const std::size_t m : spec.mergedModels()) {
                const auto weight = spec.models[m].parameters.find("weight");
                for (const SystemColumn& c : kColumns) {
                    PlanChanges::Cell& cell = out.cells[b][std::size_t(column++)];
                    const auto place =
                        TensorPlace::of("blk." + std::to_string(b) + "." + c.tensor + ".weight", blocks);
                    const std::optional<double> value = weight != spec.models[m].parameters.end()
                                                            ? resolveParam(weight->second, place)
                                                            : std::nullopt;
                    cell.value = value.value_or(NAN);
                    cell.text = value ? model::finiteNumber(*value, 2) : QString();
                }
            }
        }
        return out;
    }
    out.kind = PlanChanges::Kind::Models;
    for (const SystemColumn& c : kColumns) {
        out.columns << columnName(c);
    }
    out.models << QCoreApplication::translate("organ::widgets::Surgeon", "recipient");
    for (const auto& donor : plan.donors) {
        out.models << q(donor.first);
    }
    out.cells.assign(blocks, std::vector<PlanChanges::Cell>(std::size(kColumns)));
    for (const GraftOperation& o : plan.operations) {
        if (o.kind == GraftOperation::Kind::RemoveLayer && o.toLayer < blocks) {
            for (PlanChanges::Cell& cell : out.cells[o.toLayer]) {
                cell = {-1, QCoreApplication::translate("organ::widgets::Surgeon", "removed")};
            }
        } else if (o.kind == GraftOperation::Kind::Replace && o.select.system && o.select.firstLayer) {
            const auto donor = std::find_if(plan.donors.begin(), plan.donors.end(),
                                            [&](const auto& d) { return d.first == o.donor; });
            const auto column =
                std::find_if(std::begin(kColumns), std::end(kColumns),
                             [&](const SystemColumn& c) { return c.system == *o.select.system; });
            if (donor == plan.donors.end() || column == std::end(kColumns)) {
                continue;
            }
            const std::uint32_t last = o.select.lastLayer.value_or(*o.select.firstLayer);
            for (std::uint32_t b = *o.select.firstLayer; b <= last && b < blocks; ++b) {
                out.cells[b][std::size_t(column - std::begin(kColumns))] = {
                    double(donor - plan.donors.begin() + 1), q(o.donor)};
            }
        }
    }
    return out;
}

SurgeonObjectiveChart::SurgeonObjectiveChart(const QString& model, QWidget* parent)
    : QCustomPlot(parent), m_model(model) {
    setObjectName(QStringLiteral("surgeonObjectiveChart"));
    setWrappedText(addChartTitle(this, QString()), tr("The objective of every candidate over time"));
    xAxis->setLabel(tr("seconds since the search started"));
    pointsGraph(this, tr("candidates that may be chosen"),
                QCPScatterStyle(QCPScatterStyle::ssDisc, candidateColor(), 6));
    pointsGraph(this, tr("not chosen (the recipient as it is, incomplete, beyond a constraint)"),
                QCPScatterStyle(QCPScatterStyle::ssCircle, ruledOutColor(), 6));
    QCPGraph* best = addGraph();
    best->setName(tr("best so far"));
    best->setLineStyle(QCPGraph::lsStepLeft);
    best->setPen(QPen(chosenColor(), 2));
    legendBelow(this);
    setObjectiveName(tr("objective"));
    finishChart(this, [this] {
        return ChartLabel{m_model + QStringLiteral("-surgeon-objective"),
                          tr("%1 — the auto-surgeon's candidates over time").arg(m_model)};
    });
}

void SurgeonObjectiveChart::setObjectiveName(const QString& name) {
    yAxis->setLabel(name);
}

void SurgeonObjectiveChart::clear() {
    for (int g = 0; g < graphCount(); ++g) {
        graph(g)->data()->clear();
    }
    m_drawn.clear();
    m_best.reset();
    fitRanges();
    replot();
}

void SurgeonObjectiveChart::add(const SurgeonCandidate& candidate, std::size_t index) {
    const double y = candidate.score.objective;
    if (!std::isfinite(y)) {
        return;
    }
    const double x = candidate.seconds;
    m_drawn.push_back({index, x, y});
    graph(candidate.feasible ? 0 : 1)->addData(x, y);
    if (candidate.feasible) {
        m_best = m_best ? std::min(*m_best, y) : y;
        graph(2)->addData(x, *m_best);
    }
    fitRanges();
    replot(QCustomPlot::rpQueuedReplot);
}

std::vector<double> SurgeonObjectiveChart::bestSoFar() const {
    std::vector<double> out;
    for (const QCPGraphData& d : *graph(2)->data()) {
        out.push_back(d.value);
    }
    return out;
}

void SurgeonObjectiveChart::fitRanges() {
    double low = INFINITY;
    double high = -INFINITY;
    double right = 1;
    for (const Drawn& d : m_drawn) {
        low = std::min(low, d.y);
        high = std::max(high, d.y);
        right = std::max(right, d.x);
    }
    xAxis->setRange(0, right * 1.05);
    fitObjectiveAxis(yAxis, low, high);
}

SurgeonParetoChart::SurgeonParetoChart(const QString& model, QWidget* parent)
    : QCustomPlot(parent), m_model(model) {
    setObjectName(QStringLiteral("surgeonParetoChart"));
    setWrappedText(addChartTitle(this, QString()), tr("Size against the objective: the Pareto front"));
    pointsGraph(this, tr("candidates"), QCPScatterStyle(QCPScatterStyle::ssCircle, ruledOutColor(), 6));
    QCPGraph* front = addGraph();
    front->setName(tr("the front (no candidate is as small and better)"));
    front->setPen(QPen(candidateColor(), 2));
    front->setLineStyle(QCPGraph::lsStepLeft);
    front->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, candidateColor(), 8));
    pointsGraph(this, tr("the chosen plan"), QCPScatterStyle(QCPScatterStyle::ssStar, chosenColor(), 14));
    legendBelow(this);
    finishChart(this, [this] {
        return ChartLabel{m_model + QStringLiteral("-surgeon-pareto"),
                          tr("%1 — the auto-surgeon's candidates: size against the objective").arg(m_model)};
    });
}

double SurgeonParetoChart::sizeOf(const SurgeonCandidate& candidate) const {
    return m_goal == SurgeonGoal::Prune ? double(candidate.score.layers)
                                        : double(candidate.score.bytes) / 1e6;
}

void SurgeonParetoChart::setCandidates(const std::vector<SurgeonCandidate>& candidates, SurgeonGoal goal,
                                       std::optional<std::size_t> chosen, const QString& objective) {
    m_goal = goal;
    xAxis->setLabel(goal == SurgeonGoal::Prune ? tr("blocks") : tr("tensor megabytes"));
    xAxis->setTicker(goal == SurgeonGoal::Prune ? integerTicker()
                                                : QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    yAxis->setLabel(objective);
    for (int g = 0; g < graphCount(); ++g) {
        graph(g)->data()->clear();
    }
    // By size, then objective: a candidate is on the front when it beats every smaller one.
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        if (std::isfinite(candidates[i].score.objective)) {
            order.push_back(i);
        }
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const double sa = sizeOf(candidates[a]);
        const double sb = sizeOf(candidates[b]);
        return sa != sb ? sa < sb : candidates[a].score.objective < candidates[b].score.objective;
    });
    m_front.clear();
    double low = INFINITY;
    double high = -INFINITY;
    double left = INFINITY;
    double right = -INFINITY;
    std::optional<double> bestSmaller;
    for (const std::size_t i : order) {
        const SurgeonCandidate& c = candidates[i];
        const double x = sizeOf(c);
        const double y = c.score.objective;
        graph(0)->addData(x, y);
        low = std::min(low, y);
        high = std::max(high, y);
        left = std::min(left, x);
        right = std::max(right, x);
        if (c.feasible && (!bestSmaller || y < *bestSmaller)) {
            bestSmaller = y;
            m_front.push_back(i);
            graph(1)->addData(x, y);
        }
    }
    if (chosen && *chosen < candidates.size() && std::isfinite(candidates[*chosen].score.objective)) {
        graph(2)->addData(sizeOf(candidates[*chosen]), candidates[*chosen].score.objective);
    }
    const double xPad = right > left ? (right - left) * 0.08 : std::max(std::abs(left) * 0.05, 0.5);
    xAxis->setRange(left <= right ? QCPRange(left - xPad, right + xPad) : QCPRange(0, 1));
    fitObjectiveAxis(yAxis, low, high);
    replot(QCustomPlot::rpQueuedReplot);
}

SurgeonChangesChart::SurgeonChangesChart(const QString& model, QWidget* parent)
    : QCustomPlot(parent), m_model(model) {
    setObjectName(QStringLiteral("surgeonChangesChart"));
    m_title = addChartTitle(this, QString());
    setWrappedText(m_title, tr("The chosen plan's changes per block and system"));
    yAxis->setLabel(tr("block"));
    yAxis->setRangeReversed(true);
    yAxis->setTicker(integerTicker());
    xAxis->grid()->setVisible(false);
    yAxis->grid()->setVisible(false);
    m_map = new QCPColorMap(xAxis, yAxis);
    m_map->setInterpolate(false);
    m_scale = new QCPColorScale(this);
    plotLayout()->addElement(1, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_map->setColorScale(m_scale);
    auto* group = new QCPMarginGroup(this);
    axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    finishChart(this, [this] {
        return ChartLabel{m_model + QStringLiteral("-surgeon-plan"),
                          tr("%1 — the auto-surgeon's chosen plan: %2").arg(m_model, m_summary)};
    });
}

void SurgeonChangesChart::setChanges(const PlanChanges& changes, const QString& summary) {
    m_changes = changes;
    setWrappedText(m_title, tr("The chosen plan's changes per block and system"));
    m_summary = summary;
    clearItems();
    const int columns = int(changes.columns.size());
    const int rows = int(changes.cells.size());
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (int c = 0; c < columns; ++c) {
        ticker->addTick(c, changes.columns[c]);
    }
    xAxis->setTicker(ticker);
    m_map->data()->setSize(std::max(columns, 1), std::max(rows, 1));
    m_map->data()->setRange(QCPRange(0, std::max(columns - 1, 0)), QCPRange(0, std::max(rows - 1, 0)));
    QCPColorGradient gradient;
    if (changes.kind == PlanChanges::Kind::Models) {
        // Removed grey, the recipient's own pale, each donor the colour the plan gives it everywhere.
        const int levels = int(changes.models.size()) + 1; // removed, recipient, donors
        QMap<double, QColor> stops;
        stops.insert(0.0, QColor(0x70, 0x70, 0x70));
        stops.insert(1.0 / std::max(levels - 1, 1), QColor(0xec, 0xf2, 0xf8));
        for (int d = 2; d < levels; ++d) {
            stops.insert(double(d) / (levels - 1), model::donorColor(d - 2));
        }
        gradient.setColorStops(stops);
        gradient.setLevelCount(std::max(levels, 2));
        m_map->setDataRange(QCPRange(-1, std::max(levels - 2, 0)));
        m_scale->setVisible(false);
    } else {
        // Viridis: never white, so that a cell at the top of the scale stands out from the page.
        gradient.setColorStops({{0.0, QColor(0x44, 0x01, 0x54)},
                                {0.5, QColor(0x21, 0x91, 0x8c)},
                                {1.0, QColor(0xfd, 0xe7, 0x25)}});
        gradient.setNanHandling(QCPColorGradient::nhTransparent);
        double high = 0;
        for (const auto& row : changes.cells) {
            for (const auto& cell : row) {
                if (std::isfinite(cell.value)) {
                    high = std::max(high, cell.value);
                }
            }
        }
        m_map->setDataRange(QCPRange(0, std::max(high, 0.01)));
        m_scale->setVisible(true);
        m_scale->axis()->setLabel(tr("merge weight"));
    }
    m_map->setGradient(gradient);
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < columns; ++c) {
            const PlanChanges::Cell& cell = changes.cells[std::size_t(r)][std::size_t(c)];
            m_map->data()->setCell(c, r, cell.value);
            if (cell.text.isEmpty()) {
                continue;
            }
            auto* label = new QCPItemText(this);
            label->position->setCoords(c, r);
            label->setText(cell.text);
            label->setFont(QFont(font().family(), 8));
            const bool dark = changes.kind == PlanChanges::Kind::Models
                                  ? cell.value != 0
                                  : cell.value < 0.6 * m_map->dataRange().upper;
            label->setColor(dark ? Qt::white : Qt::black);
        }
    }
    m_map->setVisible(rows > 0 && columns > 0);
    xAxis->setRange(-0.5, columns - 0.5);
    yAxis->setRange(-0.5, rows - 0.5);
    replot(QCustomPlot::rpQueuedReplot);
}

} // namespace organ::widgets
