#pragma once

#include "purify/purify_model.h"
#include "window_host.h"

#include <QHash>
#include <QObject>
#include <QSet>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

class QDockWidget;
class QMainWindow;
class QMenu;

namespace organ::widgets {
class GraftPlanPanel;
class ModelView;
} // namespace organ::widgets
namespace organ::model {
class GraftDocument;
}

namespace organ::app {

class AssemblyController;
class MergeController;
class PlanAutosave;

// The window's surgery: the graft plan (a GraftDocument) and its dock, the preview on the
// recipient's heatmap, the guards before a model the plan uses is closed or the window quits
// with an unsaved plan, plans on disk and autosaved, and the chimera's assembly on the engine
// thread (AssemblyController). The window creates it and wires it to its panes and menus.
class SurgeryController : public QObject {
    Q_OBJECT
public:
    using Side = widgets::ModelPane::Side;
    SurgeryController(widgets::ModelPane* recipient, widgets::ModelPane* donor, WindowHost host);

    model::GraftDocument* document() const { return m_document; }
    widgets::GraftPlanPanel* panel() const { return m_planPanel; }
    QDockWidget* planDock() const { return m_planDock; }
    PlanAutosave* autosave() const { return m_autosave; }
    AssemblyController* assembly() const { return m_assembly; }
    MergeController* merges() const { return m_merge; }
    widgets::ModelView* findView(const QString& path) const;

    // Edit → Undo/Redo and the Graft menu.
    void populateMenus(QMenu* edit, QMenu* graft);

    // Opens a plan, first opening the models it names that are not open yet.
    bool openPlan(const QString& path, QString* error);
    // An autosaved plan (see PlanAutosave): opened unsaved, its models opened too.
    bool recoverPlan(const QString& path, QString* error);
    bool savePlan(const QString& path, QString* error);

    // Recipient views take drops, donor views are drag sources (after opens and swaps).
    void updateRoles();
    // The plan's preview on the recipient's heatmap: replaced cells, their θ, θ mean before → after.
    void updatePreview();
    // A pane's close guard: closing a model the plan uses asks, and removes its operations.
    bool confirmClose(widgets::ModelView* view);
    // Before the window closes: an unsaved plan is saved, discarded, or the close cancelled.
    bool confirmQuit();
    // Before another plan replaces this one: the same question.
    bool confirmReplace();

    // Adds a purify operation on the recipient's `tensors` (as the plan makes them) with these
    // parameters; its preview's θ are computed on the engine thread.
    void purify(widgets::ModelView* recipient, const std::vector<int>& tensors, const PurifyParams& params);
    // The θ a purified tensor is expected to have, by preview key, once computed.
    std::optional<std::optional<double>> purifiedTheta(const QString& key) const;
    bool purifyPreviewPending() const { return !m_purifyPending.isEmpty(); }

public slots:
    void openPlanDialog();
    // Graft → Quantize recipient… and the recipient's context menu: the Quantize… dialog.
    void quantizeRecipient();
    // Saves the plan to its file (Ctrl+S), asking for one when it has none.
    void savePlanNow();
    // Asks where to save the plan (Save plan as…).
    void savePlanDialog();
    // Offers back, one by one, the plans autosaved by sessions that crashed or were killed.
    void offerRecovery();

private:
    // A tensor whose θ after purification the preview shows, under the caller's key.
    struct PurifyPreviewTensor {
        std::shared_ptr<const GgufModel> model;
        std::string name;
        TensorType target = TensorType::F32;
        QString key;
    };
    bool loadPlan(const QString& path, QString* error, const std::function<void()>& load);
    // Whether an unsaved plan may go: saved, discarded, or not (`question` asked).
    bool confirmUnsaved(const QString& question);
    void startPurifyPreview(std::vector<PurifyPreviewTensor> tensors, const PurifyParams& params);
    // The recipient's Purify… (tree or heatmap): asks for the method and its parameters.
    void purifyDialog(const std::vector<int>& tensors);
    // The recipient's Quantize…: asks for organ quantize's options, adds the plan's quantize
    // operation and, with "Quantize now…", goes on to assemble.
    void quantizeDialog(widgets::ModelView* recipient);

    QMainWindow* m_window;
    widgets::ModelPane* m_recipient;
    widgets::ModelPane* m_donor;
    WindowHost m_host;
    model::GraftDocument* m_document = nullptr;
    widgets::GraftPlanPanel* m_planPanel = nullptr;
    QDockWidget* m_planDock = nullptr;
    PlanAutosave* m_autosave = nullptr;
    AssemblyController* m_assembly = nullptr;
    MergeController* m_merge = nullptr;
    QHash<QString, std::optional<double>> m_purifiedTheta; // preview key → θ after purification
    QSet<QString> m_purifyPending;                         // asked of the engine thread
    int m_undoIndex = 0;                                   // the undo stack's index shown last
};

} // namespace organ::app
