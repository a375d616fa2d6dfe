#pragma once

#include "anatomy/anatomy_tree.h"
#include "graft/assembly.h"
#include "measure/model_measure.h"
#include "measure/tensor_portrait.h"

#include <QObject>
#include <QString>
#include <QThread>
#include <atomic>
#include <memory>

Q_DECLARE_METATYPE(organ::ZResult)
Q_DECLARE_METATYPE(std::shared_ptr<const organ::ModelMeasurement>)
Q_DECLARE_METATYPE(std::shared_ptr<const organ::ModelSnapshot>)
Q_DECLARE_METATYPE(std::shared_ptr<const organ::TensorPortrait>)

namespace organ::app {
// A chimera to write: the plan, the open models it names ("base" first) and the output.
struct AssemblyJob {
    GraftPlan plan;
    NamedModels models;
    std::string output;
    std::shared_ptr<StopToken> stop = std::make_shared<StopToken>();
};
} // namespace organ::app
Q_DECLARE_METATYPE(std::shared_ptr<const organ::app::AssemblyJob>)

namespace organ::app {

// Lives on the engine thread; runs one measurement at a time, in the order requested.
// Results come from the measurement cache when the file is unchanged.
class MeasurementWorker : public QObject {
    Q_OBJECT
public:
    explicit MeasurementWorker(const std::atomic<quint64>* cancelBelow) : m_cancelBelow(cancelBelow) {}

public slots:
    // Runs on the engine thread.
    void measure(quint64 generation, std::shared_ptr<const organ::ModelSnapshot> snapshot);
    // Runs on the engine thread.
    void portrait(quint64 generation, std::shared_ptr<const organ::ModelSnapshot> snapshot, int tensor);
    // Runs on the engine thread: checks the plan, writes the chimera, validates it.
    void assemble(quint64 generation, std::shared_ptr<const organ::app::AssemblyJob> job);

signals:
    void assemblyProgress(quint64 generation, quint64 done, quint64 total, QString stage);
    // The chimera is written; `validation` is its validation report, one finding a line.
    void assembled(quint64 generation, QString output, QString validation, bool valid);
    void assemblyFailed(quint64 generation, QString message);
    void assemblyCancelled(quint64 generation);
    void portraitReady(quint64 generation, int tensor, std::shared_ptr<const organ::TensorPortrait> portrait);
    void started(quint64 generation);
    void progress(quint64 generation, quint64 done, quint64 total);
    void tensorMeasured(quint64 generation, int tensor, organ::ZResult result);
    void finished(quint64 generation, std::shared_ptr<const organ::ModelMeasurement> measurement);
    void failed(quint64 generation, QString message);
    void cancelled(quint64 generation);

private:
    bool isCancelled(quint64 generation) const { return generation < m_cancelBelow->load(); }
    const std::atomic<quint64>* m_cancelBelow;
};

// The application's one engine thread. measure() queues a job and returns its generation;
// every signal carries it, so that results for a closed model are easy to drop.
// cancel() only marks every job requested so far as cancelled; the worker stops at its next
// check (per tensor, or per 100 ms of progress).
class EngineThread : public QObject {
    Q_OBJECT
public:
    explicit EngineThread(QObject* parent = nullptr);
    ~EngineThread() override;

    quint64 measure(std::shared_ptr<const organ::ModelSnapshot> snapshot);
    // The inspector's histogram and matrix image of one tensor (queued after measurements).
    quint64 portrait(std::shared_ptr<const organ::ModelSnapshot> snapshot, int tensor);
    void cancel();
    bool isBusy() const { return m_running != 0; }
    // Queues a chimera's assembly; cancelAssembly() stops it (no file is left).
    quint64 assemble(std::shared_ptr<const AssemblyJob> job);
    void cancelAssembly();
    // The object that runs the jobs on the engine thread (tests queue work on it to hold the
    // thread busy).
    QObject* worker() const { return m_worker; }

signals:
    void assemblyProgress(quint64 generation, quint64 done, quint64 total, QString stage);
    void assembled(quint64 generation, QString output, QString validation, bool valid);
    void assemblyFailed(quint64 generation, QString message);
    void assemblyCancelled(quint64 generation);
    void started(quint64 generation);
    void progress(quint64 generation, quint64 done, quint64 total);
    void tensorMeasured(quint64 generation, int tensor, organ::ZResult result);
    void finished(quint64 generation, std::shared_ptr<const organ::ModelMeasurement> measurement);
    void failed(quint64 generation, QString message);
    void cancelled(quint64 generation);
    void portraitReady(quint64 generation, int tensor, std::shared_ptr<const organ::TensorPortrait> portrait);

private:
    QThread m_thread;
    MeasurementWorker* m_worker = nullptr;
    std::atomic<quint64> m_cancelBelow{0};
    quint64 m_nextGeneration = 1;
    int m_running = 0;
    std::shared_ptr<StopToken> m_assemblyStop;
};

} // namespace organ::app
