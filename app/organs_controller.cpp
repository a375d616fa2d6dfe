#include "organs_controller.h"

#include "display_names.h"
#include "job_tracker.h"
#include "measure/measure_report.h"
#include "model_view.h"
#include "open_offer.h"
#include "organs/organ_directory.h"
#include "support/text_format.h"
#include "write_folder.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QPointer>
#include <QSettings>
#include <optional>

namespace organ::app {

OrgansController::OrgansController(WindowHost host) : QObject(host.window), m_host(std::move(host)) {}

void OrgansController::populateMenu(QMenu* file) {
    file->addAction(tr("Open organ director&y…"), this, [this] { openDirectoryDialog(Side::Recipient); });
    file->addAction(tr("Open organ directory as donor…"), this, [this] { openDirectoryDialog(Side::Donor); });
    file->addAction(tr("E&xtract to organ directory…"), this, &OrgansController::extractDialog);
}

void OrgansController::openDirectoryDialog(Side side) {
    QSettings settings;
    const QString folder =
        QFileDialog::getExistingDirectory(m_host.window, tr("Open an organ directory"),
                                          settings.value(QStringLiteral("lastFolder")).toString());
    if (!folder.isEmpty()) {
        settings.setValue(QStringLiteral("lastFolder"), QFileInfo(folder).absolutePath());
        m_host.openFiles({folder}, side);
    }
}

// The model is the one focused when the menu was chosen, named in the dialog: the focus moves
// while the dialog is open, so it is not looked up again afterwards.
void OrgansController::extractDialog() {
    const QPointer<widgets::ModelView> view = m_host.focusedView();
    if (view == nullptr) {
        m_host.showError(tr("Nothing to extract"), tr("Open a model first."));
        return;
    }
    const QFileInfo source(QString::fromStdString(view->snapshot().model->path()));
    QFileDialog dialog(m_host.window, tr("Extract %1 to a new organ directory").arg(source.fileName()));
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
    if (m_extraction != 0) {
        *error = tr("A model is being extracted already");
        return false;
    }
    if (QFileInfo::exists(directory)) {
        *error = tr("%1 exists already: organs are extracted into a new directory").arg(directory);
        return false;
    }
    // The model and its measurement when it has one (the directory's manifest keeps its θ).
    struct Extraction {
        std::shared_ptr<const ModelSnapshot> snapshot;
        std::string directory;
        std::optional<nlohmann::json> measurement;
    } job{view->snapshotPointer(), QFileInfo(directory).absoluteFilePath().toStdString(), std::nullopt};
    widgets::rememberWriteFolder(directory);
    if (const ModelMeasurement* measured = view->measurement()) {
        job.measurement =
            measurementToJson(MeasuredModel{job.snapshot->model, job.snapshot->anatomy, *measured, {}});
    }
    JobTracker::Job work;
    work.kind = "extract";
    work.title = tr("Extracting %1").arg(QFileInfo(directory).fileName());
    work.progress = [this](const JobProgress& p) {
        m_host.jobs->setDetail(m_extraction, tr("%1 of %2")
                                                 .arg(QString::fromStdString(humanBytes(p.done)),
                                                      QString::fromStdString(humanBytes(p.total))));
    };
    work.ended = [this, target = QString::fromStdString(job.directory)](const JobSnapshot& ended) {
        m_extraction = 0;
        if (ended.state == JobState::Cancelled) {
            m_host.say(tr("Extraction cancelled: nothing was written"));
            emit extractionEnded(false, tr("cancelled"));
        } else if (ended.state == JobState::Failed) {
            const QString message = model::displayText(ended.message);
            emit extractionEnded(false, message);
            m_host.showError(tr("The model could not be extracted"), message);
        } else {
            emit extractionEnded(true, target);
            offerToOpen(m_host.window, QMessageBox::Information, tr("Organs extracted"),
                        tr("Wrote the organ directory %1.").arg(target), QStringLiteral("extractionResult"),
                        QStringLiteral("openOrgans"),
                        [this, target](Side side) { m_host.openFiles({target}, side); })
                ->open();
            m_host.say(tr("Extracted %1").arg(QFileInfo(target).fileName()));
        }
    };
    m_extraction = m_host.jobs->start(
        std::move(work),
        [job = std::move(job)](const ProgressFn& progress, const StopToken& stop, const JobTracker::Post&) {
            return extractOrgans(*job.snapshot->model, job.directory,
                                 job.measurement ? &*job.measurement : nullptr, progress, &stop);
        },
        this);
    return true;
}

} // namespace organ::app
