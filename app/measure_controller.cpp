#include "measure_controller.h"

#include "display_names.h"
#include "job_tracker.h"
#include "measure/measure_cache.h"
#include "measure/tensor_portrait.h"
#include "model_view.h"
#include "open_models.h"
#include "tensor_inspector.h"

#include <QPointer>

namespace organ::app {

MeasureController::MeasureController(JobTracker* jobs, model::OpenModels* models, QObject* parent)
    : QObject(parent), m_jobs(jobs), m_models(models) {
    connect(m_models, &model::OpenModels::closed, this, [this](const QString& path) {
        if (const auto it = m_measurements.find(path); it != m_measurements.end()) {
            m_jobs->cancel(*it);
            m_jobs->forget(*it);
            m_measurements.erase(it);
        }
    });
}

void MeasureController::ensureMeasured(const QString& path) {
    const auto entry = m_models->find(path);
    const auto it = m_measurements.find(path);
    if (entry && entry->results->measurement() == nullptr &&
        (it == m_measurements.end() || !m_jobs->isLive(*it))) {
        if (it != m_measurements.end()) {
            m_jobs->forget(*it);
        }
        measure(path);
    }
}

void MeasureController::measure(const QString& path) {
    const auto entry = m_models->find(path);
    const auto snapshot = entry->snapshot;
    const QPointer<model::TensorResults> target = entry->results;
    JobTracker::Job job;
    job.kind = "measure";
    job.title = tr("Measuring %1").arg(model::displayText(snapshot->model->name()));
    job.ended = [this, path](const JobSnapshot& ended) {
        if (ended.state == JobState::Failed) {
            emit failed(model::displayText(ended.message));
        } else if (ended.state == JobState::Cancelled && m_models->find(path)) {
            emit measured(path, tr("Measurement cancelled"));
        }
    };
    m_measurements[path] = m_jobs->start(
        std::move(job),
        [this, snapshot, target, path](const ProgressFn& progress, const StopToken& stop,
                                       const JobTracker::Post& post) {
            MeasuredModel m{snapshot->model, snapshot->anatomy, {}, {}};
            const MeasurementCache cache;
            MeasureOptions options;
            options.onTensor = [&](std::size_t tensor, const ZResult& result) {
                post([this, target, path, tensor, result] {
                    if (target) {
                        target->set(int(tensor), result);
                        emit tensorApplied(path, int(tensor));
                    }
                });
            };
            const CachedMeasurement done = measureWithCache(m, options, &cache, progress, &stop);
            if (done.result.isOk()) {
                // From the cache there were no per-tensor results: they are stored all at once.
                auto measurement = std::make_shared<const ModelMeasurement>(std::move(m.measurement));
                post([this, target, path, measurement] {
                    if (!target) {
                        return;
                    }
                    target->setMeasurement(measurement);
                    emit measured(path,
                                  tr("Measured %1: θ mean %2°%3")
                                      .arg(model::displayText(measurement->name))
                                      .arg(measurement->model.thetaMean, 0, 'f', 2)
                                      .arg(measurement->fromCache ? tr(" (from the cache)") : QString()));
                });
            }
            return done.result;
        },
        this);
}

void MeasureController::attach(widgets::ModelView* view) {
    const QString path = QString::fromStdString(view->snapshot().model->path());
    ensureMeasured(path);
    connect(view, &widgets::ModelView::closing, m_models,
            [models = m_models, path] { models->giveBack(path); });
    connect(view, &widgets::ModelView::tensorSelected, this,
            [this, view](int tensor) { portrait(view->inspector(), view->snapshotPointer(), tensor); });
}

void MeasureController::portrait(widgets::TensorInspector* inspector,
                                 std::shared_ptr<const ModelSnapshot> snapshot, int tensor) {
    replaceWaiting(m_jobs, this, m_portraits, inspector); // the older selection's is not wanted any more
    const QPointer<widgets::TensorInspector> target = inspector;
    JobTracker::Job job;
    job.kind = "portrait";
    job.title =
        tr("Drawing %1").arg(model::displayText(snapshot->model->tensors().at(std::size_t(tensor)).name));
    job.lane = JobTracker::Lane::Interactive;
    m_portraits[inspector] = m_jobs->start(
        std::move(job),
        [snapshot, target, tensor](const ProgressFn&, const StopToken& stop, const JobTracker::Post& post) {
            const TensorInfo& t = snapshot->model->tensors().at(std::size_t(tensor));
            const std::uint64_t columns = t.nDims == 0 ? 1 : t.ne[0];
            return deliverTo(post,
                             portraitOf(t.type, snapshot->model->tensorData(t), columns,
                                        t.elements / std::max<std::uint64_t>(1, columns), 256, 128, &stop),
                             target, [tensor](widgets::TensorInspector& inspector, auto portrait) {
                                 inspector.setPortrait(tensor, std::move(portrait));
                             });
        },
        this);
}

} // namespace organ::app
