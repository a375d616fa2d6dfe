#include "quant_lab_controller.h"

#include "display_names.h"
#include "graft_document.h"
#include "model_pane.h"
#include "model_view.h"
#include "surgery_controller.h"
#include "vitals/quant_pareto.h"

#include <QFileInfo>
#include <QPointer>

namespace organ::app {
namespace {

std::unique_ptr<ImatrixData> importanceFrom(const std::string& path) {
    return path.empty() ? nullptr : std::make_unique<ImatrixData>(readImatrix(path));
}

// "quantizing one group at a time 12/44…"
QString stageText(const JobProgress& p) {
    return p.total > 0 ? QStringLiteral("%1 %2/%3…").arg(p.stage).arg(p.done).arg(p.total) : p.stage + u'…';
}

} // namespace

QuantLabController::QuantLabController(widgets::ModelPane* recipient, widgets::ModelPane* donor,
                                       SurgeryController* surgery, WindowHost host)
    : QObject(host.window), m_recipient(recipient), m_donor(donor), m_surgery(surgery),
      m_host(std::move(host)) {
    connect(m_surgery->document(), &model::GraftDocument::changed, this, &QuantLabController::updatePlanning);
    for (widgets::ModelPane* pane : {m_recipient, m_donor}) {
        connect(pane, &widgets::ModelPane::viewsChanged, this, &QuantLabController::updatePlanning);
    }
}

bool QuantLabController::isRecipient(widgets::ModelView* view) const {
    return m_recipient->views().contains(view);
}

void QuantLabController::updatePlanning() {
    for (widgets::ModelView* view : m_recipient->views() + m_donor->views()) {
        const QString path = QString::fromStdString(view->snapshot().model->path());
        const QString refusal = isRecipient(view) ? m_surgery->document()->refusal(path) : QString();
        view->quantLabPage()->setCanPlan(
            isRecipient(view) && refusal.isEmpty(),
            !isRecipient(view)
                ? tr("This model is a donor: mixes are planned on the recipient (File → Swap recipient and "
                     "donor makes it one).")
                : tr("The plan cannot take a mix of this model: %1").arg(refusal));
    }
}

void QuantLabController::attach(widgets::ModelView* view) {
    widgets::QuantLabPage* page = view->quantLabPage();
    connect(page, &widgets::QuantLabPage::runRequested, this, [this, view](Run run) {
        if (run == Run::Errors) {
            measureErrors(view);
        } else {
            findMixes(view);
        }
    });
    connect(page, &widgets::QuantLabPage::cancelRequested, this,
            [this, view](Run run) { m_host.jobs->cancel(m_jobs[int(run)].value(view)); });
    connect(page, &widgets::QuantLabPage::mixChosen, this,
            [this, view](const ParetoPoint& point) { planMix(view, point); });
    // The view is gone: its jobs are cancelled, and the model's own run is let go once no view
    // shows the model (counted here: the panes may be going too).
    const QString key = QString::fromStdString(view->snapshot().model->path());
    ++m_views[key];
    connect(view, &QObject::destroyed, this, [this, view, key] {
        for (auto& jobs : m_jobs) {
            if (const quint64 job = jobs.take(view)) {
                m_host.jobs->cancel(job);
            }
        }
        if (--m_views[key] == 0) {
            m_views.remove(key);
            m_references.remove(key);
        }
    });
    updatePlanning();
}

void QuantLabController::startRun(widgets::ModelView* view, Run run, const char* kind, const QString& title,
                                  JobTracker::Work work, std::function<void(widgets::QuantLabPage*)> done) {
    const QPointer<widgets::ModelView> page = view;
    JobTracker::Job job;
    job.kind = kind;
    job.title = title;
    job.progress = [page, run](const JobProgress& p) {
        if (page) {
            page->quantLabPage()->setProgress(run, stageText(p));
        }
    };
    job.ended = [this, page, run, done = std::move(done)](const JobSnapshot& ended) {
        if (!page) {
            return;
        }
        m_jobs[int(run)].remove(page);
        if (ended.state == JobState::Done) {
            done(page->quantLabPage());
        } else {
            page->quantLabPage()->setIdle(run, ended.state == JobState::Cancelled
                                                   ? tr("Cancelled.")
                                                   : model::displayText(ended.message));
        }
    };
    m_jobs[int(run)].insert(view, m_host.jobs->start(std::move(job), std::move(work), this));
}

void QuantLabController::measureErrors(widgets::ModelView* view) {
    const auto model = view->snapshot().model;
    const std::string imatrix = view->quantLabPage()->imatrixPath().toStdString();
    auto report = std::make_shared<std::shared_ptr<const QuantErrorReport>>();
    view->quantLabPage()->setRunning(Run::Errors, tr("Quantizing every tensor in memory…"));
    startRun(
        view, Run::Errors, "quant-errors",
        tr("Quantization errors of %1").arg(model::modelDisplayName(*model)),
        [model, imatrix, report](const ProgressFn& p, const StopToken& stop, const JobTracker::Post&) {
            const auto importance = importanceFrom(imatrix);
            auto measured =
                measureQuantErrors(*model, defaultLabTypes(), importance.get(), imatrix, p, &stop);
            if (!measured) {
                return JobResult::cancelled();
            }
            *report = std::make_shared<const QuantErrorReport>(std::move(*measured));
            return JobResult::ok();
        },
        [report](widgets::QuantLabPage* page) { page->setErrorReport(*report); });
}

void QuantLabController::findMixes(widgets::ModelView* view) {
    const auto model = view->snapshot().model;
    widgets::QuantLabPage* lab = view->quantLabPage();
    const std::string imatrix = lab->imatrixPath().toStdString();
    const std::string textPath = lab->textPath().toStdString();
    ParetoRequest request;
    request.sensitivity.grouping = lab->grouping();
    request.sensitivity.chunk = lab->chunk();
    request.sensitivity.types = defaultBudgetTypes();
    const QString key = QString::fromStdString(model->path());
    // What the job reads and leaves: the model's own run, from before and after.
    struct Outcome {
        std::shared_ptr<const SensitivityReference> reference;
        std::shared_ptr<const ParetoReport> report;
        bool reused = false;
    };
    auto outcome = std::make_shared<Outcome>();
    outcome->reference = m_references.value(key);
    lab->setRunning(Run::Pareto, tr("Running the model on the text…"));
    startRun(
        view, Run::Pareto, "quant-pareto",
        tr("Quantization mixes of %1").arg(model::modelDisplayName(*model)),
        [model, imatrix, textPath, request, outcome](const ProgressFn& p, const StopToken& stop,
                                                     const JobTracker::Post&) mutable {
            const auto importance = importanceFrom(imatrix);
            request.sensitivity.text = textPath.empty() ? std::string() : readLabText(textPath);
            const auto before = outcome->reference;
            auto report =
                measurePareto(model, importance.get(), imatrix, request, p, &stop, &outcome->reference);
            if (!report) {
                return JobResult::cancelled();
            }
            outcome->reused = before && before == outcome->reference;
            outcome->report = std::make_shared<const ParetoReport>(std::move(*report));
            return JobResult::ok();
        },
        [this, outcome, key](widgets::QuantLabPage* page) {
            m_references.insert(key, outcome->reference);
            page->setParetoReport(outcome->report, outcome->reused);
        });
}

void QuantLabController::planMix(widgets::ModelView* view, const ParetoPoint& point) {
    const QString path = QString::fromStdString(view->snapshot().model->path());
    if (!isRecipient(view) || !m_surgery->document()->refusal(path).isEmpty()) {
        return;
    }
    m_surgery->document()->quantize(path, point.recipe);
    m_host.say(tr("Planned: quantize %1 to the mix of %2 bits per weight — Graft → Assemble writes it")
                   .arg(QFileInfo(path).fileName(), model::finiteNumber(point.size.bitsPerWeight(), 3)));
}

} // namespace organ::app
