#pragma once

#include "surgeon/surgeon.h"

#include <QStringList>
#include <optional>
#include <qcustomplot.h>
#include <vector>

namespace organ::widgets {

// What a plan changes, per recipient block (rows) and system (columns): removed blocks, organs
// taken from a donor, a merge's weights per donor. Read from the plan's operations as the
// surgeon writes them (remove_layer, replace of one layer's skeleton or organ, one merge).
struct PlanChanges {
    enum class Kind { Models, Weights };
    Kind kind = Kind::Models;
    QStringList columns; // "attention", "feed-forward"; for a merge "farm\nattention", …
    QStringList models;  // Models: the names the values index (0: the recipient's own)
    struct Cell {
        double value = 0; // Models: −1 removed, 0 the recipient's, d + 1 donor d; Weights: the weight
        QString text;     // what the cell says ("removed", "farm", "0.54"); empty: unchanged
    };
    std::vector<std::vector<Cell>> cells; // [block][column]
};
PlanChanges planChanges(const GraftPlan& plan, std::uint32_t blocks);

// The objective of every candidate against the seconds since the search started: the candidates
// that may be chosen, those that may not (the recipient as it is, beyond a constraint), and the
// best so far as a step line. Points come in as they are scored.
class SurgeonObjectiveChart : public QCustomPlot {
    Q_OBJECT
public:
    SurgeonObjectiveChart(const QString& model, QWidget* parent = nullptr);
    void clear();
    void add(const SurgeonCandidate& candidate, std::size_t index);
    void setObjectiveName(const QString& name);

    // Each point drawn: its candidate, seconds and objective.
    struct Drawn {
        std::size_t candidate = 0;
        double x = 0;
        double y = 0;
    };
    const std::vector<Drawn>& drawn() const { return m_drawn; }
    // The best-so-far line's values, in order.
    std::vector<double> bestSoFar() const;

private:
    void fitRanges();
    QString m_model;
    std::vector<Drawn> m_drawn;
    std::optional<double> m_best;
};

// Size (blocks for a pruning, else megabytes) against the objective: every candidate, the
// non-dominated ones (no other is as small and better) joined as the front, the chosen one marked.
class SurgeonParetoChart : public QCustomPlot {
    Q_OBJECT
public:
    SurgeonParetoChart(const QString& model, QWidget* parent = nullptr);
    void setCandidates(const std::vector<SurgeonCandidate>& candidates, SurgeonGoal goal,
                       std::optional<std::size_t> chosen, const QString& objective);
    // The candidates on the front, by size.
    const std::vector<std::size_t>& front() const { return m_front; }
    double sizeOf(const SurgeonCandidate& candidate) const;

private:
    QString m_model;
    SurgeonGoal m_goal = SurgeonGoal::Prune;
    std::vector<std::size_t> m_front;
};

// The chosen plan's changes as a heatmap of blocks × systems, each cell saying what it holds.
class SurgeonChangesChart : public QCustomPlot {
    Q_OBJECT
public:
    SurgeonChangesChart(const QString& model, QWidget* parent = nullptr);
    // `summary`: what the plan does in a line, the title of the exported chart.
    void setChanges(const PlanChanges& changes, const QString& summary);
    const PlanChanges& changes() const { return m_changes; }

private:
    QString m_model;
    PlanChanges m_changes;
    QString m_summary; // the plan's, in the exported chart's title
    QCPTextElement* m_title = nullptr;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
};

} // namespace organ::widgets
