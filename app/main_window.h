#pragma once

#include <QMainWindow>
#include <QStringList>

class QSplitter;
class QTabWidget;

#include "model_pane.h"

namespace organ::widgets {
class JobStatus;
class ModelView;
} // namespace organ::widgets

namespace organ::model {
class OpenModels;
}

namespace organ::app {

class JobTracker;
class MeasureController;
class DiffController;
class SpectralController;
class RecentFiles;
class SurgeryController;
class SurgeonController;
class VitalsController;
class QuantLabController;
class OrgansController;
class FleetController;

// The workbench window: wiring only. Each open model is a tab holding a ModelView.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    using Side = widgets::ModelPane::Side;

    // Whether a file opened goes into File → Open Recent (the demo's copies, deleted with the
    // window, do not).
    enum class Recent { Remember, Skip };
    // Opens each file in a tab of the recipient (left) or donor (right) pane; a file that
    // cannot be opened is reported in a dialog naming the file and the problem. Returns how
    // many opened.
    int openFiles(const QStringList& paths, Side side = Side::Recipient, Recent recent = Recent::Remember);
    QTabWidget* documents() const { return m_recipient->tabs(); } // the recipient's tabs
    widgets::ModelPane* pane(Side side) const { return side == Side::Recipient ? m_recipient : m_donor; }
    widgets::ModelView* currentView() const {
        return m_recipient->currentView();
    } // the recipient's current model
    QStringList recentFiles() const;
    // Every long job of the window runs through it; the status bar shows them.
    JobTracker* jobs() const { return m_jobs; }
    widgets::JobStatus* jobStatus() const { return m_jobStatus; }
    MeasureController* measurements() const { return m_measure; }
    DiffController* diffs() const { return m_diff; }
    SpectralController* spectral() const { return m_spectral; }

    // Writes the current model's measurement as JSON, CSV or Markdown (by extension), as
    // `organ measure` does. Returns false with `error` set when there is nothing to export.
    bool exportMeasurement(const QString& path, QString* error);

    // Surgery: the graft plan, its dock, plans on disk and the chimera's assembly.
    SurgeryController* surgery() const { return m_surgery; }
    VitalsController* vitals() const { return m_vitals; }
    QuantLabController* quantLab() const { return m_quantLab; }
    OrgansController* organs() const { return m_organs; }
    FleetController* fleet() const { return m_fleet; }
    SurgeonController* surgeon() const { return m_surgeon; }

public slots:
    void openDialog(Side side = Side::Recipient);
    void swapPanes();
    void exportMeasurementDialog();
    void showUserGuide(); // Help → User guide (F1): resources/user-guide.md
    void closeCurrent();
    void showAbout();

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void buildMenus();
    // The pane holding the keyboard focus, else the recipient's.
    widgets::ModelPane* focusedPane() const;
    void showError(const QString& title, const QString& message);
    void updateTitle();
    // The status bar's report follows the tracker's jobs (not the inspector's portraits: they
    // are what the user looks at, drawn at once).
    void connectJobStatus();
    // Δθ of the current donor against the current recipient, when both are measured.
    void updateComparison();
    // An empty pane beside a full one shrinks to its instructions; when both hold models
    // they share the width as the user last split it.
    void updatePaneSizes();
    void rememberPaneShare();
    widgets::ModelPane* m_recipient = nullptr;
    widgets::ModelPane* m_donor = nullptr;
    QSplitter* m_panes = nullptr;
    bool m_bothPanesUsed = false;
    RecentFiles* m_recent = nullptr;
    JobTracker* m_jobs = nullptr;
    model::OpenModels* m_models = nullptr;
    MeasureController* m_measure = nullptr;
    SpectralController* m_spectral = nullptr;
    DiffController* m_diff = nullptr;
    widgets::JobStatus* m_jobStatus = nullptr;
    SurgeryController* m_surgery = nullptr;
    VitalsController* m_vitals = nullptr;
    QuantLabController* m_quantLab = nullptr;
    OrgansController* m_organs = nullptr;
    FleetController* m_fleet = nullptr;
    SurgeonController* m_surgeon = nullptr;
};

} // namespace organ::app
