#include "spectral_controller.h"

#include "display_names.h"
#include "job_tracker.h"
#include "measure/spectral.h"
#include "model_view.h"
#include "tensor_inspector.h"

#include <QComboBox>
#include <QPointer>

namespace organ::app {

SpectralController::SpectralController(JobTracker* jobs, QObject* parent) : QObject(parent), m_jobs(jobs) {}

void SpectralController::attach(widgets::ModelView* view) {
    dropWhenDestroyed(m_jobs, this, m_spectra, view); // a closed view's α is not wanted any more
    connect(view, &widgets::ModelView::spectraRequested, this, [this, view] { spectra(view); });
    connect(view, &widgets::ModelView::tensorSelected, this,
            [this, view](int tensor) { eigenvalues(view->inspector(), view->snapshotPointer(), tensor); });
}

void SpectralController::spectra(widgets::ModelView* view) {
    if (const auto it = m_spectra.find(view); it != m_spectra.end() && m_jobs->isLive(*it)) {
        return; // under way
    }
    const auto snapshot = view->snapshotPointer();
    const QPointer<widgets::ModelView> target = view;
    JobTracker::Job job;
    job.kind = "spectral";
    job.title = tr("Spectral α of %1").arg(model::modelDisplayName(*snapshot->model));
    job.progress = [target](const JobProgress& p) {
        if (target && !target->spectra()) {
            target->setSpectraNote(
                tr("Fitting the eigenvalue spectra: %1 of %2 matrices").arg(p.done).arg(p.total));
        }
    };
    job.ended = [target](const JobSnapshot& ended) {
        if (!target || ended.state == JobState::Done) {
            return;
        }
        // Back to θ: choosing α again computes it again.
        target->heatmapMetricBox()->setCurrentIndex(0);
        target->setSpectraNote(ended.state == JobState::Cancelled
                                   ? tr("α cancelled: choose it again to compute it")
                                   : tr("α failed: %1").arg(model::displayText(ended.message)));
    };
    view->setSpectraNote(tr("Fitting the eigenvalue spectra…"));
    m_spectra[view] = m_jobs->start(
        std::move(job),
        [snapshot, target](const ProgressFn& progress, const StopToken& stop, const JobTracker::Post& post) {
            return deliverTo(
                post, measureSpectra(*snapshot->model, TensorSelector{}, progress, &stop), target,
                [](widgets::ModelView& view, auto report) { view.setSpectra(std::move(report)); });
        },
        this);
}

void SpectralController::eigenvalues(widgets::TensorInspector* inspector,
                                     std::shared_ptr<const ModelSnapshot> snapshot, int tensor) {
    replaceWaiting(m_jobs, this, m_eigenvalues, inspector); // the older tensor's is not wanted any more
    const TensorInfo& t = snapshot->model->tensors().at(std::size_t(tensor));
    if (!hasSpectrum(t)) {
        inspector->setEigenvalueNote(tensor, t.nDims < 2 ? tr("A vector: no eigenvalue spectrum")
                                                         : tr("Fewer than 16 rows or columns: no spectrum"));
        return;
    }
    const std::uint64_t experts = t.ne[2] * t.ne[3];
    const QString what = experts > 1 ? tr("expert 0 of %1").arg(experts) : QString();
    inspector->setEigenvalueNote(
        tensor, tr("Computing the eigenvalues of a %1 × %2 matrix…").arg(t.ne[1]).arg(t.ne[0]));
    const QPointer<widgets::TensorInspector> target = inspector;
    JobTracker::Job job;
    job.kind = "eigenvalues";
    job.title = tr("Eigenvalues of %1").arg(model::displayText(t.name));
    job.lane = JobTracker::Lane::Interactive;
    job.ended = [target, tensor](const JobSnapshot& ended) {
        if (target && ended.state != JobState::Done) {
            target->setEigenvalueNote(
                tensor, ended.state == JobState::Cancelled
                            ? tr("Eigenvalues cancelled")
                            : tr("Eigenvalues failed: %1").arg(model::displayText(ended.message)));
        }
    };
    m_eigenvalues[inspector] = m_jobs->start(
        std::move(job),
        [snapshot, target, tensor, what](const ProgressFn&, const StopToken& stop,
                                         const JobTracker::Post& post) {
            const TensorInfo& info = snapshot->model->tensors().at(std::size_t(tensor));
            // One SVD: the token is looked at before it and after it.
            if (stop.stopRequested()) {
                return JobResult::cancelled();
            }
            auto lambda =
                std::make_shared<const std::vector<double>>(matrixEigenvalues(*snapshot->model, info, 0));
            if (stop.stopRequested()) {
                return JobResult::cancelled();
            }
            const SpectralFit fit = fitSpectrum(*lambda);
            post([target, tensor, lambda, fit, what] {
                if (target) {
                    target->setEigenvalues(tensor, lambda, fit, what);
                }
            });
            return JobResult::ok();
        },
        this);
}

} // namespace organ::app
