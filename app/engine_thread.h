#pragma once

#include "anatomy/anatomy_tree.h"
#include "fleet/fleet.h"
#include "graft/assembly.h"
#include "measure/model_measure.h"
#include "measure/tensor_portrait.h"
#include "vitals/vitals_report.h"

#include <nlohmann/json.hpp>

#include <QObject>
#include <QString>
#include <QThread>
#include <atomic>
#include <memory>
#include <optional>

Q_DECLARE_METATYPE(organ::ZResult)
Q_DECLARE_METATYPE(std::shared_ptr<const organ::ModelMeasurement>)
Q_DECLARE_METATYPE(std::shared_ptr<const organ::TensorPortrait>)
Q_DECLARE_METATYPE(std::shared_ptr<const organ::VitalsReport>)
Q_DECLARE_METATYPE(std::shared_ptr<const organ::FleetReport>)

namespace organ::app {

// A model to take apart into an organ directory, with its measurement when it has one.
struct ExtractionJob {
    std::shared_ptr<const ModelSnapshot> snapshot;
    std::string directory;
    std::optional<nlohmann::json> measurement;
    std::shared_ptr<StopToken> stop = std::make_shared<StopToken>();
};

// The models in files and folders to find, measure (through the measurement cache) and rank.
struct FleetJob {
    std::vector<std::string> paths;
    ZParams params;
    std::shared_ptr<StopToken> stop = std::make_shared<StopToken>();
};

// Tensors whose θ after purification the plan preview shows: each purified as the chimera will
// purify it (purify_model.h), nothing written.
struct PurifyPreviewJob {
    struct Tensor {
        std::shared_ptr<const GgufModel> model;
        std::string name;
        TensorType target = TensorType::F32;
        QString key; // the caller's, returned with the result
    };
    std::vector<Tensor> tensors;
    PurifyParams params;
};
struct PurifyPreviewResult {
    QString key;
    std::optional<double> thetaAfter;
};

// A chimera to write: the plan, the open models it names ("base" first) and the output.
struct AssemblyJob {
    GraftPlan plan;
    NamedModels models;
    std::string output;
    std::shared_ptr<StopToken> stop = std::make_shared<StopToken>();
};

// Vital signs to take: the model (a file's or a planned chimera's weights), the models to
// compare it with, the text and prompt.
struct VitalsJob {
    ModelWeights model;
    std::vector<ModelWeights> parents;
    VitalsRequest request;
    std::shared_ptr<StopToken> stop = std::make_shared<StopToken>();
};

// Lives on the engine thread and runs its long jobs one at a time, in the order requested:
// whole-model measurements (from the measurement cache when the file is unchanged) and
// chimera assemblies. Every signal carries the job's generation, so that results for a
// closed model are easy to drop. Connect to these signals; EngineThread does not repeat them.
class MeasureAndAssembleWorker : public QObject {
    Q_OBJECT
public:
    explicit MeasureAndAssembleWorker(const std::atomic<quint64>* cancelBelow) : m_cancelBelow(cancelBelow) {}

