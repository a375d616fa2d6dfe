#include "fleet_controller.h"

#include "engine_thread.h"
#include "fleet_view.h"
#include "job_progress.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMainWindow>
#include <QMenu>
#include <QProgressDialog>
#include <QSettings>
#include <QStatusBar>

namespace organ::app {

FleetController::FleetController(QMainWindow* window, EngineThread* engine, Host host)
    : QObject(window), m_window(window), m_engine(engine), m_host(std::move(host)) {
    const MeasureAndAssembleWorker* worker = m_engine->worker();
    connect(worker, &MeasureAndAssembleWorker::fleetProgress, this,
            [this](quint64 g, quint64 done, quint64 total, const QString& stage) {
                if (g == m_fleet && m_dialog != nullptr) {
                    m_dialog->setLabelText(stage.isEmpty() ? tr("Finding the models…") : stage);
                    m_dialog->setValue(total == 0 ? 0 : int(1000.0 * double(done) / double(total)));
                }
            });
    connect(worker, &MeasureAndAssembleWorker::fleetCancelled, this, [this](quint64 g) {
        if (g == m_fleet) {
            m_window->statusBar()->showMessage(tr("Fleet cancelled"), 10000);
            finish(false, tr("cancelled"));
        }
    });
    connect(worker, &MeasureAndAssembleWorker::fleetReady, this,
            [this](quint64 g, const std::shared_ptr<const FleetReport>& report) {
                if (g != m_fleet) {
                    return;
                }
                if (report->rows.empty()) {
                    finish(false, tr("no models"));
                    m_host.showError(tr("No models found"),
                                     tr("%1 holds no GGUF file and no organ directory.").arg(m_title));
                    return;
                }
                auto* window = new QMainWindow(m_window, Qt::Window);
                window->setObjectName(QStringLiteral("fleetWindow"));
                window->setAttribute(Qt::WA_DeleteOnClose);
                window->setWindowTitle(tr("Fleet — %1").arg(m_title));
                auto* view = new widgets::FleetView(report, m_title, window);
                window->setCentralWidget(view);
                connect(view, &widgets::FleetView::openRequested, this,
                        [this](const QString& path, bool asDonor) {
                            m_host.openFiles({path}, asDonor ? Side::Donor : Side::Recipient);
                            m_window->raise();
                            m_window->activateWindow();
                        });
                window->resize(1100, 760);
                window->show();
                m_view = view;
                m_window->statusBar()->showMessage(
                    tr("Fleet of %1: %2 models").arg(m_title).arg(report->rows.size()), 10000);
                finish(true, m_title);
            });
}

void FleetController::populateMenu(QMenu* file) {
    file->addAction(tr("Open &fleet…"), this, &FleetController::openDialog);
}

void FleetController::openDialog() {
    QSettings settings;
    const QString folder =
        QFileDialog::getExistingDirectory(m_window, tr("Open a fleet: a folder of models"),
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
    if (m_dialog != nullptr) {
        *error = tr("A fleet is being measured already");
        return false;
    }
    auto job = std::make_shared<FleetJob>();
    for (const QString& path : paths) {
        job->paths.push_back(QFileInfo(path).absoluteFilePath().toStdString());
    }
    m_title = paths.size() == 1 ? QDir::toNativeSeparators(QFileInfo(paths.front()).absoluteFilePath())
                                : tr("%1 folders").arg(paths.size());
    m_dialog = jobProgressDialog(m_window, tr("Finding the models…"), tr("Fleet of %1").arg(m_title),
                                 QStringLiteral("fleetProgress"), 460);
    connect(m_dialog, &QProgressDialog::canceled, m_engine, &EngineThread::cancelFleet);
    m_dialog->show();
    m_fleet = m_engine->fleet(std::move(job));
    return true;
}

void FleetController::finish(bool ok, const QString& message) {
    if (m_dialog != nullptr) {
        m_dialog->deleteLater();
        m_dialog = nullptr;
    }
    m_fleet = 0;
    emit fleetEnded(ok, message);
}

} // namespace organ::app
