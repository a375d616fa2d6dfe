#pragma once

#include <QHash>
#include <QObject>
#include <QString>

namespace organ::widgets {
class ModelView;
}

namespace organ::app {

class JobTracker;

// Measurement in the window: each open model's Z-measure on the engine's worker (from the
// measurement cache when the file is unchanged), θ filled into its view as each tensor is
// measured; and the inspector's portrait of the tensor selected, on the interactive worker (a
// newer selection drops an older one's result). A closed view's jobs are cancelled.
class MeasureController : public QObject {
    Q_OBJECT
public:
    MeasureController(JobTracker* jobs, QObject* parent);

    // Starts measuring the view's model and follows its selection for portraits.
    void attach(widgets::ModelView* view);

signals:
    // A model's measurement is applied (`message`: what the status bar says of it).
    void measured(widgets::ModelView* view, const QString& message);
    void failed(const QString& message);
    // A tensor's θ reached its view as it was measured (none when the cache had them all).
    void tensorApplied(widgets::ModelView* view, int tensor);

private:
    void portrait(widgets::ModelView* view, int tensor);

    JobTracker* m_jobs;
    QHash<widgets::ModelView*, quint64> m_portraits; // the portrait each view waits for
};

} // namespace organ::app
