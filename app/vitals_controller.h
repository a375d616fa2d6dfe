#pragma once

#include <QMap>
#include <QObject>
#include <QPointer>
#include <memory>

class QMainWindow;

namespace organ {
struct VitalsReport;
}
namespace organ::widgets {
class ModelPane;
class ModelView;
} // namespace organ::widgets

namespace organ::app {

class EngineThread;
class SurgeryController;

// Vital signs in the window: a model's Vital signs page (its parents: the other open models
// with its vocabulary), "Check chimera" in the graft plan dock (the planned chimera, never
// written, against its recipient and donors), and "Suggest layers to remove", which plans the
// removal on the recipient. Every run is on the engine thread, with progress and cancel.
class VitalsController : public QObject {
    Q_OBJECT
public:
    VitalsController(QMainWindow* window, widgets::ModelPane* recipient, widgets::ModelPane* donor,
                     EngineThread* engine, SurgeryController* surgery);

    // A view was opened: its page's buttons are wired here.
    void attach(widgets::ModelView* view);
    void takeVitals(widgets::ModelView* view);
    // Runs the plan's chimera; false with `error` when the plan cannot be run.
    bool checkChimera(QString* error);

private:
    void connectEngine();
    // Tells each recipient's page whether a plan changes it and, once checked, the planned
    // chimera's vital signs: its removal suggestions come from them.
    void updatePlannedChimera();

    QMainWindow* m_window;
    widgets::ModelPane* m_recipient;
    widgets::ModelPane* m_donor;
    EngineThread* m_engine;
    SurgeryController* m_surgery;
    QMap<quint64, QPointer<widgets::ModelView>> m_pages; // generation → the view whose page asked
    quint64 m_check = 0;                                 // the Check chimera run, 0: none
    quint64 m_checkRevision = 0;                         // the plan's revision it runs
    std::shared_ptr<const VitalsReport> m_chimera;       // the last check's result, of
    quint64 m_chimeraRevision = 0;                       // this revision of the plan
};

} // namespace organ::app
