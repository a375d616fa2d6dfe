#include "diff_controller.h"

#include "display_names.h"
#include "job_tracker.h"
#include "measure/model_diff.h"
#include "measure_controller.h"
#include "model_view.h"
#include "open_models.h"
#include "spectral_controller.h"
#include "tensor_inspector.h"

#include <QLabel>
#include <QPointer>

namespace organ::app {

DiffController::DiffController(JobTracker* jobs, model::OpenModels* models, MeasureController* measure,
                               SpectralController* spectral, QObject* parent)
    : QObject(parent), m_jobs(jobs), m_models(models), m_measure(measure), m_spectral(spectral) {}

void DiffController::attach(widgets::ModelView* view) {
    connect(view, &widgets::ModelView::diffRequested, this, [this, view] { diff(view); });
    connect(view, &widgets::ModelView::diffRowActivated, this,
            [this, view](int tensor) { showPair(view, tensor); });
    dropWhenDestroyed(m_jobs, this, m_diffs, view);
    connect(view, &QObject::destroyed, this, [this, view] {
        m_donorOf.remove(view);
        m_diffedWith.remove(view);
    });
}

void DiffController::setPair(widgets::ModelView* recipient, widgets::ModelView* donor) {
    const QString path =
        donor != nullptr ? QString::fromStdString(donor->snapshot().model->path()) : QString();
    // Views no longer the recipient keep no diff (their comparison was cleared); the recipient's
    // diff goes when its donor changes.
    for (auto it = m_diffedWith.begin(); it != m_diffedWith.end();) {
        if (it.key() == recipient && it.value() == path) {
            ++it;
            continue;
        }
        if (const auto job = m_diffs.find(it.key()); job != m_diffs.end()) {
            m_jobs->cancel(*job);
            m_jobs->forget(*job);
            m_diffs.erase(job);
        }
        if (it.key() == recipient) {
            recipient->clearDiff(tr("The donor changed: choose relative error or cosine to compare again"));
        }
        it = m_diffedWith.erase(it);
    }
    if (recipient != nullptr) {
        m_donorOf[recipient] = path;
    }
}

void DiffController::diff(widgets::ModelView* view) {
    const QString donorPath = m_donorOf.value(view);
    const auto donor = donorPath.isEmpty() ? std::nullopt : m_models->find(donorPath);
    if (!donor) {
        view->clearDiff(tr("Open a donor of the same architecture to compare the values"));
        return;
    }
    if (const auto it = m_diffs.find(view); it != m_diffs.end() && m_jobs->isLive(*it)) {
        return; // under way
    }
    const auto a = view->snapshotPointer();
    const auto b = donor->snapshot;
    const QString donorName = model::modelDisplayName(*b->model);
    const QPointer<widgets::ModelView> target = view;
    JobTracker::Job job;
    job.kind = "diff";
    job.title = tr("Comparing %1 with %2").arg(model::modelDisplayName(*a->model), donorName);
    job.progress = [target](const JobProgress& p) {
        if (target && target->diff() == nullptr) {
            target->diffNote()->setText(
                tr("Comparing the values: %1 of %2 tensors").arg(p.done).arg(p.total));
        }
    };
    job.ended = [target](const JobSnapshot& ended) {
        if (target && ended.state != JobState::Done) {
            target->clearDiff(
                ended.state == JobState::Cancelled
                    ? tr("Comparison cancelled: choose relative error or cosine to compare again")
                    : tr("Comparison failed: %1").arg(model::displayText(ended.message)));
        }
    };
    view->diffNote()->setText(tr("Comparing the values with %1…").arg(donorName));
    m_diffedWith[view] = donorPath;
    m_diffs[view] = m_jobs->start(
        std::move(job),
        [a, b, target, donorName](const ProgressFn& progress, const StopToken& stop,
                                  const JobTracker::Post& post) {
            return deliverTo(post, diffModels(*a->model, *b->model, TensorSelector{}, progress, &stop),
                             target, [donorName](widgets::ModelView& view, auto diff) {
                                 view.setDiff(donorName, std::move(diff));
                             });
        },
        this);
}

void DiffController::showPair(widgets::ModelView* view, int tensor) {
    const auto donor = m_models->find(m_diffedWith.value(view));
    if (!donor || view->diff() == nullptr) {
        return;
    }
    const GgufModel& other = *donor->snapshot->model;
    const TensorInfo* twin = other.findTensor(view->snapshot().model->tensors().at(std::size_t(tensor)).name);
    if (twin == nullptr) {
        return;
    }
    const int partnerTensor = int(twin - other.tensors().data());
    view->inspectPair(tensor, model::modelDisplayName(other), partnerTensor, *twin, donor->results);
    widgets::TensorInspector* partner = view->inspector()->partner();
    m_measure->portrait(partner, donor->snapshot, partnerTensor);
    m_spectral->eigenvalues(partner, donor->snapshot, partnerTensor);
}

} // namespace organ::app
