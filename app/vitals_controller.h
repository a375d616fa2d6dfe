#pragma once

#include "window_host.h"

#include <QHash>
#include <QObject>
#include <functional>
#include <memory>
#include <vector>

namespace organ {
struct VitalsReport;
struct VitalsRequest;
class ModelWeights;
} // namespace organ

namespace organ::app {

// Vital signs in the window: a model's Vital signs page (its parents: the other open models
// with its vocabulary), "Check chimera" in the graft plan dock (the planned chimera, never
// written, against its recipient and donors), and "Suggest layers to remove", which plans the
// removal on the recipient. Every run is a job on the engine's worker, with progress and cancel.
class VitalsController : public QObject {
    Q_OBJECT
public:
    VitalsController(widgets::ModelPane* recipient, widgets::ModelPane* donor, SurgeryController* surgery,
                     WindowHost host);

    // A view was opened: its page's buttons are wired here.
    void attach(widgets::ModelView* view);
    void takeVitals(widgets::ModelView* view);
    // Runs the plan's chimera; false with `error` when the plan cannot be run.
    bool checkChimera(QString* error);

private:
    // Runs `model` against `parents`; `progress` and `done` are called on the GUI thread.
    quint64 run(const ModelWeights& model, std::vector<ModelWeights> parents, const QString& title,
                std::function<void(const QString& stage)> progress,
                std::function<void(std::shared_ptr<const VitalsReport> report, const QString& failure)> done);
    void showChimera(const std::shared_ptr<const VitalsReport>& report);
    // Tells each recipient's page whether a plan changes it and, once checked, the planned
    // chimera's vital signs: its removal suggestions come from them.
    void updatePlannedChimera();

    widgets::ModelPane* m_recipient;
    widgets::ModelPane* m_donor;
    SurgeryController* m_surgery;
    WindowHost m_host;
    QHash<widgets::ModelView*, quint64> m_pageJobs; // the run each view's page waits for
    quint64 m_check = 0;                            // the Check chimera run, 0: none
    quint64 m_checkRevision = 0;                    // the plan's revision it runs
    std::shared_ptr<const VitalsReport> m_chimera;  // the last check's result, of
    quint64 m_chimeraRevision = 0;                  // this revision of the plan
};

} // namespace organ::app
