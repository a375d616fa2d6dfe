#include "organs_controller.h"

#include "display_names.h"
#include "engine_thread.h"
#include "job_progress.h"
#include "measure/measure_report.h"
#include "model_view.h"
#include "open_offer.h"
#include "support/text_format.h"
#include "write_folder.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QMainWindow>
#include <QMenu>
#include <QMessageBox>
#include <QPointer>
#include <QProgressDialog>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>

namespace organ::app {

OrgansController::OrgansController(QMainWindow* window, EngineThread* engine, Host host)
    : QObject(window), m_window(window), m_engine(engine), m_host(std::move(host)) {
    const MeasureAndAssembleWorker* worker = m_engine->worker();
    connect(worker, &MeasureAndAssembleWorker::extractionProgress, this,
            [this](quint64 g, quint64 done, quint64 total) {
                if (g == m_extraction && m_dialog != nullptr) {
                    m_dialog->setLabelText(tr("Extracting: %1 of %2")
                                               .arg(QString::fromStdString(humanBytes(done)),
                                                    QString::fromStdString(humanBytes(total))));
                    m_dialog->setValue(total == 0 ? 1000 : int(1000.0 * double(done) / double(total)));
                }
            });
    connect(worker, &MeasureAndAssembleWorker::extractionCancelled, this, [this](quint64) {
        m_window->statusBar()->showMessage(tr("Extraction cancelled: nothing was written"), 10000);
        finish(false, tr("cancelled"));
    });
    connect(worker, &MeasureAndAssembleWorker::extractionFailed, this,
            [this](quint64, const QString& message) {
                finish(false, message);
                m_host.showError(tr("The model could not be extracted"), message);
            });
    connect(worker, &MeasureAndAssembleWorker::extracted, this, [this](quint64, const QString& directory) {
        finish(true, directory);
        offerToOpen(m_window, QMessageBox::Information, tr("Organs extracted"),
                    tr("Wrote the organ directory %1.").arg(directory), QStringLiteral("extractionResult"),
                    QStringLiteral("openOrgans"),
                    [this, directory](Side side) { m_host.openFiles({directory}, side); })
            ->open();
        m_window->statusBar()->showMessage(tr("Extracted %1").arg(QFileInfo(directory).fileName()), 10000);
    });
}

void OrgansController::populateMenu(QMenu* file) {
    file->addAction(tr("Open organ director&y…"), this, [this] { openDirectoryDialog(Side::Recipient); });
    file->addAction(tr("Open organ directory as donor…"), this, [this] { openDirectoryDialog(Side::Donor); });
    file->addAction(tr("E&xtract to organ directory…"), this, &OrgansController::extractDialog);
}

void OrgansController::openDirectoryDialog(Side side) {
    QSettings settings;
    const QString folder = QFileDialog::getExistingDirectory(
        m_window, tr("Open an organ directory"), settings.value(QStringLiteral("lastFolder")).toString());
    if (!folder.isEmpty()) {
        settings.setValue(QStringLiteral("lastFolder"), QFileInfo(folder).absolutePath());
        m_host.openFiles({folder}, side);
    }
}

// The model is the one focused when the menu was chosen, named in the dialog: the focus moves
// while the dialog is open, so it is not looked up again afterwards.
void OrgansController::extractDialog() {
    const QPointer<widgets::ModelView> view = m_host.currentView();
    if (view == nullptr) {
        m_host.showError(tr("Nothing to extract"), tr("Open a model first."));
        return;
    }
    const QFileInfo source(QString::fromStdString(view->snapshot().model->path()));
    QFileDialog dialog(m_window, tr("Extract %1 to a new organ directory").arg(source.fileName()));
    dialog.setObjectName(QStringLiteral("extractDialog"));
    dialog.setAcceptMode(QFileDialog::AcceptSave);
    dialog.setFileMode(QFileDialog::AnyFile);
    dialog.setOption(QFileDialog::DontConfirmOverwrite); // an existing target is refused, never replaced
    dialog.setLabelText(QFileDialog::Accept, tr("Extract"));
    dialog.setLabelText(QFileDialog::FileName, tr("Directory for %1:").arg(source.fileName()));
    dialog.setDirectory(widgets::proposedWriteFolder(source.absolutePath()));
    dialog.selectFile(source.completeBaseName() + QStringLiteral("-organs"));
    if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty()) {
        return;
    }
    QString error;
    if (view == nullptr) {
        m_host.showError(tr("Cannot extract the model"),
                         tr("%1 was closed meanwhile").arg(source.fileName()));
    } else if (!startExtraction(view, dialog.selectedFiles().front(), &error)) {
        m_host.showError(tr("Cannot extract the model"), error);
    }
}

bool OrgansController::startExtraction(const widgets::ModelView* view, const QString& directory,
                                       QString* error) {
    if (view == nullptr) {
        *error = tr("No model is open");
        return false;
    }
    if (m_dialog != nullptr) {
        *error = tr("A model is being extracted already");
        return false;
    }
    if (QFileInfo::exists(directory)) {
        *error = tr("%1 exists already: organs are extracted into a new directory").arg(directory);
        return false;
    }
    auto job = std::make_shared<ExtractionJob>();
    job->snapshot = view->snapshotPointer();
    job->directory = QFileInfo(directory).absoluteFilePath().toStdString();
    widgets::rememberWriteFolder(directory);
    if (const ModelMeasurement* measured = view->measurement()) {
        job->measurement =
            measurementToJson(MeasuredModel{job->snapshot->model, job->snapshot->anatomy, *measured, {}});
    }
    m_dialog = jobProgressDialog(m_window, tr("Extracting %1…").arg(QFileInfo(directory).fileName()),
                                 tr("Extract to organ directory"), QStringLiteral("extractionProgress"), 420);
    connect(m_dialog, &QProgressDialog::canceled, m_engine, &EngineThread::cancelExtraction);
    m_dialog->show();
    m_extraction = m_engine->extract(std::move(job));
    return true;
}

void OrgansController::finish(bool ok, const QString& message) {
    if (m_dialog != nullptr) {
        m_dialog->deleteLater();
        m_dialog = nullptr;
    }
    m_extraction = 0;
    emit extractionEnded(ok, message);
}

} // namespace organ::app
