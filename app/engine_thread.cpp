#include "engine_thread.h"
#include "display_names.h"

#include "anatomy/model_validation.h"
#include "graft/purify_model.h"
#include "measure/measure_cache.h"
#include "organs/organ_directory.h"

namespace organ::app {

void MeasureAndAssembleWorker::measure(quint64 generation, std::shared_ptr<const ModelSnapshot> snapshot) {
    if (isCancelled(generation)) {
        emit cancelled(generation);
        return;
    }
    emit started(generation);
    MeasuredModel m{snapshot->model, snapshot->anatomy, {}, {}};
    const MeasurementCache cache;
    StopToken stop;
    MeasureOptions options;
    options.onTensor = [&](std::size_t tensor, const ZResult& result) {
        emit tensorMeasured(generation, static_cast<int>(tensor), result);
        if (isCancelled(generation)) {
            stop.requestStop();
        }
    };
    const CachedMeasurement done = measureWithCache(
        m, options, &cache,
        [&](const Progress& p) {
            emit progress(generation, p.done, p.total);
            if (isCancelled(generation)) {
                stop.requestStop();
            }
        },
        &stop);
    if (done.result.status == JobResult::Status::Cancelled) {
        emit cancelled(generation);
        return;
    }
    if (!done.result.isOk()) {
        emit failed(generation, model::displayText(done.result.message));
        return;
    }
    // From the cache: no per-tensor signals, the window applies the whole measurement at once.
    emit finished(generation, std::make_shared<const ModelMeasurement>(std::move(m.measurement)));
}

void PortraitWorker::portrait(quint64 generation, std::shared_ptr<const ModelSnapshot> snapshot, int tensor) {
    const TensorInfo& t = snapshot->model->tensors().at(static_cast<std::size_t>(tensor));
    const std::uint64_t columns = t.nDims == 0 ? 1 : t.ne[0];
    auto result =
        portraitOf(t.type, snapshot->model->tensorData(t), columns,
                   t.elements / std::max<std::uint64_t>(1, columns)); // no stop token: it cannot fail
    emit portraitReady(generation, tensor, std::make_shared<const TensorPortrait>(std::move(*result)));
}

void MeasureAndAssembleWorker::assemble(quint64 generation, std::shared_ptr<const AssemblyJob> job) {
    if (job->stop->stopRequested()) {
        emit assemblyCancelled(generation);
        return;
    }
    try {
        GraftModels models = GraftModels::fromModels(job->models);
        models.loadImportance(job->plan);
        const GraftOutcome outcome = graftChimera(
            job->plan, models, job->output, {}, {},
            [&](const Progress& p) {
                emit assemblyProgress(generation, p.done, p.total,
                                      QString::fromUtf8(p.stage.data(), qsizetype(p.stage.size())));
            },
            job->stop.get());
        if (outcome.report.hasErrors()) {
            emit assemblyFailed(generation,
                                QString::fromStdString(reportText(outcome.report, job->plan))); // escaped
            return;
        }
        if (outcome.written.status == JobResult::Status::Cancelled) {
            emit assemblyCancelled(generation);
            return;
        }
        if (!outcome.written.isOk()) {
            emit assemblyFailed(generation, model::displayText(outcome.written.message));
            return;
        }
        emit assembled(generation, QString::fromStdString(job->output),
                       QString::fromStdString(findingsText(outcome.validation)),
                       countFindings(outcome.validation).ok());
    } catch (const std::exception& error) {
        emit assemblyFailed(generation, model::displayText(error.what()));
    }
}

void MeasureAndAssembleWorker::extract(quint64 generation, std::shared_ptr<const ExtractionJob> job) {
    const JobResult done = extractOrgans(
        *job->snapshot->model, job->directory, job->measurement ? &*job->measurement : nullptr,
        [&](const Progress& p) { emit extractionProgress(generation, p.done, p.total); }, job->stop.get());
    if (done.status == JobResult::Status::Cancelled) {
        emit extractionCancelled(generation);
    } else if (!done.isOk()) {
        emit extractionFailed(generation, model::displayText(done.message));
    } else {
        emit extracted(generation, QString::fromStdString(job->directory));
    }
}

void MeasureAndAssembleWorker::fleet(quint64 generation, std::shared_ptr<const FleetJob> job) {
    const MeasurementCache cache;
    FleetOptions options;
    options.params = job->params;
    options.cache = &cache;
    auto report = std::make_shared<FleetReport>();
    const JobResult done = measureFleet(
        findFleetModels(job->paths), options, *report,
        [&](const Progress& p) {
            emit fleetProgress(generation, p.done, p.total,
                               QString::fromUtf8(p.stage.data(), qsizetype(p.stage.size())));
        },
        job->stop.get());
    if (done.status == JobResult::Status::Cancelled) {
        emit fleetCancelled(generation);
    } else {
        emit fleetReady(generation, std::move(report));
    }
}

void MeasureAndAssembleWorker::purifyPreview(quint64 generation,
                                             std::shared_ptr<const PurifyPreviewJob> job) {
    for (const PurifyPreviewJob::Tensor& t : job->tensors) {
        auto results = std::make_shared<std::vector<PurifyPreviewResult>>();
        try {
            const TensorInfo* info = t.model->findTensor(t.name);
            if (info != nullptr) {
                results->push_back(
                    {t.key, purifyTensor(*t.model, *info, t.target, job->params).report.thetaAfter});
            }
        } catch (const std::exception&) {
            results->push_back({t.key, std::nullopt}); // the preview shows no θ for it
        }
        emit purifyPreviewReady(generation, std::move(results));
    }
}

void VitalsWorker::take(quint64 generation, std::shared_ptr<const VitalsJob> job) {
    if (job->stop->stopRequested()) {
        emit cancelled(generation);
        return;
    }
    try {
        std::vector<const ModelWeights*> parents;
        for (const ModelWeights& p : job->parents) {
            parents.push_back(&p);
        }
        auto report = takeVitals(
            job->model, parents, job->request,
            [&](const Progress& p) {
                emit progress(generation, p.done, p.total,
                              QString::fromUtf8(p.stage.data(), qsizetype(p.stage.size())));
            },
            job->stop.get());
        if (!report) {
            emit cancelled(generation);
            return;
        }
        emit ready(generation, std::make_shared<const VitalsReport>(std::move(*report)));
    } catch (const std::exception& error) {
        emit failed(generation, model::displayText(error.what()));
    }
}

EngineThread::EngineThread(QObject* parent) : QObject(parent) {
    qRegisterMetaType<std::shared_ptr<const organ::VitalsReport>>();
    qRegisterMetaType<std::shared_ptr<const organ::FleetReport>>();
    qRegisterMetaType<std::shared_ptr<const std::vector<organ::app::PurifyPreviewResult>>>();
    qRegisterMetaType<std::shared_ptr<const organ::TensorPortrait>>();
    qRegisterMetaType<organ::ZResult>();
    qRegisterMetaType<std::shared_ptr<const organ::ModelMeasurement>>();
    m_worker = new MeasureAndAssembleWorker(&m_cancelBelow);
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    m_vitals = new VitalsWorker;
    m_vitals->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_vitals, &QObject::deleteLater);
    m_portraits = new PortraitWorker;
    m_portraits->moveToThread(&m_portraitThread);
    connect(&m_portraitThread, &QThread::finished, m_portraits, &QObject::deleteLater);
    // Bookkeeping only: receivers connect to the worker itself.
    auto done = [this] { --m_running; };
    connect(m_worker, &MeasureAndAssembleWorker::finished, this, done);
    connect(m_worker, &MeasureAndAssembleWorker::failed, this, done);
    connect(m_worker, &MeasureAndAssembleWorker::cancelled, this, done);
    m_thread.setObjectName(QStringLiteral("engine"));
    m_portraitThread.setObjectName(QStringLiteral("portraits"));
    m_thread.start();
    m_portraitThread.start();
}

