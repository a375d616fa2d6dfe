// The auto-surgeon's window, as a user walks it: Graft → Auto-surgeon… on the family's base asks
// for the goal, text and budget, runs organ surgeon's search on the engine thread and draws every
// candidate the engine scored (objective over time, the Pareto front, the chosen plan's changes),
// then the chosen plan's vital signs against the recipient and donors on the held-out text.
// Cancel keeps the best found; Load into plan is one undoable step; every chart exports.
#include "graft_document.h"
#include "job_ends.h"
#include "main_window.h"
#include "model_pane.h"
#include "model_view.h"
#include "shared_models.h"
#include "surgeon_charts.h"
#include "surgeon_controller.h"
#include "surgeon_dialog.h"
#include "surgeon_window.h"
#include "surgery_controller.h"
#include "window_test_support.h"

#include "graft/graft_plan.h"
#include "support/text_format.h"
#include "vitals/quant_pareto.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>
#include <cmath>

using namespace organ;
using namespace organ::testing;

namespace {

std::string canonical(const GraftPlan& plan) {
    return graftPlanToJson(plan).dump();
}

bool near(double a, double b, double relative = 1e-4) {
    return std::abs(a - b) <= relative * std::max(std::abs(a), std::abs(b));
}

} // namespace

class TestWindowSurgeon : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<app::MainWindow> m_window;
    QString m_text; // the first stories of general.txt: a short text keeps the searches short

    void openFamily() {
        m_window = std::make_unique<app::MainWindow>();
        m_window->resize(1400, 1000);
        m_window->show();
        JobEnds measured(m_window->jobs(), "measure");
        [&] {
            QCOMPARE(m_window->openFiles({familyModel("family-base-f16.gguf")}), 1);
            QCOMPARE(m_window->openFiles({familyModel("family-farm-f16.gguf")}, app::MainWindow::Side::Donor),
                     1);
            QVERIFY(waitForJobs(measured, 2, 60000));
        }();
        m_window->currentView()->setFocus();
    }

    // Graft → Auto-surgeon… with the dialog filled in as a user would: the goal, the text, a
    // quarter held out; `more` sets the rest.
    void searchThroughMenu(SurgeonGoal goal, const std::function<void(widgets::SurgeonDialog*)>& more) {
        ModalSteps steps;
        steps.then([&](QWidget* active) {
            auto* dialog = qobject_cast<widgets::SurgeonDialog*>(active);
            if (dialog == nullptr) {
                return false;
            }
            auto* goalBox = dialog->findChild<QComboBox*>(QStringLiteral("surgeonGoal"));
            goalBox->setCurrentIndex(goalBox->findData(int(goal)));
            dialog->findChild<QLineEdit*>(QStringLiteral("surgeonText"))->setText(m_text);
            dialog->findChild<QDoubleSpinBox*>(QStringLiteral("surgeonHoldout"))->setValue(0.25);
            more(dialog);
            QMetaObject::invokeMethod(dialog, "accept", Qt::QueuedConnection);
            return true;
        });
        QAction* action = m_window->findChild<QAction*>(QStringLiteral("autoSurgeonAction"));
        QVERIFY(action != nullptr);
        action->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(steps.done(), 10000);
    }

    SurgeonModels familyModels(const std::vector<const char*>& donors = {}) const {
        SurgeonModels models;
        const std::string base = familyModel("family-base-f16.gguf").toStdString();
        models.recipient = {base, GgufModel::open(base)};
        for (const char* d : donors) {
            const std::string path = familyModel(d).toStdString();
            models.donors.emplace_back(path, GgufModel::open(path));
        }
        return models;
    }

    // The window's record checked against the chart: every scored candidate drawn where the
    // engine put it, the best-so-far line the running minimum of the choosable ones.
    static void checkObjectiveChart(widgets::SurgeonWindow* window) {
        const SurgeonRecord& r = *window->record();
        const auto& drawn = window->charts().objective->drawn();
        QCOMPARE(drawn.size(), r.candidates.size());
        std::vector<double> best;
        for (std::size_t i = 0; i < r.candidates.size(); ++i) {
            const SurgeonCandidate& c = r.candidates[i];
            QCOMPARE(drawn[i].candidate, i);
            QCOMPARE(drawn[i].x, c.seconds);
            QCOMPARE(drawn[i].y, c.score.objective);
            if (c.feasible) {
                best.push_back(best.empty() ? c.score.objective : std::min(best.back(), c.score.objective));
            }
        }
        QCOMPARE(window->charts().objective->bestSoFar(), best);
        QVERIFY(r.best);
        QCOMPARE(best.back(), r.candidates[*r.best].score.objective);
    }

