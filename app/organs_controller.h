#pragma once

#include "model_pane.h"

#include <QObject>
#include <QString>
#include <QStringList>
#include <functional>

class QMainWindow;
class QMenu;
class QProgressDialog;

namespace organ::widgets {
class ModelView;
}

namespace organ::app {

class EngineThread;

// Organ directories in the window: File → Open organ directory… (as recipient or donor) and
// File → Extract to organ directory… of the current model, on the engine thread with a progress
// dialog and Cancel (nothing is left behind), offering to open the result.
class OrgansController : public QObject {
    Q_OBJECT
public:
    using Side = widgets::ModelPane::Side;
    struct Host {
        std::function<int(const QStringList& paths, Side side)> openFiles;
        std::function<void(const QString& title, const QString& message)> showError;
        std::function<widgets::ModelView*()> currentView;
    };
    OrgansController(QMainWindow* window, EngineThread* engine, Host host);

    void populateMenu(QMenu* file);
    // Extracts `view`'s model into `directory` (which must not exist); false and `error` when it
    // cannot start.
    bool startExtraction(const widgets::ModelView* view, const QString& directory, QString* error);
    QProgressDialog* extractionDialog() const { return m_dialog; }

signals:
    void extractionEnded(bool ok, const QString& message);

private:
    void openDirectoryDialog(Side side);
    void extractDialog();
    void finish(bool ok, const QString& message);

    QMainWindow* m_window;
    EngineThread* m_engine;
    Host m_host;
    QProgressDialog* m_dialog = nullptr;
    quint64 m_extraction = 0;
};

} // namespace organ::app
