#pragma once

#include "graft_document.h"
#include "window_host.h"

#include <QHash>
#include <QObject>
#include <QSet>
#include <QString>
#include <optional>
#include <vector>

namespace organ::app {

// The window's merges: a drop with Shift held (or a donor's "Merge into the recipient…") asks for
// the method and parameters (widgets::MergeDialog) and puts the plan's merge operation; the θ each
// merged tensor will have is computed on the engine thread, nothing written, for the heatmap's
// preview (the recipient's θ, the merged θ and their Δ).
class MergeController : public QObject {
    Q_OBJECT
public:
    MergeController(model::GraftDocument* document, widgets::ModelPane* recipient, widgets::ModelPane* donor,
                    WindowHost host, QObject* parent);

    // The dialog for a merge the document found to fit; the plan's merge once it is accepted.
    void askHow(const model::GraftDocument::MergeRequest& request);
    // A donor's tensors (all of them when none are given) into the recipient shown.
    void mergeFromDonor(widgets::ModelView* donor, std::vector<int> tensors);
    // The same for the donor view that sent its mergeRequested.
    void mergeFromSender(std::vector<int> tensors);
    // The dialog for the plan's merge as it stands (its tensors, models and parameters): another
    // method or other parameters change it.
    void changePlannedMerge();

    // The θ a merged chimera tensor will have, by its name: nullopt while not known (its
    // computation is started), an empty θ when the tensor has none (constant) or cannot be made.
    std::optional<std::optional<double>> mergedTheta(const std::string& name);
    bool pending() const { return !m_pending.isEmpty(); }

signals:
    // A merged θ arrived: the preview is redrawn.
    void thetaArrived();

private:
    // What the merged bytes depend on: the plan's operations and models (not its output or its
    // metadata edits). θ computed for another key are stale.
    QString planKey() const;
    void startPreview(std::vector<std::string> names);

    model::GraftDocument* m_document;
    widgets::ModelPane* m_recipient;
    widgets::ModelPane* m_donor;
    WindowHost m_host;
    QString m_key;                                 // the plan the θ below belong to
    quint64 m_keyRevision = ~quint64(0);           // the document revision m_revisionKey is of
    QString m_revisionKey;                         // planKey() at that revision
    QHash<QString, std::optional<double>> m_theta; // tensor name → merged θ
    QSet<QString> m_pending;                       // asked of the engine thread
};

} // namespace organ::app
