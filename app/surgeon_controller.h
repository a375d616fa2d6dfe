#pragma once

#include "surgeon/surgeon.h"
#include "surgeon_window.h"
#include "window_host.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>

class QAction;
class QMenu;

namespace organ::app {

// Graft → Auto-surgeon…: the search of organ surgeon on the focused model (the recipient, or the
// base of a merge) and the donors chosen from the open models, run on the engine thread while its
// window (widgets::SurgeonWindow) draws each candidate as it is scored. Cancel keeps the best
// found; the chosen plan's vital signs against the recipient and donors are then taken on the
// held-out text, and Load into plan makes it the plan dock's plan as one undoable step.
class SurgeonController : public QObject {
    Q_OBJECT
public:
    SurgeonController(SurgeryController* surgery, widgets::ModelPane* recipient, widgets::ModelPane* donor,
                      WindowHost host);

    void populateMenu(QMenu* graft);
    // The dialog for the focused model, then the search.
    void askAndSearch();

    // What a search is asked to do, models and text by path.
    struct Search {
        QString recipient;
        QStringList donors;
        QString reference; // empty: the objective is the NLL
        QString text;      // empty: the built-in text of vital signs
        double holdout = 0;
        SurgeonRequest request;
    };
    // Starts `search` in the window (made on the first search). Errors (a model not open, a text
    // that cannot be read) are shown in it.
    void search(const Search& search);
    widgets::SurgeonWindow* window() const { return m_window; }

private:
    void startVitals(const std::shared_ptr<const SurgeonRecord>& record, const Search& search);
    widgets::ModelView* viewOf(const QString& path) const; // an open model's view, by path
    std::shared_ptr<const GgufModel> openModel(const QString& path) const;

    SurgeryController* m_surgery;
    widgets::ModelPane* m_recipient;
    widgets::ModelPane* m_donor;
    WindowHost m_host;
    QPointer<widgets::SurgeonWindow> m_window;
    quint64 m_job = 0;      // the search running, 0 when none
    quint64 m_vitals = 0;   // its chosen plan's vital signs
    quint64 m_searches = 0; // counts searches: what an earlier one posts late is dropped
};

} // namespace organ::app
