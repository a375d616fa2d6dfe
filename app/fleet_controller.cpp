#include "fleet_controller.h"

#include "fleet/fleet.h"
#include "fleet_view.h"
#include "job_tracker.h"
#include "measure/measure_cache.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMainWindow>
#include <QMenu>
#include <QSettings>

namespace organ::app {

FleetController::FleetController(WindowHost host) : QObject(host.window), m_host(std::move(host)) {}

void FleetController::populateMenu(QMenu* file) {
    file->addAction(tr("Open &fleet…"), this, &FleetController::openDialog);
}

void FleetController::openDialog() {
    QSettings settings;
    const QString folder =
        QFileDialog::getExistingDirectory(m_host.window, tr("Open a fleet: a folder of models"),
                                          settings.value(QStringLiteral("lastFolder")).toString());
    if (folder.isEmpty()) {
        return;
    }
    settings.setValue(QStringLiteral("lastFolder"), QFileInfo(folder).absolutePath());
    QString error;
    if (!startFleet({folder}, &error)) {
        m_host.showError(tr("Cannot open the fleet"), error);
    }
}

bool FleetController::startFleet(const QStringList& paths, QString* error) {
    if (m_fleet != 0) {
        *error = tr("A fleet is being measured already");
        return false;
    }
    std::vector<std::string> folders;
    for (const QString& path : paths) {
        folders.push_back(QFileInfo(path).absoluteFilePath().toStdString());
    }
    m_title = paths.size() == 1 ? QDir::toNativeSeparators(QFileInfo(paths.front()).absoluteFilePath())
                                : tr("%1 folders").arg(paths.size());
    auto report = std::make_shared<FleetReport>();
    JobTracker::Job job;
    job.kind = "fleet";
    job.title = tr("Fleet of %1").arg(m_title);
    job.ended = [this, report](const JobSnapshot& ended) {
        m_fleet = 0;
        if (ended.state == JobState::Cancelled) {
            m_host.say(tr("Fleet cancelled"));
            emit fleetEnded(false, tr("cancelled"));
        } else if (report->rows.empty()) {
            emit fleetEnded(false, tr("no models"));
            m_host.showError(tr("No models found"),
                             tr("%1 holds no GGUF file and no organ directory.").arg(m_title));
        } else {
            showFleet(report);
            emit fleetEnded(true, m_title);
        }
    };
    m_fleet = m_host.jobs->start(
        std::move(job),
        [folders, report](const ProgressFn& progress, const StopToken& stop, const JobTracker::Post&) {
            const MeasurementCache cache;
            FleetOptions options;
            options.cache = &cache;
            return measureFleet(findFleetModels(folders), options, *report, progress, &stop);
        },
        this);
    return true;
}

void FleetController::showFleet(const std::shared_ptr<const FleetReport>& report) {
    auto* window = new QMainWindow(m_host.window, Qt::Window);
    window->setObjectName(QStringLiteral("fleetWindow"));
    window->setAttribute(Qt::WA_DeleteOnClose);
    window->setWindowTitle(tr("Fleet — %1").arg(m_title));
    auto* view = new widgets::FleetView(report, m_title, window);
    window->setCentralWidget(view);
    connect(view, &widgets::FleetView::openRequested, this, [this](const QString& path, bool asDonor) {
        m_host.openFiles({path}, asDonor ? Side::Donor : Side::Recipient);
        m_host.window->raise();
        m_host.window->activateWindow();
    });
    window->resize(1100, 760);
    window->show();
    m_view = view;
    m_host.say(tr("Fleet of %1: %2 models").arg(m_title).arg(report->rows.size()));
}

} // namespace organ::app
