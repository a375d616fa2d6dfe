// The window's merges: the Merge… dialog of a Shift drop or a donor's menu, and the θ of the
// merged tensors computed on the engine thread for the heatmap's preview.
#include "merge_controller.h"

#include "graft/planned_theta.h"
#include "job_tracker.h"
#include "merge_dialog.h"
#include "model_view.h"

#include <QFileInfo>
#include <algorithm>
#include <set>

namespace organ::app {

MergeController::MergeController(model::GraftDocument* document, widgets::ModelPane* recipient,
                                 widgets::ModelPane* donor, WindowHost host, QObject* parent)
    : QObject(parent), m_document(document), m_recipient(recipient), m_donor(donor), m_host(std::move(host)) {
    connect(m_document, &model::GraftDocument::mergeRequested, this, &MergeController::askHow);
}

void MergeController::askHow(const model::GraftDocument::MergeRequest& request) {
    const auto recipient = m_document->model(request.recipient);
    if (recipient == nullptr) {
        return;
    }
    widgets::MergeDialog::Setup setup;
    setup.recipient = request.recipient;
    setup.donor = request.donor;
    // The donor the tensors come from first, then the other open donors.
    setup.donors << request.donor;
    for (widgets::ModelView* view : m_donor->views()) {
        const QString path = QString::fromStdString(view->snapshot().model->path());
        if (!setup.donors.contains(path)) {
            setup.donors << path;
        }
    }
    // A donor none of whose tensors of these names has the recipient's shape cannot take part.
    for (const QString& path : setup.donors) {
        const auto donor = m_document->model(path);
        if (path == request.donor || donor == nullptr) {
            continue;
        }
        const TensorInfo* example = nullptr; // the first tensor it has in another shape
        const bool fits = std::ranges::any_of(request.names, [&](const std::string& name) {
            const TensorInfo* mine = recipient->model->findTensor(name);
            const TensorInfo* theirs = donor->model->findTensor(name);
            if (mine == nullptr || theirs == nullptr) {
                return false;
            }
            if (mine->ne != theirs->ne) {
                example = example != nullptr ? example : theirs;
                return false;
            }
            return true;
        });
        if (!fits) {
            const TensorInfo* mine = example ? recipient->model->findTensor(example->name) : nullptr;
            setup.unfit[path] =
                example == nullptr
                    ? tr("%1 has none of these tensors").arg(QFileInfo(path).fileName())
                    : tr("None of these tensors has the recipient's shape in %1 (%2: %3 there, %4 in the "
                         "recipient)")
                          .arg(QFileInfo(path).fileName(), QString::fromStdString(example->name),
                               QString::fromStdString(example->shapeText()),
                               QString::fromStdString(mine->shapeText()));
        }
    }
    setup.what = request.names.size() == 1
                     ? model::displayText(request.names.front())
                     : model::countOf(qint64(request.names.size()), tr("tensor"), tr("tensors"));
    setup.blocks = recipient->anatomy.layerCount();
    setup.leftOut = request.leftOut;
    setup.planned = m_document->plannedMerge();
    widgets::MergeDialog dialog(setup, m_host.window);
    if (dialog.exec() != QDialog::Accepted) {
        return;
    }
    if (!m_document->merge(request.recipient, dialog.spec(), request.names)) {
        m_host.say(m_document->lastDropMessage());
        return;
    }
    if (!request.leftOut.isEmpty()) {
        m_host.say(tr("Merged %1; left out %2: %3")
                       .arg(setup.what)
                       .arg(request.leftOut.size())
                       .arg(request.leftOut.front()));
    }
}

void MergeController::changePlannedMerge() {
    const auto planned = m_document->plannedMerge();
    if (!planned) {
        return;
    }
    model::GraftDocument::MergeRequest request;
    request.ok = true;
    request.recipient = m_document->base();
    for (const MergeModel& m : planned->models) {
        const QString path = QString::fromStdString(m.model);
        if (path != request.recipient && m_document->model(path) != nullptr) {
            request.donor = path;
            break;
        }
    }
    if (request.donor.isEmpty()) {
        m_host.say(tr("Open the merge's models to change it"));
        return;
    }
    for (const model::GraftDocument::Merged& merged : m_document->mergedTensors()) {
        request.names.push_back(merged.name);
    }
    askHow(request);
}

void MergeController::mergeFromDonor(widgets::ModelView* donor, std::vector<int> tensors) {
    widgets::ModelView* recipient = m_recipient->currentView();
    if (recipient == nullptr) {
        m_host.say(tr("Open a model as the recipient to merge into it"));
        return;
    }
    model::TensorDrag drag;
    drag.model = QString::fromStdString(donor->snapshot().model->path());
    drag.tensors = std::move(tensors);
    if (drag.tensors.empty()) {
        for (int t = 0; t < int(donor->snapshot().model->tensors().size()); ++t) {
            drag.tensors.push_back(t);
        }
    }
    const auto request = m_document->evaluateMerge(
        drag, QString::fromStdString(recipient->snapshot().model->path()), DropTarget{});
    if (!request.ok) {
        m_host.showError(tr("Cannot merge"), request.message);
        return;
    }
    askHow(request);
}

void MergeController::mergeFromSender(std::vector<int> tensors) {
    if (auto* donor = qobject_cast<widgets::ModelView*>(sender())) {
        mergeFromDonor(donor, std::move(tensors));
    }
}

QString MergeController::planKey() const {
    GraftPlan plan = m_document->plan();
    plan.output.clear();
    std::erase_if(plan.operations, [](const GraftOperation& o) {
        return o.kind == GraftOperation::Kind::SetMetadata || o.kind == GraftOperation::Kind::RemoveMetadata;
    });
    return QString::fromStdString(graftPlanToJson(plan).dump());
}

std::optional<std::optional<double>> MergeController::mergedTheta(const std::string& name) {
    // The key once per plan revision: the preview asks for every merged tensor in turn.
    if (m_keyRevision != m_document->revision()) {
        m_keyRevision = m_document->revision();
        m_revisionKey = planKey();
    }
    const QString& key = m_revisionKey;
    if (key != m_key) {
        // Another plan: what was computed or asked for belongs to the old one.
        m_host.jobs->cancelKind("merge-preview");
        m_theta.clear();
        m_pending.clear();
        m_key = key;
    }
    const QString tensor = QString::fromStdString(name);
    if (const auto it = m_theta.find(tensor); it != m_theta.end()) {
        return *it;
    }
    if (!m_pending.contains(tensor)) {
        m_pending.insert(tensor);
        // Asked for together as the preview walks the tensors: one job for what is missing.
        if (m_pending.size() == 1) {
            QMetaObject::invokeMethod(
                this,
                [this] {
                    std::vector<std::string> names;
                    for (const QString& t : m_pending) {
                        names.push_back(t.toStdString());
                    }
                    std::sort(names.begin(), names.end());
                    startPreview(std::move(names));
                },
                Qt::QueuedConnection);
        }
    }
    return std::nullopt;
}

void MergeController::startPreview(std::vector<std::string> names) {
    if (names.empty() || m_document->report().hasErrors() || !m_document->unavailable().isEmpty()) {
        m_pending.clear();
        return;
    }
    std::string missing;
    const auto models = m_document->openModels(m_document->plan(), &missing);
    if (!models) {
        m_pending.clear();
        return;
    }
    JobTracker::Job job;
    job.kind = "merge-preview";
    job.title = tr("Previewing the merge of %n tensor(s)", nullptr, int(names.size()));
    const QString key = m_key;
    job.ended = [this, key](const JobSnapshot&) {
        if (key == m_key) {
            m_pending.clear(); // what did not arrive is asked for again
        }
    };
    m_host.jobs->start(
        std::move(job),
        [this, key, names = std::move(names), plan = m_document->plan(), report = m_document->report(),
         models = *models](const ProgressFn& progress, const StopToken& stop, const JobTracker::Post& post) {
            // Each θ as it comes; a tensor that cannot be made shows none (the plan's check and
            // the assembly say why).
            auto deliver = [this, key, &post](const std::string& name, std::optional<double> theta) {
                post([this, key, name = QString::fromStdString(name), theta] {
                    if (key != m_key) {
                        return;
                    }
                    m_theta.insert(name, theta);
                    m_pending.remove(name);
                    emit thetaArrived();
                });
            };
            std::size_t delivered = 0;
            try {
                const GraftModels graftModels = GraftModels::fromModels(models);
                measurePlannedTensors(
                    plan, graftModels, report, names,
                    [&](const PlannedTheta& measured, std::size_t done) {
                        deliver(measured.name, measured.theta);
                        delivered = done;
                        progress(Progress{done, names.size(), "merging"});
                    },
                    &stop);
            } catch (const std::exception& e) {
                for (std::size_t k = delivered; k < names.size(); ++k) {
                    deliver(names[k], std::nullopt);
                }
                return JobResult::failed(e.what());
            }
            return stop.stopRequested() ? JobResult::cancelled() : JobResult::ok();
        },
        this);
}

} // namespace organ::app
