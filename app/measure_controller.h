#pragma once

#include "open_models.h"
#include "window_classes.h"

#include <QHash>
#include <QObject>
#include <QString>

namespace organ::app {

// Measurement in the window: each model opened is measured once on the engine's worker (from
// the measurement cache when the file is unchanged), θ stored in its OpenModels entry as each
// tensor is measured, where every view of it reads it; and the inspector's portrait of the
// tensor selected, on the interactive worker (a newer selection drops an older one's result).
// A closed model's measurement and a closed view's portrait are cancelled.
class MeasureController : public QObject {
    Q_OBJECT
public:
    MeasureController(JobTracker* jobs, model::OpenModels* models, QObject* parent);

    // A view of an open model: measures the model unless it is measured or being measured (a
    // model opened again after its measurement was cancelled is measured again), follows the
    // view's selection for portraits, and gives the model back when the view closes.
    void attach(widgets::ModelView* view);
    // The portrait of `snapshot`'s tensor for `inspector` (a view's, or its partner beside it),
    // replacing the one it waited for.
    void portrait(widgets::TensorInspector* inspector, std::shared_ptr<const ModelSnapshot> snapshot,
                  int tensor);

signals:
    // A model's measurement is complete (`message`: what the status bar says of it).
    void measured(const QString& path, const QString& message);
    void failed(const QString& message);
    // A tensor's θ was stored as it was measured (none when the cache had them all).
    void tensorApplied(const QString& path, int tensor);

private:
    void ensureMeasured(const QString& path);
    void measure(const QString& path);

    JobTracker* m_jobs;
    model::OpenModels* m_models;
    QHash<QString, quint64> m_measurements;                // the measurement of each open model
    QHash<widgets::TensorInspector*, quint64> m_portraits; // the portrait each inspector waits for
};

} // namespace organ::app