EngineThread::~EngineThread() {
    cancel();
    cancelAssembly();
    cancelVitals();
    cancelExtraction();
    cancelFleet();
    for (QThread* thread : {&m_thread, &m_portraitThread}) {
        thread->quit();
        thread->wait();
    }
}

quint64 EngineThread::measure(std::shared_ptr<const ModelSnapshot> snapshot) {
    const quint64 generation = m_nextGeneration++;
    ++m_running;
    QMetaObject::invokeMethod(
        m_worker,
        [worker = m_worker, generation, snapshot = std::move(snapshot)] {
            worker->measure(generation, snapshot);
        },
        Qt::QueuedConnection);
    return generation;
}

quint64 EngineThread::portrait(std::shared_ptr<const ModelSnapshot> snapshot, int tensor) {
    const quint64 generation = m_nextGeneration++;
    QMetaObject::invokeMethod(
        m_portraits,
        [worker = m_portraits, generation, snapshot = std::move(snapshot), tensor] {
            worker->portrait(generation, snapshot, tensor);
        },
        Qt::QueuedConnection);
    return generation;
}

void EngineThread::cancel() {
    m_cancelBelow = m_nextGeneration;
}

quint64 EngineThread::assemble(std::shared_ptr<const AssemblyJob> job) {
    const quint64 generation = m_nextGeneration++;
    m_assemblyStop = job->stop;
    QMetaObject::invokeMethod(
        m_worker,
        [worker = m_worker, generation, job = std::move(job)] { worker->assemble(generation, job); },
        Qt::QueuedConnection);
    return generation;
}

