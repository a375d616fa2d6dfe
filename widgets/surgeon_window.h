#pragma once

#include "surgeon/surgeon.h"
#include "vitals/vitals_report.h"

#include <QWidget>
#include <memory>
#include <vector>

class QLabel;
class QPushButton;
class QTableWidget;

namespace organ::widgets {

class SurgeonChangesChart;
class SurgeonObjectiveChart;
class SurgeonParetoChart;

// One auto-surgeon search, shown as it runs (organ surgeon in the window): the objective of every
// candidate over time with the best so far, size against the objective with the Pareto front, the
// chosen plan's changes per block and system, and its vital signs against the recipient and the
// donors on the held-out text. Every chart exports from its context menu. Cancel stops the search
// and keeps the best found; Load into plan gives the chosen plan to the plan dock.
class SurgeonWindow : public QWidget {
    Q_OBJECT
public:
    // `model`: the recipient's name, for titles and exported files.
    SurgeonWindow(const QString& model, QWidget* parent = nullptr);

    // A search begins: what it looks for (the window's headline), the objective's name, the
    // recipient's blocks. Clears what an earlier search showed.
    void start(SurgeonGoal goal, const QString& headline, const QString& objective, std::uint32_t blocks);
    void addCandidate(const SurgeonCandidate& candidate, std::size_t index);
    void setProgress(const QString& text);
    // The search ended with `record` (done, its budget spent or cancelled).
    void setRecord(std::shared_ptr<const SurgeonRecord> record);
    // The search failed before it chose anything.
    void setFailed(const QString& message);
    // The chosen plan's vital signs: running, taken (`report`: the chimera, its parents the
    // recipient and donors), or why not.
    void setVitalsStatus(const QString& text);
    void setVitals(std::shared_ptr<const VitalsReport> report, const QString& text);

    bool isRunning() const { return m_running; }
    const SurgeonRecord* record() const { return m_record.get(); }
    const std::vector<SurgeonCandidate>& candidates() const { return m_candidates; }
    const VitalsReport* vitals() const { return m_vitals.report.get(); }
    // The three charts, as the window's grid shows them.
    struct Charts {
        SurgeonObjectiveChart* objective = nullptr;
        SurgeonParetoChart* pareto = nullptr;
        SurgeonChangesChart* changes = nullptr;
    };
    const Charts& charts() const { return m_charts; }
    QTableWidget* vitalsTable() const { return m_vitals.table; }
    QPushButton* cancelButton() const { return m_cancel; }
    QPushButton* loadButton() const { return m_load; }
    QLabel* status() const { return m_status; }

signals:
    void cancelRequested();
    void loadRequested(const organ::GraftPlan& plan);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void showChosen(std::optional<std::size_t> chosen);

    QString m_model;
    SurgeonGoal m_goal = SurgeonGoal::Prune;
    QString m_objectiveName;
    std::uint32_t m_blocks = 0;
    bool m_running = false;
    std::vector<SurgeonCandidate> m_candidates;
    std::shared_ptr<const SurgeonRecord> m_record;
    QLabel* m_headline = nullptr;
    QLabel* m_status = nullptr;
    QPushButton* m_cancel = nullptr;
    QPushButton* m_load = nullptr;
    Charts m_charts;
    // The chosen plan's vital signs: the report once taken, what is known of them, and the table.
    struct ChosenVitals {
        std::shared_ptr<const VitalsReport> report;
        QLabel* status = nullptr;
        QTableWidget* table = nullptr;
    };
    ChosenVitals m_vitals;
};

} // namespace organ::widgets
