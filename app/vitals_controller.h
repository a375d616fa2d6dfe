#pragma once

#include "window_host.h"

#include <QHash>
#include <QObject>
#include <QStringList>
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
// All of them score one text, chosen on any page or in Check chimera's menu and kept in the
// settings: a file, or the built-in short stories.
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

    // The text vital signs are taken on: a path (empty: the built-in text) and its chunk (0: the text
    // whole, or in chunks of the model's context when it is longer).
    struct Text {
        QString path;
        int chunk = 0;
        bool operator==(const Text&) const = default;
    };
    const Text& text() const { return m_text; }
    void chooseText(const Text& text);

private:
    // Runs `model` against `parents` on the text chosen; `progress` and `done` are called on the GUI thread.
    quint64 run(const ModelWeights& model, std::vector<ModelWeights> parents, const QString& title,
                std::function<void(const QString& stage)> progress,
                std::function<void(std::shared_ptr<const VitalsReport> report, const QString& failure)> done);
    void showChimera(const std::shared_ptr<const VitalsReport>& report);
    // Tells each recipient's page whether a plan changes it and, once checked, the planned
    // chimera's vital signs: its removal suggestions come from them.
    void updatePlannedChimera();
    // Tells each page which models are open: a parent closed since is said to be.
    void updateOpenModels();
    // A text scored without failing goes first in the menu's recent texts.
    void rememberText(const QString& path);
    // Check chimera's menu: the built-in text, the texts scored lately, and Choose a text….
    void fillTextMenu();

    widgets::ModelPane* m_recipient;
    widgets::ModelPane* m_donor;
    SurgeryController* m_surgery;
    WindowHost m_host;
    QHash<widgets::ModelView*, quint64> m_pageJobs; // the run each view's page waits for
    quint64 m_check = 0;                            // the Check chimera run, 0: none
    quint64 m_checkRevision = 0;                    // the plan's revision it runs
    Text m_checkText;                               // and the text
    QString m_checkStamp;                           // as the file was then
    std::shared_ptr<const VitalsReport> m_chimera;  // the last check's result, of
    quint64 m_chimeraRevision = 0;                  // this revision of the plan
    Text m_chimeraText;                             // on this text
    QString m_chimeraStamp;                         // as the file was then
    Text m_text;
    QStringList m_recentTexts; // newest first
};

} // namespace organ::app
