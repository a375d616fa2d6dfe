#pragma once

#include "anatomy/anatomy_tree.h"
#include "window_classes.h"

#include <QHash>
#include <QObject>
#include <memory>

namespace organ::app {

// Spectral health in the window (measure/spectral, spectral v1): a view's α heatmap, every weight
// matrix fitted on the engine's worker when the metric is first chosen; and the inspector's
// eigenvalue spectrum of the tensor it shows, on the interactive worker (a newer tensor cancels
// the older one's). Both show in the status bar with progress and cancel.
class SpectralController : public QObject {
    Q_OBJECT
public:
    SpectralController(JobTracker* jobs, QObject* parent);

    // Follows the view's α requests and its inspector's tensor.
    void attach(widgets::ModelView* view);
    // The eigenvalues of `snapshot`'s tensor for `inspector` (its first matrix: expert 0 of a 3-D
    // tensor); a tensor without a spectrum gets a note why.
    void eigenvalues(widgets::TensorInspector* inspector, std::shared_ptr<const ModelSnapshot> snapshot,
                     int tensor);

private:
    void spectra(widgets::ModelView* view);

    JobTracker* m_jobs;
    QHash<widgets::ModelView*, quint64> m_spectra;
    QHash<widgets::TensorInspector*, quint64> m_eigenvalues;
};

} // namespace organ::app
