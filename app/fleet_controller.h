#pragma once

#include "fleet_view.h"
#include "window_host.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>

class QMenu;

namespace organ::app {

// File → Open fleet…: the models in a folder found, measured (through the cache) and ranked on
// the engine's worker, with its progress and Cancel in the status bar; then a fleet window
// (widgets::FleetView) whose rows open into the panes.
class FleetController : public QObject {
    Q_OBJECT
public:
    using Side = WindowHost::Side;
    explicit FleetController(WindowHost host);

    void populateMenu(QMenu* file);
    // Starts measuring the fleet of `paths`; false and `error` when one is running already.
    bool startFleet(const QStringList& paths, QString* error);
    bool isRunning() const { return m_fleet != 0; }
    // The fleet window opened last (null once closed).
    widgets::FleetView* lastView() const { return m_view; }

signals:
    void fleetEnded(bool ok, const QString& message);

private:
    void openDialog();
    void showFleet(const std::shared_ptr<const FleetReport>& report);

    WindowHost m_host;
    QPointer<widgets::FleetView> m_view;
    QString m_title;
    quint64 m_fleet = 0;
};

} // namespace organ::app
