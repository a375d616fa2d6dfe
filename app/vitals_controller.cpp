#include "vitals_controller.h"

#include "display_names.h"
#include "graft/assembly.h"
#include "graft_document.h"
#include "graft_plan_panel.h"
#include "job_tracker.h"
#include "model_pane.h"
#include "model_view.h"
#include "recent_files.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "surgery_controller.h"
#include "vitals/quant_pareto.h"
#include "vitals/vitals_report.h"
#include "vitals_page.h"

#include <QActionGroup>
#include <QDateTime>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QPointer>
#include <QSettings>
#include <set>

namespace organ::app {
namespace {

std::size_t vocabularyOf(const GgufModel& model) {
    const TensorInfo* embed = model.findTensor("token_embd.weight");
    return embed != nullptr && embed->nDims == 2 ? std::size_t(embed->ne[1]) : 0;
}

const QString kTextKey = QStringLiteral("vitals/text");
const QString kChunkKey = QStringLiteral("vitals/chunk");
const QString kRecentTextsKey = QStringLiteral("vitals/recentTexts");
constexpr qsizetype kRecentTexts = 5;

// What a text file is now (its size and time of change): a check taken on it is current while this
// is unchanged. Empty for the built-in text.
QString textStamp(const QString& path) {
    if (path.isEmpty()) {
        return {};
    }
    const QFileInfo file(path);
    return QString::number(file.size()) + u' ' + QString::number(file.lastModified().toMSecsSinceEpoch());
}

// "farm.txt", or "the built-in text".
QString textName(const QString& path) {
    return path.isEmpty() ? VitalsController::tr("the built-in text") : QFileInfo(path).fileName();
}

} // namespace

VitalsController::VitalsController(widgets::ModelPane* recipient, widgets::ModelPane* donor,
                                   SurgeryController* surgery, WindowHost host)
    : QObject(host.window), m_recipient(recipient), m_donor(donor), m_surgery(surgery),
      m_host(std::move(host)) {
    const QSettings settings;
    m_text = {settings.value(kTextKey).toString(),
              std::clamp(settings.value(kChunkKey).toInt(), 0, int(kMaxVitalsTokens))};
    m_recentTexts = settings.value(kRecentTextsKey).toStringList();
    m_recentTexts.removeDuplicates();
    m_recentTexts.removeAll(QString());
    m_recentTexts = m_recentTexts.mid(0, kRecentTexts);
    connect(m_surgery->panel()->checkMenu(), &QMenu::aboutToShow, this, &VitalsController::fillTextMenu);
    connect(m_surgery->panel(), &widgets::GraftPlanPanel::checkRequested, this, [this] {
        if (m_check != 0) {
            m_host.jobs->cancel(m_check); // the button's Cancel while a check runs
            return;
        }
        // Pressed again with nothing changed: the check shown is the plan's; said, not run again.
        if (m_chimera && m_chimeraRevision == m_surgery->document()->chimeraRevision() &&
            m_chimeraText == m_text && m_chimeraStamp == textStamp(m_text.path) &&
            !m_surgery->panel()->vitalsLabel()->isHidden()) {
            m_host.say(
                tr("The chimera's vital signs shown are current: neither the plan nor the text has changed "
                   "since they were taken"));
            return;
        }
        QString error;
        if (!checkChimera(&error)) {
            m_surgery->panel()->setChimeraVitals(error.toHtmlEscaped(),
                                                 m_surgery->document()->chimeraRevision());
        }
    });
    connect(m_surgery->document(), &model::GraftDocument::changed, this,
            &VitalsController::updatePlannedChimera);
    for (widgets::ModelPane* pane : {m_recipient, m_donor}) {
        connect(pane, &widgets::ModelPane::viewsChanged, this, &VitalsController::updatePlannedChimera);
        connect(pane, &widgets::ModelPane::viewsChanged, this, &VitalsController::updateOpenModels);
    }
}

void VitalsController::chooseText(const Text& text) {
    m_text = text;
    QSettings settings;
    settings.setValue(kTextKey, text.path);
    settings.setValue(kChunkKey, text.chunk);
    for (widgets::ModelView* view : m_recipient->views() + m_donor->views()) {
        view->vitalsPage()->showTextChoice(text.path, text.chunk);
    }
}

void VitalsController::rememberText(const QString& path) {
    if (path.isEmpty()) {
        return;
    }
    m_recentTexts = newestFirst(m_recentTexts, path, kRecentTexts);
    QSettings().setValue(kRecentTextsKey, m_recentTexts);
}

void VitalsController::fillTextMenu() {
    QMenu* menu = m_surgery->panel()->checkMenu();
    menu->clear();
    menu->addSection(tr("Check on"));
    const auto choose = [this](const QString& path) {
        chooseText({path, m_text.chunk});
        m_host.say(tr("Vital signs and Check chimera are taken on %1").arg(textName(path)));
    };
    menu->addAction(tr("Choose a text…"), this, [this, choose] {
        const QString path = widgets::VitalsPage::askForText(m_host.window, m_text.path);
        if (!path.isEmpty()) {
            choose(path);
        }
    });
    auto* group = new QActionGroup(menu);
    const auto offer = [&](const QString& label, const QString& path) {
        QAction* action = menu->addAction(label);
        action->setCheckable(true);
        action->setChecked(m_text.path == path);
        action->setToolTip(path);
        group->addAction(action);
        connect(action, &QAction::triggered, this, [choose, path] { choose(path); });
    };
    offer(tr("The built-in short stories"), QString());
    // The text chosen, though not scored yet, then those scored lately.
    QStringList texts = m_recentTexts;
    if (!m_text.path.isEmpty() && !texts.contains(m_text.path)) {
        texts.prepend(m_text.path);
    }
    for (const QString& path : texts) {
        offer(QFileInfo(path).fileName(), path);
    }
    menu->setToolTipsVisible(true);
}

void VitalsController::updateOpenModels() {
    QSet<QString> open;
    const QList<widgets::ModelView*> views = m_recipient->views() + m_donor->views();
    for (widgets::ModelView* view : views) {
        open.insert(QString::fromStdString(fileLabel(view->snapshot().model->path())));
    }
    for (widgets::ModelView* view : views) {
        view->vitalsPage()->setOpenModels(open);
    }
}

void VitalsController::updatePlannedChimera() {
    const model::GraftDocument* document = m_surgery->document();
    const bool current = m_chimera && m_chimeraRevision == document->chimeraRevision();
    for (widgets::ModelView* view : m_recipient->views()) {
        const bool planned = !document->isEmpty() &&
                             document->base() == QString::fromStdString(view->snapshot().model->path());
        view->vitalsPage()->setPlannedChimera(planned, planned && current ? m_chimera : nullptr);
    }
}

void VitalsController::attach(widgets::ModelView* view) {
    widgets::VitalsPage* page = view->vitalsPage();
    page->showTextChoice(m_text.path, m_text.chunk);
    connect(page, &widgets::VitalsPage::textChosen, this, [this](const QString& path, int chunk) {
        chooseText({path, chunk});
    });
    connect(page, &widgets::VitalsPage::takeRequested, this, [this, view] { takeVitals(view); });
    connect(view, &QObject::destroyed, this, [this, view] {
        if (const quint64 job = m_pageJobs.take(view)) {
            m_host.jobs->cancel(job);
        }
    });
    connect(page, &widgets::VitalsPage::cancelRequested, this, [this, view] {
        if (const quint64 job = m_pageJobs.value(view)) {
            m_host.jobs->cancel(job);
        }
    });
    updatePlannedChimera();
    connect(page, &widgets::VitalsPage::removeLayersRequested, this,
            [this, view](std::uint32_t first, std::uint32_t count) {
                const QString path = QString::fromStdString(view->snapshot().model->path());
                // From the last: each removal renumbers the layers after it.
                for (std::uint32_t k = count; k-- > 0;) {
                    m_surgery->document()->removeLayer(path, first + k);
                }
                m_host.say(tr("Planned: remove %1 from layer %2 — Check chimera shows what it costs")
                               .arg(model::countOf(count, tr("layer"), tr("layers")))
                               .arg(first),
                           10000);
            });
}

quint64 VitalsController::run(const ModelWeights& model, std::vector<ModelWeights> parents,
                              const QString& title, std::function<void(const QString& stage)> progress,
                              std::function<void(std::shared_ptr<const VitalsReport>, const QString&)> done) {
    auto report = std::make_shared<std::shared_ptr<const VitalsReport>>();
    JobTracker::Job job;
    job.kind = "vitals";
    job.title = title;
    job.progress = [progress = std::move(progress)](const JobProgress& p) { progress(p.stage); };
    job.ended = [report, done = std::move(done)](const JobSnapshot& ended) {
        if (ended.state == JobState::Done) {
            done(*report, {});
        } else {
            done(nullptr,
                 ended.state == JobState::Cancelled ? tr("Cancelled.") : model::displayText(ended.message));
        }
    };
    return m_host.jobs->start(
        std::move(job),
        [model, parents = std::move(parents), report, path = m_text.path.toStdString(),
         chunk = std::size_t(m_text.chunk)](const ProgressFn& p, const StopToken& stop,
                                            const JobTracker::Post&) {
            std::vector<const ModelWeights*> compared;
            for (const ModelWeights& parent : parents) {
                compared.push_back(&parent);
            }
            VitalsRequest request;
            if (!path.empty()) {
                request.text = readLabText(RootedPath(path));
            }
            request.chunk = chunk > 0 ? chunk : chunkToFit(model, request.text);
            auto taken = organ::takeVitals(model, compared, request, p, &stop);
            if (!taken) {
                return JobResult::cancelled();
            }
            *report = std::make_shared<const VitalsReport>(std::move(*taken));
            return JobResult::ok();
        },
        this);
}

void VitalsController::takeVitals(widgets::ModelView* view) {
    const auto& self = view->snapshot().model;
    std::vector<ModelWeights> parents;
    // Each other model once, though it may be open in both panes or in two tabs.
    std::set<std::string> compared{self->path()};
    for (widgets::ModelView* other : m_recipient->views() + m_donor->views()) {
        const auto& model = other->snapshot().model;
        if (vocabularyOf(*model) == vocabularyOf(*self) && compared.insert(model->path()).second) {
            parents.push_back(ModelWeights::ofModel(model));
        }
    }
    view->vitalsPage()->setRunning(
        tr("Running %1 and %2 on %3…")
            .arg(model::modelDisplayName(*self))
            .arg(model::countOf(qint64(parents.size()), tr("other model"), tr("other models")))
            .arg(textName(m_text.path)));
    const QPointer<widgets::ModelView> page = view;
    m_pageJobs.insert(view, run(
                                ModelWeights::ofModel(self), std::move(parents),
                                tr("Vital signs of %1").arg(model::modelDisplayName(*self)),
                                [page](const QString& stage) {
                                    if (page) {
                                        page->vitalsPage()->setProgress(stage + u'…');
                                    }
                                },
                                [this, page, path = m_text.path](std::shared_ptr<const VitalsReport> report,
                                                                 const QString& failure) {
                                    if (!page) {
                                        return;
                                    }
                                    m_pageJobs.remove(page);
                                    if (report) {
                                        rememberText(path);
                                        updateOpenModels();
                                        page->setVitalsReport(std::move(report),
                                                              path.isEmpty() ? QString() : textName(path));
                                    } else {
                                        page->vitalsPage()->setFailed(failure);
                                    }
                                }));
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
        const ModelWeights chimera = ModelWeights::ofPlan(document->plan(), graftModels, document->report());
        std::vector<ModelWeights> parents;
        for (const auto& [id, model] : *models) {
            parents.push_back(ModelWeights::ofModel(model));
        }
        m_surgery->panel()->setChecking(
            tr("Checking the chimera: running it and its %1 on %2…")
                .arg(model::countOf(qint64(parents.size()), tr("parent"), tr("parents")))
                .arg(textName(m_text.path)));
        m_checkRevision = document->chimeraRevision();
        m_checkText = m_text;
        m_checkStamp = textStamp(m_text.path);
        m_check = run(
            chimera, std::move(parents), tr("Checking the chimera"),
            [this](const QString& stage) {
                m_surgery->panel()->setChecking(tr("Checking the chimera: %1…").arg(stage));
            },
            [this](std::shared_ptr<const VitalsReport> report, const QString& failure) {
                m_check = 0;
                if (report) {
                    showChimera(report);
                } else {
                    m_surgery->panel()->setChimeraVitals(failure.toHtmlEscaped(), m_checkRevision);
                }
            });
        return true;
    } catch (const std::exception& e) {
        *error = model::displayText(e.what());
        return false;
    }
}

