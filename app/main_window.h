#pragma once

#include <QMainWindow>
#include <QMap>
#include <QPointer>
#include <QStringList>
#include <cstdint>
#include <functional>
#include <vector>

class QDockWidget;
class QLabel;
class QProgressDialog;
class QMenu;
class QProgressBar;
class QSplitter;
class QPushButton;
class QStackedWidget;
class QTabWidget;

#include "model_pane.h"

namespace organ::widgets {
class GraftPlanPanel;
class ModelView;
} // namespace organ::widgets
namespace organ::model {
class GraftDocument;
}

namespace organ::app {

class EngineThread;
class PlanAutosave;

// The workbench window: wiring only. Each open model is a tab holding a ModelView.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    using Side = widgets::ModelPane::Side;

    // Opens each file in a tab of the recipient (left) or donor (right) pane; a file that
    // cannot be opened is reported in a dialog naming the file and the problem. Returns how
    // many opened.
    int openFiles(const QStringList& paths, Side side = Side::Recipient);
    QTabWidget* documents() const { return m_recipient->tabs(); } // the recipient's tabs
    widgets::ModelPane* pane(Side side) const { return side == Side::Recipient ? m_recipient : m_donor; }
    widgets::ModelView* currentView() const; // the recipient's current model
    QStringList recentFiles() const;
    EngineThread* engine() const { return m_engine; }

    // Writes the current model's measurement as JSON, CSV or Markdown (by extension), as
    // `organ measure` does. Returns false with `error` set when there is nothing to export.
    bool exportMeasurement(const QString& path, QString* error);

    // Surgery. The plan the drops build; its panel (a dock); plans on disk; the chimera's
    // assembly on the engine thread (assemblyEnded reports the outcome).
    model::GraftDocument* graftDocument() const { return m_document; }
    widgets::GraftPlanPanel* planPanel() const { return m_planPanel; }
    // Opens a plan, first opening the models it names that are not open yet.
    bool openPlan(const QString& path, QString* error);
    // An autosaved plan (see PlanAutosave): opened unsaved, its models opened too.
    bool recoverPlan(const QString& path, QString* error);
    PlanAutosave* autosave() const { return m_autosave; }
    bool savePlan(const QString& path, QString* error);
    bool startAssembly(const QString& output, QString* error);
    QProgressDialog* assemblyDialog() const { return m_assemblyDialog; }
    widgets::ModelView* findView(const QString& path) const;

public slots:
    void openDialog(Side side = Side::Recipient);
    void swapPanes();
    void exportMeasurementDialog();
    void showUserGuide(); // Help → User guide (F1): resources/user-guide.md
    void closeCurrent();
    void showAbout();
    void openPlanDialog();
    void savePlanDialog();
    void assembleDialog();
    // Offers back, one by one, the plans autosaved by sessions that crashed or were killed.
    void offerRecovery();

signals:
    void assemblyEnded(bool ok, const QString& message);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void buildMenus();
    // The pane holding the keyboard focus, else the recipient's.
    widgets::ModelPane* focusedPane() const;
    void rememberRecent(const QString& path);
    void rebuildRecentMenus();
    void showError(const QString& title, const QString& message);
    void updateTitle();
    void buildStatusBar();
    void connectEngine();
    void jobEnded(quint64 generation, const QString& message);
    // Δθ of the current donor against the current recipient, when both are measured.
    void updateComparison();
    // An empty pane beside a full one shrinks to its instructions; when both hold models
    // they share the width as the user last split it.
    void updatePaneSizes();
    void rememberPaneShare();
    void buildSurgery();
    // Recipient views take drops, donor views are drag sources (after opens and swaps).
    void updateSurgeryRoles();
    // The plan's preview on the recipient's heatmap: replaced cells, their θ, θ mean before → after.
    void updatePreview();
    bool confirmClose(widgets::ModelView* view);
    bool loadPlan(const QString& path, QString* error, const std::function<void()>& load);
    void assemblyProgress(quint64 done, quint64 total, const QString& stage);
    void assemblyFinished(bool ok, const QString& message);

    widgets::ModelPane* m_recipient = nullptr;
    widgets::ModelPane* m_donor = nullptr;
    QSplitter* m_panes = nullptr;
    bool m_bothPanesUsed = false;
    QMenu* m_recentMenu = nullptr;
    QMenu* m_recentDonorMenu = nullptr;
    EngineThread* m_engine = nullptr;
    QMap<quint64, QPointer<widgets::ModelView>> m_jobs;      // measurement generation → its view
    QMap<quint64, QPointer<widgets::ModelView>> m_portraits; // portrait generation → its view
    QLabel* m_jobLabel = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
    model::GraftDocument* m_document = nullptr;
    widgets::GraftPlanPanel* m_planPanel = nullptr;
    QDockWidget* m_planDock = nullptr;
    PlanAutosave* m_autosave = nullptr;
    QProgressDialog* m_assemblyDialog = nullptr;
    quint64 m_assembly = 0;
    qint64 m_assemblyStarted = 0; // ms since the epoch, when the current stage began
    QString m_assemblyStage;
    std::vector<std::uint64_t> m_assemblyEnds; // cumulative bytes at the end of each tensor
};

} // namespace organ::app