    // Run on the engine thread (EngineThread queues them).
    void measure(quint64 generation, std::shared_ptr<const organ::ModelSnapshot> snapshot);
    // Checks the plan, writes the chimera, validates it.
    void assemble(quint64 generation, std::shared_ptr<const organ::app::AssemblyJob> job);
    void extract(quint64 generation, std::shared_ptr<const organ::app::ExtractionJob> job);
    void purifyPreview(quint64 generation, std::shared_ptr<const organ::app::PurifyPreviewJob> job);
    void fleet(quint64 generation, std::shared_ptr<const organ::app::FleetJob> job);

signals:
    void started(quint64 generation);
    void progress(quint64 generation, quint64 done, quint64 total);
    void tensorMeasured(quint64 generation, int tensor, organ::ZResult result);
    void finished(quint64 generation, std::shared_ptr<const organ::ModelMeasurement> measurement);
    void failed(quint64 generation, QString message);
    void cancelled(quint64 generation);
    void assemblyProgress(quint64 generation, quint64 done, quint64 total, QString stage);
    // The chimera is written; `validation` is its validation report, one finding a line.
    void assembled(quint64 generation, QString output, QString validation, bool valid);
    void assemblyFailed(quint64 generation, QString message);
    void assemblyCancelled(quint64 generation);
    void extractionProgress(quint64 generation, quint64 done, quint64 total);
    void extracted(quint64 generation, QString directory);
    void extractionFailed(quint64 generation, QString message);
    void extractionCancelled(quint64 generation);
    void fleetProgress(quint64 generation, quint64 done, quint64 total, QString stage);
    void fleetReady(quint64 generation, std::shared_ptr<const organ::FleetReport> report);
    void fleetCancelled(quint64 generation);
    // Results as each tensor is purified, so that a large selection fills the preview progressively.
    void purifyPreviewReady(quint64 generation,
                            std::shared_ptr<const std::vector<organ::app::PurifyPreviewResult>> results);

private:
    bool isCancelled(quint64 generation) const { return generation < m_cancelBelow->load(); }
    const std::atomic<quint64>* m_cancelBelow;
};

// Lives on the engine thread beside MeasureAndAssembleWorker (jobs run in the order asked):
// vital signs, a forward pass of the model and its parents.
class VitalsWorker : public QObject {
    Q_OBJECT
public:
    void take(quint64 generation, std::shared_ptr<const organ::app::VitalsJob> job);

signals:
    void progress(quint64 generation, quint64 done, quint64 total, QString stage);
    void ready(quint64 generation, std::shared_ptr<const organ::VitalsReport> report);
    void failed(quint64 generation, QString message);
    void cancelled(quint64 generation);
};

// Lives on its own thread: the inspector's histogram and matrix image of one tensor, never
// queued behind a whole-model measurement.
class PortraitWorker : public QObject {
    Q_OBJECT
public:
    void portrait(quint64 generation, std::shared_ptr<const organ::ModelSnapshot> snapshot, int tensor);

signals:
    void portraitReady(quint64 generation, int tensor, std::shared_ptr<const organ::TensorPortrait> portrait);
};

// The application's background threads: the engine thread (measurements, assemblies) and the
// portrait thread. measure(), assemble() and portrait() queue a job and return its generation.
// cancel() only marks every measurement requested so far as cancelled; the worker stops at
// its next check (per tensor, or per 100 ms of progress).
class EngineThread : public QObject {
    Q_OBJECT
public:
    explicit EngineThread(QObject* parent = nullptr);
    ~EngineThread() override;

    quint64 measure(std::shared_ptr<const organ::ModelSnapshot> snapshot);
    quint64 portrait(std::shared_ptr<const organ::ModelSnapshot> snapshot, int tensor);
    void cancel();
    // Measurements queued or running.
    bool isBusy() const { return m_running != 0; }
    // Queues a chimera's assembly; cancelAssembly() stops it (no file is left).
    quint64 assemble(std::shared_ptr<const AssemblyJob> job);
    void cancelAssembly();
    // Queues vital signs; cancelVitals() stops every vital-signs job asked for so far.
    quint64 vitals(std::shared_ptr<const VitalsJob> job);
    void cancelVitals();
    // Queues an extraction into an organ directory; cancelExtraction() stops it (nothing is left).
    quint64 extract(std::shared_ptr<const ExtractionJob> job);
    void cancelExtraction();
    // Queues a fleet: found, measured and ranked; cancelFleet() stops it.
    quint64 fleet(std::shared_ptr<const FleetJob> job);
    void cancelFleet();
    // Queues the θ after purification of tensors the plan purifies.
    quint64 purifyPreview(std::shared_ptr<const PurifyPreviewJob> job);

    // The objects whose signals carry the results (they live on the background threads).
    MeasureAndAssembleWorker* worker() const { return m_worker; }
    PortraitWorker* portraits() const { return m_portraits; }
    VitalsWorker* vitalsWorker() const { return m_vitals; }

private:
    QThread m_thread;
    QThread m_portraitThread;
    MeasureAndAssembleWorker* m_worker = nullptr;
    PortraitWorker* m_portraits = nullptr;
    VitalsWorker* m_vitals = nullptr;
    std::vector<std::shared_ptr<StopToken>> m_vitalsStops;
    std::atomic<quint64> m_cancelBelow{0};
    quint64 m_nextGeneration = 1;
    int m_running = 0;
    std::shared_ptr<StopToken> m_assemblyStop;
    std::shared_ptr<StopToken> m_extractionStop;
    std::shared_ptr<StopToken> m_fleetStop;
};

} // namespace organ::app

Q_DECLARE_METATYPE(std::shared_ptr<const std::vector<organ::app::PurifyPreviewResult>>)