// "perplexity 2279.968 → 4.416 · KL to the recipient 0.0400 …": the recipient's (the first parent)
// then the chimera's, and the divergence from each parent.
void VitalsController::showChimera(const std::shared_ptr<const VitalsReport>& report) {
    m_chimera = report;
    m_chimeraRevision = m_checkRevision;
    m_chimeraText = m_checkText;
    m_chimeraStamp = m_checkStamp;
    rememberText(m_chimeraText.path);
    updatePlannedChimera();
    const auto& parents = report->parents;
    const QString on =
        report->chunk > 0 ? tr("%1 (%2 tokens, in chunks of %3)")
                                .arg(textName(m_chimeraText.path))
                                .arg(report->tokens.size())
                                .arg(report->chunk)
                          : tr("%1 (%2 tokens)").arg(textName(m_chimeraText.path)).arg(report->tokens.size());
    // Four decimals: a merge's gain on a domain is often in the third.
    QString html =
        tr("<b>Chimera (planned)</b> on %1: perplexity %2<b>%3</b>")
            .arg(on.toHtmlEscaped(),
                 parents.empty() ? QString()
                                 : tr("%1 (the recipient) → ")
                                       .arg(model::finiteNumber(parents.front().perplexity.perplexity, 4)),
                 model::finiteNumber(report->perplexity.perplexity, 4));
    for (const auto& p : parents) {
        html +=
            tr(" · KL to <b>%1</b> %2 (its perplexity %3, top-1 agrees %4 %)")
                .arg(model::displayText(p.label).toHtmlEscaped(), model::finiteNumber(p.divergence.meanKl, 4),
                     model::finiteNumber(p.perplexity.perplexity, 4),
                     model::finiteNumber(100 * p.divergence.topAgreement, 1));
    }
    html += model::sampleHtml(report->prompt, report->continuation);
    m_surgery->panel()->setChimeraVitals(html, m_checkRevision);
}

} // namespace organ::app
