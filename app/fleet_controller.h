#pragma once

#include "fleet_view.h"
#include "model_pane.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <functional>

class QMainWindow;
class QMenu;
class QProgressDialog;

namespace organ::app {

class EngineThread;

// File → Open fleet…: the models in a folder found, measured (through the cache) and ranked on
// the engine thread, with a progress dialog and Cancel; then a fleet window (widgets::FleetView)
// whose rows open into the panes.
class FleetController : public QObject {
    Q_OBJECT
public:
    using Side = widgets::ModelPane::Side;
    struct Host {
        std::function<int(const QStringList& paths, Side side)> openFiles;
        std::function<void(const QString& title, const QString& message)> showError;
    };
    FleetController(QMainWindow* window, EngineThread* engine, Host host);

    void populateMenu(QMenu* file);
    // Starts measuring the fleet of `paths`; false and `error` when one is running already.
    bool startFleet(const QStringList& paths, QString* error);
    QProgressDialog* progressDialog() const { return m_dialog; }
    // The fleet window opened last (null once closed).
    widgets::FleetView* lastView() const { return m_view; }

signals:
    void fleetEnded(bool ok, const QString& message);

private:
    void openDialog();
    void finish(bool ok, const QString& message);

    QMainWindow* m_window;
    EngineThread* m_engine;
    Host m_host;
    QProgressDialog* m_dialog = nullptr;
    QPointer<widgets::FleetView> m_view;
    QString m_title;
    quint64 m_fleet = 0;
};

} // namespace organ::app
