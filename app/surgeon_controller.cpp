// Graft → Auto-surgeon…: organ surgeon's search in the window, on the engine thread.
#include "surgeon_controller.h"

#include "display_names.h"
#include "graft/graft_check.h"
#include "graft_document.h"
#include "job_tracker.h"
#include "model_pane.h"
#include "model_view.h"
#include "surgeon_dialog.h"
#include "surgeon_window.h"
#include "surgery_controller.h"
#include "vitals/model_weights.h"
#include "vitals/quant_pareto.h"

#include "support/errors.h"
#include "support/text_format.h"

#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QMenu>
#include <algorithm>

namespace organ::app {
namespace {

QString methodText(MergeMethod method) {
    const std::string_view name = mergeMethodName(method);
    return QString::fromUtf8(name.data(), qsizetype(name.size()));
}

QString goalText(const SurgeonController::Search& s) {
    const QString recipient = QFileInfo(s.recipient).fileName();
    QStringList donors;
    for (const QString& d : s.donors) {
        donors << QFileInfo(d).fileName();
    }
    switch (s.request.goal) {
    case SurgeonGoal::Prune:
        return SurgeonController::tr("Prune %1 of %2")
            .arg(model::countOf(s.request.prune, SurgeonController::tr("block"),
                                SurgeonController::tr("blocks")),
                 recipient);
    case SurgeonGoal::Merge:
        return SurgeonController::tr("Merge %1 into %2 (%3)")
            .arg(donors.join(QStringLiteral(", ")), recipient, methodText(s.request.method));
    case SurgeonGoal::Organs:
        return SurgeonController::tr("The best organs for %1 from %2")
            .arg(recipient, donors.join(QStringLiteral(", ")));
    }
    return {};
}

QString objectiveText(const SurgeonController::Search& s) {
    return s.reference.isEmpty() ? SurgeonController::tr("mean NLL")
                                 : SurgeonController::tr("KL from %1").arg(QFileInfo(s.reference).fileName());
}

} // namespace

SurgeonController::SurgeonController(SurgeryController* surgery, widgets::ModelPane* recipient,
                                     widgets::ModelPane* donor, WindowHost host)
    : QObject(host.window), m_surgery(surgery), m_recipient(recipient), m_donor(donor),
      m_host(std::move(host)) {}

void SurgeonController::populateMenu(QMenu* graft) {
    // With the plan's other actions, above the separator before the plan dock's toggle.
    auto* action = new QAction(tr("A&uto-surgeon…"), graft);
    connect(action, &QAction::triggered, this, &SurgeonController::askAndSearch);
    const QList<QAction*> actions = graft->actions();
    const auto separator =
        std::find_if(actions.rbegin(), actions.rend(), [](const QAction* a) { return a->isSeparator(); });
    graft->insertAction(separator != actions.rend() ? *separator : nullptr, action);
    action->setObjectName(QStringLiteral("autoSurgeonAction"));
    action->setToolTip(
        tr("Searches graft plans of the focused model (prune blocks, merge weights with donors, "
           "the best organs from donors) and keeps the best"));
}

widgets::ModelView* SurgeonController::viewOf(const QString& path) const {
    for (widgets::ModelView* view : m_recipient->views() + m_donor->views()) {
        if (QString::fromStdString(view->snapshot().model->path()) == path) {
            return view;
        }
    }
    return nullptr;
}

std::shared_ptr<const GgufModel> SurgeonController::openModel(const QString& path) const {
    widgets::ModelView* view = viewOf(path);
    return view != nullptr ? view->snapshot().model : nullptr;
}

void SurgeonController::askAndSearch() {
    widgets::ModelView* focused = m_host.focusedView();
    if (focused == nullptr) {
        m_host.say(tr("Open a model to search plans for it"));
        return;
    }
    if (m_job != 0) {
        m_host.showError(tr("Auto-surgeon"), tr("A search is running: cancel it in its window first"));
        return;
    }
    widgets::SurgeonDialog::Setup setup;
    setup.recipient = QString::fromStdString(focused->snapshot().model->path());
    setup.blocks = focused->snapshot().anatomy.layerCount();
    for (widgets::ModelPane* pane : {m_recipient, m_donor}) {
        for (widgets::ModelView* view : pane->views()) {
            const QString path = QString::fromStdString(view->snapshot().model->path());
            if (path != setup.recipient && !setup.models.contains(path)) {
                setup.models << path;
                if (pane == m_donor) {
                    setup.donors << path;
                }
            }
        }
    }
    widgets::SurgeonDialog dialog(setup, m_host.window);
    if (dialog.exec() != QDialog::Accepted) {
        return;
    }
    Search s;
    s.recipient = setup.recipient;
    s.donors = dialog.request().goal == SurgeonGoal::Prune ? QStringList() : dialog.donors();
    s.reference = dialog.reference();
    s.text = dialog.textPath();
    s.holdout = s.text.isEmpty() ? 0 : dialog.holdout();
    s.request = dialog.request();
    search(s);
}

void SurgeonController::search(const Search& s) {
    const auto recipient = openModel(s.recipient);
    if (m_window == nullptr) {
        m_window = new widgets::SurgeonWindow(recipient ? model::modelDisplayName(*recipient)
                                                        : QFileInfo(s.recipient).completeBaseName(),
                                              m_host.window);
        connect(m_window, &widgets::SurgeonWindow::cancelRequested, this,
                [this] { m_host.jobs->cancel(m_job); });
        connect(m_window, &widgets::SurgeonWindow::loadRequested, this, [this](const GraftPlan& plan) {
            m_surgery->document()->adopt(plan, tr("Load the auto-surgeon's plan"));
            m_host.say(
                tr("Planned: the auto-surgeon's plan (%1) — Graft → Assemble writes it, Edit → Undo takes "
                   "it back")
                    .arg(model::countOf(qint64(plan.operations.size()), tr("operation"), tr("operations"))));
        });
    }
    widgets::SurgeonWindow* window = m_window;
    window->start(s.request.goal, goalText(s), objectiveText(s),
                  recipient ? viewOf(s.recipient)->snapshot().anatomy.layerCount() : 0);
    window->show();
    window->raise();
    SurgeonModels models;
    try {
        if (!recipient) {
            throw FormatError(fileLabel(s.recipient.toStdString()) + ": not open");
        }
        models.recipient = {s.recipient.toStdString(), recipient};
        for (const QString& d : s.donors) {
            const auto donor = openModel(d);
            if (!donor) {
                throw FormatError(fileLabel(d.toStdString()) + ": not open");
            }
            models.donors.emplace_back(d.toStdString(), donor);
        }
        if (!s.reference.isEmpty()) {
            const auto reference = openModel(s.reference);
            if (!reference) {
                throw FormatError(fileLabel(s.reference.toStdString()) + ": not open");
            }
            models.reference.emplace(s.reference.toStdString(), reference);
        }
    } catch (const std::exception& e) {
        window->setFailed(model::displayText(e.what()));
        return;
    }
    SurgeonRequest request = s.request;
    const QFileInfo recipientFile(s.recipient);
    request.output = recipientFile.absoluteDir()
                         .filePath(recipientFile.completeBaseName() + QStringLiteral("-surgeon.gguf"))
                         .toStdString();
    // The vital signs of the last search's plan are no longer wanted.
    m_host.jobs->cancel(m_vitals);
    const quint64 searchNumber = ++m_searches;
    auto record = std::make_shared<std::shared_ptr<const SurgeonRecord>>();
    const QPointer<widgets::SurgeonWindow> shown = window;
    JobTracker::Job job;
    job.kind = "surgeon";
    job.title = tr("Auto-surgeon: %1").arg(goalText(s));
    job.progress = [shown](const JobProgress& p) {
        if (shown) {
            shown->setProgress(
                p.total > 0 ? tr("%1 — %2 of at most %3 candidates…").arg(p.stage).arg(p.done).arg(p.total)
                            : p.stage + u'…');
        }
    };
    job.ended = [this, shown, record, s, searchNumber](const JobSnapshot& ended) {
        if (searchNumber == m_searches) {
            m_job = 0;
        }
        if (!shown || searchNumber != m_searches) {
            return;
        }
        if (*record) {
            shown->setRecord(*record);
            if ((*record)->best) {
                startVitals(*record, s);
            }
        } else {
            shown->setFailed(ended.state == JobState::Cancelled
                                 ? tr("Cancelled before any candidate was scored.")
                                 : model::displayText(ended.message));
        }
    };
    m_job = m_host.jobs->start(
        std::move(job),
        [this, models, request, text = s.text.toStdString(), holdout = s.holdout, record, shown,
         searchNumber](const ProgressFn& progress, const StopToken& stop,
                       const JobTracker::Post& post) mutable {
            std::tie(request.text, request.holdout) =
                splitHoldout(text.empty() ? std::string() : readLabText(text), holdout);
            SurgeonRecord found = runSurgeon(models, request, progress, &stop,
                                             [&](const SurgeonCandidate& candidate, std::size_t index) {
                                                 post([this, shown, candidate, index, searchNumber] {
                                                     if (shown && searchNumber == m_searches) {
                                                         shown->addCandidate(candidate, index);
                                                     }
                                                 });
                                             });
            // Kept whether it ran to its end or was cancelled: the best found so far is the answer.
            *record = std::make_shared<const SurgeonRecord>(std::move(found));
            return JobResult::ok();
        },
        this);
}

void SurgeonController::startVitals(const std::shared_ptr<const SurgeonRecord>& record, const Search& s) {
    const GraftPlan plan = record->candidates[*record->best].plan;
    const QPointer<widgets::SurgeonWindow> shown = m_window;
    // The parents: the recipient, each donor, the reference (once each).
    std::vector<std::shared_ptr<const GgufModel>> parents;
    NamedModels named;
    for (const QString& path : QStringList{s.recipient} + s.donors + QStringList{s.reference}) {
        const auto model = path.isEmpty() ? nullptr : openModel(path);
        if (model == nullptr || std::find(parents.begin(), parents.end(), model) != parents.end()) {
            continue;
        }
        parents.push_back(model);
        if (path == s.recipient) {
            named.emplace_back("base", model);
        }
    }
    for (const auto& [id, path] : plan.donors) {
        if (const auto model = openModel(QString::fromStdString(path))) {
            named.emplace_back(id, model);
        }
    }
    const QString on = s.text.isEmpty() ? tr("the built-in text of vital signs")
                       : s.holdout > 0  ? tr("the held-out last %1 % of %2")
                                             .arg(qRound(s.holdout * 100))
                                             .arg(QFileInfo(s.text).fileName())
                                       : QFileInfo(s.text).fileName();
    m_window->setVitalsStatus(tr("Running the chosen plan, the recipient and the donors on %1…").arg(on));
    auto report = std::make_shared<std::shared_ptr<const VitalsReport>>();
    JobTracker::Job job;
    job.kind = "surgeon-vitals";
    job.title = tr("Vital signs of the auto-surgeon's plan");
    const quint64 searchNumber = m_searches;
    job.ended = [this, shown, report, on, searchNumber](const JobSnapshot& ended) {
        m_vitals = 0;
        if (!shown || searchNumber != m_searches) { // a newer search shows in the window
            return;
        }
        if (*report) {
            shown->setVitals(*report, tr("On %1 (%2 positions scored).").arg(on).arg((*report)->scored));
        } else {
            shown->setVitalsStatus(ended.state == JobState::Cancelled ? tr("Cancelled.")
                                                                      : model::displayText(ended.message));
        }
    };
    m_vitals = m_host.jobs->start(
        std::move(job),
        [plan, named, parents, report, text = s.text.toStdString(), holdout = s.holdout,
         chunk = s.request.chunk](const ProgressFn& progress, const StopToken& stop,
                                  const JobTracker::Post&) {
            const GraftModels models = GraftModels::fromModels(named);
            const CompatibilityReport checked = checkGraft(plan, models);
            const ModelWeights chimera = ModelWeights::ofPlan(plan, models, checked);
            std::vector<ModelWeights> weights;
            for (const auto& parent : parents) {
                weights.push_back(ModelWeights::ofModel(parent));
            }
            std::vector<const ModelWeights*> compared;
            for (const ModelWeights& w : weights) {
                compared.push_back(&w);
            }
            VitalsRequest request;
            if (!text.empty()) {
                const auto [search, held] = splitHoldout(readLabText(text), holdout);
                request.text = held.empty() ? search : held;
            }
            request.chunk = chunk;
            request.continuation = 0;
            request.layerImportance = false;
            auto taken = takeVitals(chimera, compared, request, progress, &stop);
            if (!taken) {
                return JobResult::cancelled();
            }
            *report = std::make_shared<const VitalsReport>(std::move(*taken));
            return JobResult::ok();
        },
        this);
}

} // namespace organ::app