quint64 EngineThread::vitals(std::shared_ptr<const VitalsJob> job) {
    const quint64 generation = m_nextGeneration++;
    // Only the stops of jobs still queued or running (a finished job has let go of its own).
    std::erase_if(m_vitalsStops,
                  [](const std::shared_ptr<StopToken>& stop) { return stop.use_count() == 1; });
    m_vitalsStops.push_back(job->stop);
    QMetaObject::invokeMethod(
        m_vitals, [worker = m_vitals, generation, job = std::move(job)] { worker->take(generation, job); },
        Qt::QueuedConnection);
    return generation;
}

void EngineThread::cancelVitals() {
    for (const auto& stop : m_vitalsStops) {
        stop->requestStop();
    }
    m_vitalsStops.clear();
}

quint64 EngineThread::extract(std::shared_ptr<const ExtractionJob> job) {
    const quint64 generation = m_nextGeneration++;
    m_extractionStop = job->stop;
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, generation, job = std::move(job)] { worker->extract(generation, job); },
        Qt::QueuedConnection);
    return generation;
}

quint64 EngineThread::fleet(std::shared_ptr<const FleetJob> job) {
    const quint64 generation = m_nextGeneration++;
    m_fleetStop = job->stop;
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, generation, job = std::move(job)] { worker->fleet(generation, job); },
        Qt::QueuedConnection);
    return generation;
}

void EngineThread::cancelFleet() {
    if (m_fleetStop) {
        m_fleetStop->requestStop();
    }
}

void EngineThread::cancelExtraction() {
    if (m_extractionStop) {
        m_extractionStop->requestStop();
    }
}

quint64 EngineThread::purifyPreview(std::shared_ptr<const PurifyPreviewJob> job) {
    const quint64 generation = m_nextGeneration++;
    QMetaObject::invokeMethod(
        m_worker,
        [worker = m_worker, generation, job = std::move(job)] { worker->purifyPreview(generation, job); },
        Qt::QueuedConnection);
    return generation;
}

void EngineThread::cancelAssembly() {
    if (m_assemblyStop) {
        m_assemblyStop->requestStop();
    }
}

} // namespace organ::app
