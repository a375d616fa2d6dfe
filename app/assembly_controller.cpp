#include "assembly_controller.h"

#include "anatomy/model_validation.h"
#include "graft/assembly.h"
#include "graft_document.h"
#include "job_tracker.h"
#include "open_offer.h"
#include "path_row.h"
#include "quant/quant_mix.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "write_folder.h"

#include <QDateTime>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <algorithm>
#include <cmath>
#include <numeric>

namespace organ::app {

AssemblyController::AssemblyController(model::GraftDocument* document, WindowHost host, QObject* parent)
    : QObject(parent), m_document(document), m_host(std::move(host)) {}

void AssemblyController::assembleDialog() {
    if (m_document->isEmpty()) {
        return;
    }
    QDialog dialog(m_host.window);
    dialog.setObjectName(QStringLiteral("assembleDialog"));
    dialog.setWindowTitle(tr("Assemble chimera"));
    auto* form = new QFormLayout(&dialog);
    auto* name = new QLineEdit(m_document->chimeraName().isEmpty() ? m_document->defaultChimeraName()
                                                                   : m_document->chimeraName(),
                               &dialog);
    name->setObjectName(QStringLiteral("chimeraName"));
    name->setToolTip(tr("The chimera's general.name: how tools and the workbench call it"));
    name->setMinimumWidth(420);
    const QFileInfo base(m_document->base());
    auto* path = new QLineEdit(widgets::proposedWriteFolder(base.absolutePath()) + u'/' +
                                   base.completeBaseName() + proposedSuffix(m_document->plan()),
                               &dialog);
    path->setObjectName(QStringLiteral("chimeraPath"));
    QHBoxLayout* file =
        widgets::pathRow(path, new QPushButton(tr("Browse…"), &dialog), [&dialog](const QString& current) {
            return QFileDialog::getSaveFileName(&dialog, tr("Assemble chimera"), current,
                                                tr("GGUF models (*.gguf)"));
        });
    form->addRow(tr("Name"), name);
    form->addRow(tr("File"), file);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Assemble"));
    // An existing file is replaced only when the user says so, as Save asks (Browse… asks too).
    connect(buttons, &QDialogButtonBox::accepted, &dialog, [&dialog, path] {
        const QString output = path->text().trimmed();
        if (output.isEmpty()) {
            return;
        }
        if (QFileInfo::exists(output) &&
            QMessageBox::question(&dialog, tr("Replace the file?"),
                                  tr("%1 exists already. Replace it with the chimera?").arg(output),
                                  QMessageBox::Yes | QMessageBox::No, QMessageBox::No) != QMessageBox::Yes) {
            return;
        }
        dialog.accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    form->addRow(buttons);
    if (dialog.exec() != QDialog::Accepted) {
        return;
    }
    m_document->setChimeraName(name->text().trimmed());
    QString error;
    if (!start(path->text().trimmed(), &error)) {
        m_host.showError(tr("Cannot assemble the chimera"), error);
    } else {
        widgets::rememberWriteFolder(path->text().trimmed());
    }
}

// "-chimera.gguf"; a plan that quantizes says to what ("-q4_k_m.gguf" when that is all it does).
QString AssemblyController::proposedSuffix(const GraftPlan& plan) {
    const GraftOperation* quantize = plan.quantizeOperation();
    if (quantize == nullptr) {
        return QStringLiteral("-chimera.gguf");
    }
    const QString type = QString::fromUtf8(quantFileTypeName(quantize->quantize.fileType)).toLower();
    return (plan.operations.size() == 1 ? QString() : QStringLiteral("-chimera")) + u'-' + type +
           QStringLiteral(".gguf");
}

bool AssemblyController::start(const QString& output, QString* error) {
    if (m_job != 0) {
        *error = tr("A chimera is being assembled already");
        return false;
    }
    if (m_document->isEmpty() || !m_document->unavailable().isEmpty() || m_document->report().hasErrors()) {
        *error = m_document->isEmpty()                  ? tr("The plan is empty")
                 : !m_document->unavailable().isEmpty() ? m_document->unavailable()
                                                        : tr("The plan has errors; see the graft plan panel");
        return false;
    }
    GraftPlan plan = m_document->plan();
    const std::string target = QFileInfo(output).absoluteFilePath().toStdString();
    plan.output = target;
    std::string missing;
    const NamedModels models = *m_document->openModels(plan, &missing); // all open: the plan is checked
    // The writer reports bytes of tensor data in file order: their ends give the tensors done.
    // A quantized chimera is written in llama-quantize's tensor order.
    const ChimeraLayout& layout = m_document->report().layout;
    std::vector<MixTensor> tensors;
    for (const ChimeraTensor& t : layout.tensors) {
        tensors.push_back({t.name, t.targetType, m_document->source(t).tensor->ne});
    }
    std::vector<std::size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), std::size_t(0));
    if (layout.quantize) {
        order = llamaTensorOrder(tensors);
    }
    m_tensorEnds.clear();
    std::uint64_t end = 0;
    for (const std::size_t i : order) {
        end += storedBytes(tensors[i].type, m_document->source(layout.tensors[i]).tensor->elements);
        m_tensorEnds.push_back(end);
    }
    m_stage.clear();
    struct Written {
        QString validation;
        bool valid = false;
    };
    auto written = std::make_shared<Written>();
    JobTracker::Job job;
    job.kind = "assemble";
    job.title = tr("Assembling %1").arg(QFileInfo(output).fileName());
    job.progress = [this](const JobProgress& p) {
        m_host.jobs->setDetail(m_job, progressText(p.done, p.total, p.stage));
    };
    job.ended = [this, written, output = QString::fromStdString(target)](const JobSnapshot& ended) {
        m_job = 0;
        if (ended.state == JobState::Cancelled) {
            m_host.say(tr("Assembly cancelled: no file was written"));
            emit this->ended(false, tr("cancelled"));
        } else if (ended.state == JobState::Failed) {
            const QString message = QString::fromStdString(ended.message);
            emit this->ended(false, message);
            m_host.showError(tr("The chimera could not be assembled"), message);
        } else {
            emit this->ended(true, output);
            showAssembled(output, written->validation, written->valid);
        }
    };
    m_job = m_host.jobs->start(
        std::move(job),
        [plan = std::move(plan), models, target, written](const ProgressFn& progress, const StopToken& stop,
                                                          const JobTracker::Post&) {
            // Messages leave the job as the window shows them (the plan's report escapes its own).
            try {
                GraftModels graftModels = GraftModels::fromModels(models);
                graftModels.loadImportance(plan);
                const GraftOutcome outcome = graftChimera(plan, graftModels, target, {}, {}, progress, &stop);
                if (outcome.report.hasErrors()) {
                    return JobResult::failed(reportText(outcome.report, plan));
                }
                if (outcome.written.status == JobResult::Status::Failed) {
                    return JobResult::failed(escapeText(outcome.written.message));
                }
                written->validation = QString::fromStdString(findingsText(outcome.validation));
                written->valid = countFindings(outcome.validation).ok();
                return outcome.written;
            } catch (const std::exception& error) {
                return JobResult::failed(escapeText(error.what()));
            }
        },
        this);
    return true;
}

// Rate and time left per stage (writing, then verifying: each runs over every byte).
QString AssemblyController::progressText(std::uint64_t done, std::uint64_t total, const QString& stage) {
    if (stage != m_stage) {
        m_stage = stage;
        m_stageStarted = QDateTime::currentMSecsSinceEpoch();
    }
    const double seconds = std::max(0.001, (QDateTime::currentMSecsSinceEpoch() - m_stageStarted) / 1000.0);
    const double rate = double(done) / seconds;
    const auto tensors =
        std::upper_bound(m_tensorEnds.begin(), m_tensorEnds.end(), done) - m_tensorEnds.begin();
    QString text =
        tr("%1 of %2 tensors, %3 of %4")
            .arg(tensors)
            .arg(m_tensorEnds.size())
            .arg(QString::fromStdString(humanBytes(done)), QString::fromStdString(humanBytes(total)));
    if (done > 0 && total >= done) {
        text += tr(" · %1/s · %2 s left")
                    .arg(QString::fromStdString(humanBytes(std::uint64_t(rate))))
                    .arg(std::lround(double(total - done) / rate));
    }
    return text;
}

void AssemblyController::showAssembled(const QString& output, const QString& validation, bool valid) {
    QMessageBox* box = offerToOpen(
        m_host.window, valid ? QMessageBox::Information : QMessageBox::Warning, tr("Chimera assembled"),
        tr("Wrote %1.\n\nValidation: %2").arg(output, valid ? tr("passed") : tr("failed")),
        QStringLiteral("assemblyResult"), QStringLiteral("openChimera"),
        [this, output](WindowHost::Side side) { m_host.openFiles({output}, side); });
    box->setDetailedText(validation.isEmpty() ? tr("No findings.") : validation);
    box->open();
    m_host.say(tr("Assembled %1").arg(QFileInfo(output).fileName()));
}

} // namespace organ::app