private slots:
    void initTestCase() {
        initWindowTests(m_dir);
        ORGAN_REQUIRE_SHARED(familyModel("family-base-f16.gguf"));
        const QByteArray head = familyTextHead("general.txt", 900);
        QVERIFY(!head.isEmpty());
        m_text = m_dir.filePath(QStringLiteral("short.txt"));
        QFile out(m_text);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(head);
    }

    void cleanup() { m_window.reset(); }

    // Prune one block: the window holds the engine's candidates (the same search run here gives
    // the same objectives), its front and chosen plan, and the vital signs on the held-out part
    // agree with the search's held-out scores. Load into plan replaces the plan in one step.
    void pruneSearchShowsTheEnginesCandidates() {
        openFamily();
        JobEnds searched(m_window->jobs(), "surgeon");
        JobEnds vitals(m_window->jobs(), "surgeon-vitals");
        searchThroughMenu(SurgeonGoal::Prune, [](widgets::SurgeonDialog* dialog) {
            QVERIFY(!dialog->findChild<QListWidget*>(QStringLiteral("surgeonDonors"))
                         ->isEnabled()); // pruning takes no donor
            dialog->findChild<QSpinBox*>(QStringLiteral("surgeonPrune"))->setValue(1);
        });
        widgets::SurgeonWindow* window = m_window->surgeon()->window();
        QVERIFY(window != nullptr && window->isVisible());
        QVERIFY(waitForJobs(searched, 1, 240000));
        QVERIFY2(searched.count(JobState::Done) == 1, qPrintable(window->status()->text()));
        QVERIFY(window->record() != nullptr);
        const SurgeonRecord& r = *window->record();
        QCOMPARE(int(r.end), int(SurgeonRecord::End::Done));
        checkObjectiveChart(window);

        // The engine, run here on the same text: the same candidates, the same objectives.
        SurgeonRequest request;
        request.goal = SurgeonGoal::Prune;
        request.prune = 1;
        // The plan writes the recipient's name with -surgeon.gguf, beside it.
        request.output = familyModel("family-base-f16-surgeon.gguf").toStdString();
        std::tie(request.text, request.holdout) = splitHoldout(readLabText(m_text.toStdString()), 0.25);
        const SurgeonRecord engine = runSurgeon(familyModels(), request);
        QCOMPARE(engine.candidates.size(), r.candidates.size());
        for (std::size_t i = 0; i < r.candidates.size(); ++i) {
            QCOMPARE(r.candidates[i].summary, engine.candidates[i].summary);
            QVERIFY2(near(r.candidates[i].score.objective, engine.candidates[i].score.objective),
                     r.candidates[i].summary.c_str());
        }
        QCOMPARE(canonical(r.candidates[*r.best].plan), canonical(engine.candidates[*engine.best].plan));

        // The front: by blocks, each choosable candidate lower than every smaller one; the
        // chosen plan is on it, the recipient (never chosen) is not.
        std::vector<std::size_t> order;
        for (std::size_t i = 0; i < r.candidates.size(); ++i) {
            order.push_back(i);
        }
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            const auto& ca = r.candidates[a].score;
            const auto& cb = r.candidates[b].score;
            return ca.layers != cb.layers ? ca.layers < cb.layers : ca.objective < cb.objective;
        });
        std::vector<std::size_t> front;
        for (std::size_t i : order) {
            const SurgeonCandidate& c = r.candidates[i];
            if (c.feasible &&
                (front.empty() || c.score.objective < r.candidates[front.back()].score.objective)) {
                front.push_back(i);
            }
        }
        QCOMPARE(window->charts().pareto->front(), front);
        QVERIFY(std::find(front.begin(), front.end(), *r.best) != front.end());
        QVERIFY(std::find(front.begin(), front.end(), std::size_t(0)) == front.end());

        // The changes: the block the chosen plan removes, and no other.
        const GraftPlan& chosen = r.candidates[*r.best].plan;
        QCOMPARE(chosen.operations.size(), std::size_t(1));
        const std::uint32_t removed = chosen.operations.front().toLayer;
        const widgets::PlanChanges& changes = window->charts().changes->changes();
        QCOMPARE(changes.cells.size(), std::size_t(6));
        for (std::uint32_t b = 0; b < 6; ++b) {
            for (const auto& cell : changes.cells[b]) {
                QCOMPARE(cell.value, b == removed ? -1.0 : 0.0);
                QCOMPARE(cell.text.isEmpty(), b != removed);
            }
        }

        // The vital signs on the held-out part: the plan's and the recipient's NLL are the
        // search's held-out scores of them.
        QVERIFY(waitForJobs(vitals, 1, 240000));
        QCOMPARE(vitals.count(JobState::Done), 1);
        QVERIFY(window->vitals() != nullptr);
        QTableWidget* table = window->vitalsTable();
        QCOMPARE(table->rowCount(), 2); // the plan, the recipient (pruning has no donor)
        QVERIFY(r.candidates[*r.best].holdout && r.candidates[0].holdout);
        QVERIFY(near(window->vitals()->perplexity.meanNll, *r.candidates[*r.best].holdout));
        QVERIFY(near(window->vitals()->parents.at(0).perplexity.meanNll, *r.candidates[0].holdout));
        QCOMPARE(table->item(0, 1)->text(), model::finiteNumber(window->vitals()->perplexity.meanNll, 4));
        QVERIFY(window->vitals()->parents.at(0).divergence.meanKl > 0);

        settle(window);
        saveScreenshot(window, QStringLiteral("surgeon-prune.png"));
        for (QCustomPlot* chart : {static_cast<QCustomPlot*>(window->charts().objective),
                                   static_cast<QCustomPlot*>(window->charts().pareto),
                                   static_cast<QCustomPlot*>(window->charts().changes)}) {
            const QString exported = m_dir.filePath(chart->objectName() + QStringLiteral(".png"));
            saveChartThroughMenu(chart, exported, QSize(800, 500));
            QCOMPARE(QImage(exported).size(), QSize(800, 500));
        }

        // Load into plan: one step in place of the plan there was; Undo gives that plan back.
        model::GraftDocument* document = m_window->surgery()->document();
        const QString base = QString::fromStdString(r.candidates[0].plan.base);
        document->duplicateLayer(base, 2);
        const std::string before = canonical(document->plan());
        const int steps = document->undoStack()->count();
        QVERIFY(window->loadButton()->isEnabled());
        window->loadButton()->click();
        QCOMPARE(document->undoStack()->count(), steps + 1);
        QCOMPARE(canonical(document->plan()), canonical(chosen));
        QVERIFY(!document->report().hasErrors());
        document->undoStack()->undo();
        QCOMPARE(canonical(document->plan()), before);
        document->undoStack()->redo();
        QCOMPARE(canonical(document->plan()), canonical(chosen));
    }

    // The best organs from farm, cancelled after a few candidates: the search ends cancelled with
    // the best of those it scored, which the window shows and can load; the vital signs follow.
    void cancelKeepsTheBest() {
        openFamily();
        JobEnds searched(m_window->jobs(), "surgeon");
        JobEnds vitals(m_window->jobs(), "surgeon-vitals");
        searchThroughMenu(SurgeonGoal::Organs, [](widgets::SurgeonDialog* dialog) {
            QVERIFY(dialog->findChild<QListWidget*>(QStringLiteral("surgeonDonors"))->isEnabled());
            QCOMPARE(dialog->findChild<QListWidget*>(QStringLiteral("surgeonDonors"))->count(), 1);
            QCOMPARE(dialog->findChild<QListWidget*>(QStringLiteral("surgeonDonors"))->item(0)->checkState(),
                     Qt::Checked); // the donor pane's
        });
        widgets::SurgeonWindow* window = m_window->surgeon()->window();
        // The recipient, then three organ candidates: drawn while the search runs.
        QVERIFY(QTest::qWaitFor([&] { return window->candidates().size() >= 4; }, 240000));
        QVERIFY(window->isRunning());
        QVERIFY(window->charts().objective->drawn().size() >= 4);
        settle(window);
        saveScreenshot(window, QStringLiteral("surgeon-organs-running.png"));
        window->cancelButton()->click();
        QVERIFY(waitForJobs(searched, 1, 240000));
        QCOMPARE(searched.count(JobState::Cancelled), 1);
        QVERIFY(window->record() != nullptr);
        const SurgeonRecord& r = *window->record();
        QCOMPARE(int(r.end), int(SurgeonRecord::End::Cancelled));
        // Fewer than a sweep (1 + 12 coordinates), the best of them kept.
        QVERIFY(r.candidates.size() < 13);
        checkObjectiveChart(window);
        QVERIFY(window->status()->text().contains(QStringLiteral("Cancelled")));
        QVERIFY(window->loadButton()->isEnabled());
        // The changes: the organs the best plan takes from farm, named in their cells.
        const widgets::PlanChanges& changes = window->charts().changes->changes();
        int fromFarm = 0;
        for (const auto& row : changes.cells) {
            for (const auto& cell : row) {
                fromFarm += cell.value == 1.0;
                QVERIFY(cell.value == 0.0 || cell.text == changes.models.at(1));
            }
        }
        QCOMPARE(std::size_t(fromFarm), r.candidates[*r.best].plan.operations.size());
        QVERIFY(waitForJobs(vitals, 1, 240000));
        QCOMPARE(vitals.count(JobState::Done), 1);
        QCOMPARE(window->vitalsTable()->rowCount(), 3); // the plan, base and farm
        settle(window);
        saveScreenshot(window, QStringLiteral("surgeon-organs-cancelled.png"));

        m_window->surgery()->document()->clear();
        window->loadButton()->click();
        QCOMPARE(canonical(m_window->surgery()->document()->plan()), canonical(r.candidates[*r.best].plan));
    }

    // A merge scored by the KL to farm draws each donor's weights per block and system in the
    // changes chart.
    void mergeChangesShowTheWeights() {
        openFamily();
        JobEnds searched(m_window->jobs(), "surgeon");
        searchThroughMenu(SurgeonGoal::Merge, [](widgets::SurgeonDialog* dialog) {
            dialog->findChild<QSpinBox*>(QStringLiteral("surgeonEvaluations"))->setValue(3);
            QCOMPARE(dialog->findChild<QComboBox*>(QStringLiteral("surgeonObjective"))->count(),
                     2); // the NLL, KL to farm
            dialog->findChild<QComboBox*>(QStringLiteral("surgeonObjective"))->setCurrentIndex(1);
        });
        widgets::SurgeonWindow* window = m_window->surgeon()->window();
        QVERIFY(waitForJobs(searched, 1, 240000));
        QVERIFY2(window->record() != nullptr, qPrintable(window->status()->text()));
        const SurgeonRecord& r = *window->record();
        QCOMPARE(int(r.end), int(SurgeonRecord::End::Budget));
        QCOMPARE(int(r.objective), int(SurgeonObjective::Kl));
        QCOMPARE(r.reference, fileLabel(familyModel("family-farm-f16.gguf").toStdString()));
        QCOMPARE(r.runs, std::uint64_t(3));
        checkObjectiveChart(window);
        const widgets::PlanChanges& changes = window->charts().changes->changes();
        QCOMPARE(int(changes.kind), int(widgets::PlanChanges::Kind::Weights));
        QCOMPARE(changes.columns.size(), 2);
        // The best is a uniform weight (the first stage): every cell holds it.
        const SurgeonCandidate& best = r.candidates[*r.best];
        QCOMPARE(best.stage, std::string("uniform"));
        const auto& weight = best.plan.operations.front().merge.models.back().parameters.at("weight");
        const double uniform = *resolveParam(weight, TensorPlace::of("blk.0.attn_q.weight", 6));
        for (const auto& row : changes.cells) {
            for (const auto& cell : row) {
                QCOMPARE(cell.value, uniform);
            }
        }
        settle(window);
        saveScreenshot(window, QStringLiteral("surgeon-merge.png"));
    }
};

QTEST_MAIN(TestWindowSurgeon)
#include "tst_window_surgeon.moc"
