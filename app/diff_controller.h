#pragma once

#include "window_classes.h"

#include <QHash>
#include <QObject>
#include <QString>

namespace organ::app {

// The recipient's diff against the current donor in the window (measure/model_diff, as `organ
// diff` compares): run on the engine's worker with progress and cancel when the Δθ page's metric
// asks for it, dropped when the donor changes; a row of it activated shows both tensors side by
// side in the recipient's inspector, each with its portrait and eigenvalue spectrum.
class DiffController : public QObject {
    Q_OBJECT
public:
    DiffController(JobTracker* jobs, model::OpenModels* models, MeasureController* measure,
                   SpectralController* spectral, QObject* parent);

    void attach(widgets::ModelView* view);
    // The recipient's current donor (null: none): a diff against another donor is dropped.
    void setPair(widgets::ModelView* recipient, widgets::ModelView* donor);

private:
    void diff(widgets::ModelView* view);
    void showPair(widgets::ModelView* view, int tensor);

    JobTracker* m_jobs;
    model::OpenModels* m_models;
    MeasureController* m_measure;
    SpectralController* m_spectral;
    QHash<widgets::ModelView*, QString> m_donorOf;    // each recipient view's current donor's path
    QHash<widgets::ModelView*, QString> m_diffedWith; // the donor its diff (or diff under way) is with
    QHash<widgets::ModelView*, quint64> m_diffs;
};

} // namespace organ::app
