#include "vitals_controller.h"

#include "display_names.h"
#include "engine_thread.h"
#include "graft_document.h"
#include "graft_plan_panel.h"
#include "model_pane.h"
#include "model_view.h"
#include "surgery_controller.h"
#include "vitals_page.h"

#include <QFileInfo>
#include <QMainWindow>
#include <QStatusBar>
#include <set>

namespace organ::app {
namespace {

std::size_t vocabularyOf(const GgufModel& model) {
    const TensorInfo* embed = model.findTensor("token_embd.weight");
    return embed != nullptr && embed->nDims == 2 ? std::size_t(embed->ne[1]) : 0;
}

} // namespace

VitalsController::VitalsController(QMainWindow* window, widgets::ModelPane* recipient,
                                   widgets::ModelPane* donor, EngineThread* engine,
                                   SurgeryController* surgery)
    : QObject(window), m_window(window), m_recipient(recipient), m_donor(donor), m_engine(engine),
      m_surgery(surgery) {
    connect(m_surgery->panel(), &widgets::GraftPlanPanel::checkRequested, this, [this] {
        if (m_check != 0) {
            m_engine->cancelVitals(); // the button's Cancel while a check runs
            return;
        }
        QString error;
        if (!checkChimera(&error)) {
            m_surgery->panel()->setChimeraVitals(error.toHtmlEscaped(), m_surgery->document()->revision());
        }
    });
    connectEngine();
    connect(m_surgery->document(), &model::GraftDocument::changed, this,
            &VitalsController::updatePlannedChimera);
    for (widgets::ModelPane* pane : {m_recipient, m_donor}) {
        connect(pane, &widgets::ModelPane::viewsChanged, this, &VitalsController::updatePlannedChimera);
    }
}

void VitalsController::updatePlannedChimera() {
    const model::GraftDocument* document = m_surgery->document();
    const bool current = m_chimera && m_chimeraRevision == document->revision();
    for (widgets::ModelView* view : m_recipient->views()) {
        const bool planned = !document->isEmpty() &&
                             document->base() == QString::fromStdString(view->snapshot().model->path());
        view->vitalsPage()->setPlannedChimera(planned, planned && current ? m_chimera : nullptr);
    }
}

void VitalsController::attach(widgets::ModelView* view) {
    widgets::VitalsPage* page = view->vitalsPage();
    connect(page, &widgets::VitalsPage::takeRequested, this, [this, view] { takeVitals(view); });
    connect(page, &widgets::VitalsPage::cancelRequested, m_engine, &EngineThread::cancelVitals);
    updatePlannedChimera();
    connect(page, &widgets::VitalsPage::removeLayersRequested, this,
            [this, view](std::uint32_t first, std::uint32_t count) {
                const QString path = QString::fromStdString(view->snapshot().model->path());
                // From the last: each removal renumbers the layers after it.
                for (std::uint32_t k = count; k-- > 0;) {
                    m_surgery->document()->removeLayer(path, first + k);
                }
                m_window->statusBar()->showMessage(
                    tr("Planned: remove %1 from layer %2 — Check chimera shows what it costs")
                        .arg(model::countOf(count, tr("layer"), tr("layers")))
                        .arg(first),
                    10000);
            });
}

void VitalsController::takeVitals(widgets::ModelView* view) {
    const auto& self = view->snapshot().model;
    auto job = std::make_shared<VitalsJob>(VitalsJob{ModelWeights::ofModel(self), {}, {}, {}});
    job->stop = std::make_shared<StopToken>();
    // Each other model once, though it may be open in both panes or in two tabs.
    std::set<std::string> compared{self->path()};
    for (widgets::ModelView* other : m_recipient->views() + m_donor->views()) {
        const auto& model = other->snapshot().model;
        if (vocabularyOf(*model) == vocabularyOf(*self) && compared.insert(model->path()).second) {
            job->parents.push_back(ModelWeights::ofModel(model));
        }
    }
    view->vitalsPage()->setRunning(
        tr("Running %1 and %2…")
            .arg(model::modelDisplayName(*self))
            .arg(model::countOf(qint64(job->parents.size()), tr("other model"), tr("other models"))));
    m_pages.insert(m_engine->vitals(std::move(job)), view);
}

bool VitalsController::checkChimera(QString* error) {
    model::GraftDocument* document = m_surgery->document();
    if (document->isEmpty() || !document->unavailable().isEmpty() || document->report().hasErrors()) {
        *error = document->isEmpty()                  ? tr("The plan is empty")
                 : !document->unavailable().isEmpty() ? document->unavailable()
                                                      : tr("The plan has errors; see the findings");
        return false;
    }
    std::string missing;
    const auto models = document->openModels(document->plan(), &missing);
    if (!models) {
        *error = tr("%1 is not open").arg(QFileInfo(QString::fromStdString(missing)).fileName());
        return false;
    }
    try {
        GraftModels graftModels = GraftModels::fromModels(*models);
        graftModels.loadImportance(document->plan());
        auto job = std::make_shared<VitalsJob>(
            VitalsJob{ModelWeights::ofPlan(document->plan(), graftModels, document->report()), {}, {}, {}});
        job->stop = std::make_shared<StopToken>();
        for (const auto& [id, model] : *models) {
            job->parents.push_back(ModelWeights::ofModel(model));
        }
        m_surgery->panel()->setChecking(
            tr("Checking the chimera: running it and its %1…")
                .arg(model::countOf(qint64(job->parents.size()), tr("parent"), tr("parents"))));
        m_check = m_engine->vitals(std::move(job));
        m_checkRevision = document->revision();
        return true;
    } catch (const std::exception& e) {
        *error = model::displayText(e.what());
        return false;
    }
}

void VitalsController::connectEngine() {
    const VitalsWorker* worker = m_engine->vitalsWorker();
    connect(worker, &VitalsWorker::progress, this, [this](quint64 g, quint64, quint64, const QString& stage) {
        if (const auto view = m_pages.value(g)) {
            view->vitalsPage()->setProgress(stage + u'…');
        } else if (g == m_check) {
            m_surgery->panel()->setChecking(tr("Checking the chimera: %1…").arg(stage));
        }
    });
    connect(
        worker, &VitalsWorker::ready, this, [this](quint64 g, std::shared_ptr<const VitalsReport> report) {
            if (const auto view = m_pages.take(g)) {
                view->setVitalsReport(std::move(report));
            } else if (g == m_check) {
                m_check = 0;
                m_chimera = report;
                m_chimeraRevision = m_checkRevision;
                updatePlannedChimera();
                // "perplexity 2279.968 → 4.416 · KL to the recipient 0.0400 …": the recipient's (the first
                // parent) then the chimera's, and the divergence from each parent.
                const auto& parents = report->parents;
                QString html =
                    tr("<b>Chimera (planned):</b> perplexity %1%2")
                        .arg(parents.empty()
                                 ? QString()
                                 : model::finiteNumber(parents.front().perplexity.perplexity, 3) + tr(" → "),
                             model::finiteNumber(report->perplexity.perplexity, 3));
                for (const auto& p : parents) {
                    html += tr(" · KL to <b>%1</b> %2 (top-1 agrees %3 %)")
                                .arg(model::displayText(p.label).toHtmlEscaped(),
                                     model::finiteNumber(p.divergence.meanKl, 4),
                                     model::finiteNumber(100 * p.divergence.topAgreement, 1));
                }
                html += model::sampleHtml(report->prompt, report->continuation);
                m_surgery->panel()->setChimeraVitals(html, m_checkRevision);
            }
        });
    auto ended = [this](quint64 g, const QString& message) {
        if (const auto view = m_pages.take(g)) {
            view->vitalsPage()->setFailed(message);
        } else if (g == m_check) {
            m_check = 0;
            m_surgery->panel()->setChimeraVitals(message.toHtmlEscaped(), m_checkRevision);
        }
    };
    connect(worker, &VitalsWorker::failed, this, ended);
    connect(worker, &VitalsWorker::cancelled, this, [ended](quint64 g) { ended(g, tr("Cancelled.")); });
}

} // namespace organ::app
