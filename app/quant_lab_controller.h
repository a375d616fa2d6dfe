#pragma once

#include "job_tracker.h"
#include "quant_lab_page.h"
#include "window_host.h"

#include <QHash>
#include <QObject>
#include <memory>

namespace organ::app {

// The Quantization page of each model: the error report and the Pareto sweep as jobs on the
// engine's worker (progress in the page and the status bar, the page's buttons cancel), and a
// chosen mix made the plan's quantize operation on the recipient (undoable, as the Quantize…
// dialog makes it). The model's own run on a text is kept per model, so that another sweep on
// the same text does not run it again.
class QuantLabController : public QObject {
    Q_OBJECT
public:
    QuantLabController(widgets::ModelPane* recipient, widgets::ModelPane* donor, SurgeryController* surgery,
                       WindowHost host);

    // A view was opened: its page's buttons are wired here.
    void attach(widgets::ModelView* view);
    void measureErrors(widgets::ModelView* view);
    void findMixes(widgets::ModelView* view);
    // Makes `point`'s recipe the plan's quantize operation of `view`'s model, when it is the
    // recipient the plan takes operations on.
    void planMix(widgets::ModelView* view, const ParetoPoint& point);

private:
    using Run = widgets::QuantLabPage::Run;
    // Starts `run`'s job for `view`'s page: its progress in the page, and at its end `done` (when
    // it is done) or the page told why not.
    void startRun(widgets::ModelView* view, Run run, const char* kind, const QString& title,
                  JobTracker::Work work, std::function<void(widgets::QuantLabPage* page)> done);
    // Which pages may plan a mix, and why not.
    void updatePlanning();
    bool isRecipient(widgets::ModelView* view) const;

    widgets::ModelPane* m_recipient;
    widgets::ModelPane* m_donor;
    SurgeryController* m_surgery;
    WindowHost m_host;
    QHash<widgets::ModelView*, quint64> m_jobs[2]; // per run: the job each view's page waits for
    // Per model path: its own run on the last text a sweep used.
    QHash<QString, std::shared_ptr<const SensitivityReference>> m_references;
    QHash<QString, int> m_views; // per model path: the views attached that show it
};

} // namespace organ::app
