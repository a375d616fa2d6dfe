#pragma once

#include <QWidget>

class QLabel;
class QListWidget;
class QMenu;
class QScrollArea;
class QSplitter;
class QTableView;
class QToolButton;

namespace organ::model {
class GraftDocument;
class GraftPlanModel;
} // namespace organ::model

namespace organ::widgets {

// The graft plan beside the models: its operations in order (remove, reorder, undo, redo),
// the compatibility report (a finding selects its tensors), and the plan's file actions.
class GraftPlanPanel : public QWidget {
    Q_OBJECT
public:
    explicit GraftPlanPanel(model::GraftDocument* document, QWidget* parent = nullptr);

    QTableView* operationsView() const { return m_operations; }
    QListWidget* findingsView() const { return m_findings; }
    QLabel* summaryLabel() const { return m_summary; }
    QLabel* vitalsLabel() const { return m_vitals; }
    bool isChecking() const { return m_checking; }
    // Check chimera's menu (the arrow beside it): the text the check is taken on.
    QMenu* checkMenu() const { return m_checkMenu; }
    // Check chimera: a run is under way (`text` says what; empty: none; the button then cancels
    // it: checkRequested again), or its result.
    void setChecking(const QString& text);
    // The check's result for this revision of the plan (not shown once the plan has changed).
    void setChimeraVitals(const QString& html, quint64 revision);

signals:
    void openPlanRequested();
    void savePlanRequested();
    void assembleRequested();
    void checkRequested();
    // An operation's row was double-clicked (a merge's opens its dialog).
    void operationActivated(int row);
    // A finding was chosen: select these chimera tensors in the recipient.
    void tensorsRequested(const QStringList& names);

private:
    void refresh();
    int currentRow() const;
    // Shows the check, three quarters of the side's height when it was hidden.
    void showVitals();

    model::GraftDocument* m_document;
    model::GraftPlanModel* m_model = nullptr;
    QTableView* m_operations = nullptr;
    QListWidget* m_findings = nullptr;
    QLabel* m_summary = nullptr;
    QToolButton* m_up = nullptr;
    QToolButton* m_down = nullptr;
    QToolButton* m_remove = nullptr;
    QToolButton* m_clear = nullptr;
    QToolButton* m_save = nullptr;
    QToolButton* m_assemble = nullptr;
    QToolButton* m_check = nullptr;
    QMenu* m_checkMenu = nullptr;
    QLabel* m_vitals = nullptr;
    QScrollArea* m_vitalsArea = nullptr;
    QSplitter* m_side = nullptr; // the check over the findings
    bool m_checking = false;
    quint64 m_shownVitalsFor = 0; // the revision of the plan the shown vital signs are of
};

} // namespace organ::widgets
