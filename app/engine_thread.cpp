#include "engine_thread.h"
#include "display_names.h"

#include "anatomy/model_validation.h"
#include "measure/measure_cache.h"

namespace organ::app {

void MeasurementWorker::measure(quint64 generation, std::shared_ptr<const ModelSnapshot> snapshot) {
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

void MeasurementWorker::portrait(quint64 generation, std::shared_ptr<const ModelSnapshot> snapshot,
                                 int tensor) {
    const TensorInfo& t = snapshot->model->tensors().at(static_cast<std::size_t>(tensor));
    const std::uint64_t columns = t.nDims == 0 ? 1 : t.ne[0];
    auto result =
        portraitOf(t.type, snapshot->model->tensorData(t), columns,
                   t.elements / std::max<std::uint64_t>(1, columns)); // no stop token: it cannot fail
    emit portraitReady(generation, tensor, std::make_shared<const TensorPortrait>(std::move(*result)));
}

void MeasurementWorker::assemble(quint64 generation, std::shared_ptr<const AssemblyJob> job) {
    if (job->stop->stopRequested()) {
        emit assemblyCancelled(generation);
        return;
    }
    try {
        const GraftModels models = GraftModels::fromModels(job->models);
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

EngineThread::EngineThread(QObject* parent) : QObject(parent) {
    qRegisterMetaType<std::shared_ptr<const organ::app::AssemblyJob>>();
    qRegisterMetaType<std::shared_ptr<const organ::TensorPortrait>>();
    qRegisterMetaType<organ::ZResult>();
    qRegisterMetaType<std::shared_ptr<const organ::ModelMeasurement>>();
    qRegisterMetaType<std::shared_ptr<const organ::ModelSnapshot>>();
    m_worker = new MeasurementWorker(&m_cancelBelow);
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    connect(m_worker, &MeasurementWorker::started, this, &EngineThread::started);
    connect(m_worker, &MeasurementWorker::progress, this, &EngineThread::progress);
    connect(m_worker, &MeasurementWorker::tensorMeasured, this, &EngineThread::tensorMeasured);
    connect(m_worker, &MeasurementWorker::portraitReady, this, &EngineThread::portraitReady);
    connect(m_worker, &MeasurementWorker::assemblyProgress, this, &EngineThread::assemblyProgress);
    connect(m_worker, &MeasurementWorker::assembled, this, &EngineThread::assembled);
    connect(m_worker, &MeasurementWorker::assemblyFailed, this, &EngineThread::assemblyFailed);
    connect(m_worker, &MeasurementWorker::assemblyCancelled, this, &EngineThread::assemblyCancelled);
    auto done = [this] { --m_running; };
    connect(m_worker, &MeasurementWorker::finished, this, [this, done](quint64 g, auto m) {
        done();
        emit finished(g, m);
    });
    connect(m_worker, &MeasurementWorker::failed, this, [this, done](quint64 g, const QString& message) {
        done();
        emit failed(g, message);
    });
    connect(m_worker, &MeasurementWorker::cancelled, this, [this, done](quint64 g) {
        done();
        emit cancelled(g);
    });
    m_thread.setObjectName(QStringLiteral("engine"));
    m_thread.start();
}

EngineThread::~EngineThread() {
    cancel();
    cancelAssembly();
    m_thread.quit();
    m_thread.wait();
}

quint64 EngineThread::measure(std::shared_ptr<const ModelSnapshot> snapshot) {
    const quint64 generation = m_nextGeneration++;
    ++m_running;
    QMetaObject::invokeMethod(m_worker, "measure", Qt::QueuedConnection, Q_ARG(quint64, generation),
                              Q_ARG(std::shared_ptr<const organ::ModelSnapshot>, std::move(snapshot)));
    return generation;
}

quint64 EngineThread::portrait(std::shared_ptr<const ModelSnapshot> snapshot, int tensor) {
    const quint64 generation = m_nextGeneration++;
    QMetaObject::invokeMethod(m_worker, "portrait", Qt::QueuedConnection, Q_ARG(quint64, generation),
                              Q_ARG(std::shared_ptr<const organ::ModelSnapshot>, std::move(snapshot)),
                              Q_ARG(int, tensor));
    return generation;
}

void EngineThread::cancel() {
    m_cancelBelow = m_nextGeneration;
}

quint64 EngineThread::assemble(std::shared_ptr<const AssemblyJob> job) {
    const quint64 generation = m_nextGeneration++;
    m_assemblyStop = job->stop;
    QMetaObject::invokeMethod(m_worker, "assemble", Qt::QueuedConnection, Q_ARG(quint64, generation),
                              Q_ARG(std::shared_ptr<const organ::app::AssemblyJob>, std::move(job)));
    return generation;
}

void EngineThread::cancelAssembly() {
    if (m_assemblyStop) {
        m_assemblyStop->requestStop();
    }
}

} // namespace organ::app
