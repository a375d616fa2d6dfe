// The Quantization page, as a user walks it: Measure errors fills the heatmap (layer × role) and
// the chart per system with the engine's numbers; Find mixes runs the sensitivity on a text and
// draws llama-quantize's mixes and the budget mixes (each run on the engine thread, cancellable);
// a click on a point makes it the plan's quantize operation on the recipient (undoable, refused on
// a donor), Assemble writes it, and the charts export as every chart does.
#include "assembly_controller.h"
#include "graft_document.h"
#include "job_ends.h"
#include "main_window.h"
#include "model_pane.h"
#include "model_view.h"
#include "pareto_chart.h"
#include "quant_lab_charts.h"
#include "quant_lab_page.h"
#include "shared_models.h"
#include "surgery_controller.h"
#include "window_test_support.h"

#include "anatomy/anatomy.h"
#include "quant/quantize.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QImage>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>

using namespace organ;
using namespace organ::testing;
using Run = widgets::QuantLabPage::Run;

class TestWindowQuantLab : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<app::MainWindow> m_window;
    QString m_text; // the first stories of general.txt: a short text keeps the sweep short

    widgets::ModelView* openFamily() {
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
        widgets::ModelView* view = m_window->currentView();
        view->showPage(widgets::ModelView::Page::Quantization);
        view->quantLabPage()->imatrixEdit()->setText(familyImatrix());
        return view;
    }

    std::shared_ptr<const GgufModel> base() const {
        return GgufModel::open(familyModel("family-base-f16.gguf").toStdString());
    }

private slots:
    void initTestCase() {
        initWindowTests(m_dir);
        ORGAN_REQUIRE_SHARED(familyModel("family-base-f16.gguf"));
        ORGAN_REQUIRE_SHARED(familyImatrix());
        const QByteArray head = familyTextHead("general.txt", 700);
        QVERIFY(!head.isEmpty());
        m_text = m_dir.filePath(QStringLiteral("short.txt"));
        QFile out(m_text);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(head);
    }

    void cleanup() { m_window.reset(); }

    // Measure errors: each cell is the engine's error of its tensor in the type chosen; the chart
    // per system is the elements-weighted mean of the same numbers.
    void errorHeatmapShowsTheEnginesErrors() {
        widgets::ModelView* view = openFamily();
        widgets::QuantLabPage* page = view->quantLabPage();
        JobEnds ends(m_window->jobs(), "quant-errors");
        page->button(Run::Errors)->click();
        QVERIFY(page->isRunning(Run::Errors));
        QVERIFY(waitForJobs(ends, 1, 240000));
        QCOMPARE(ends.count(JobState::Done), 1);
        QVERIFY(page->errorReport() != nullptr);
        QVERIFY(page->heatmap()->isVisible());

        const auto model = base();
        const ImatrixData matrix = readImatrix(familyImatrix().toStdString());
        const std::vector<TensorType> types{TensorType::Q4_K, TensorType::Q2_K};
        const auto expected = measureQuantErrors(*model, types, &matrix, familyImatrix().toStdString());
        QVERIFY(expected);
        QCOMPARE(page->errorReport()->tensors.size(), expected->tensors.size());
        for (TensorType type : types) {
            page->typeBox()->setCurrentIndex(
                page->typeBox()->findText(QString::fromUtf8(tensorTypeName(type))));
            QCOMPARE(page->heatmap()->type(), type);
            // Σ elements × error per system, from the engine's report.
            std::map<QString, std::pair<double, double>> bySystem;
            for (const TensorErrors& t : expected->tensors) {
                const auto [column, row] = page->heatmap()->cellOf(t.name);
                QVERIFY2(column >= 0, t.name.c_str());
                const double error = t.types.at(type == TensorType::Q4_K ? 0 : 1).relativeRms;
                QCOMPARE(page->heatmap()->valueAt(column, row).value_or(-1), error);
                const auto name = systemName(classifyTensor(t.name).system);
                auto& sum = bySystem[QString::fromUtf8(name.data(), qsizetype(name.size()))];
                sum.first += double(t.elements) * error;
                sum.second += double(t.elements);
            }
            QCOMPARE(page->systemChart()->series().size(), bySystem.size());
            for (const auto& [system, points] : page->systemChart()->series()) {
                const auto at =
                    std::find_if(points.begin(), points.end(), [&](const auto& p) { return p.type == type; });
                QVERIFY(at != points.end());
                QVERIFY(std::abs(at->value - bySystem[system].first / bySystem[system].second) < 1e-12);
            }
        }
        // Cosine: 1 − the engine's cosine, in the first layer's attn_q cell.
        page->metricBox()->setCurrentIndex(
            page->metricBox()->findData(int(widgets::QuantMetric::CosineLoss)));
        const auto [column, row] = page->heatmap()->cellOf("blk.0.attn_q.weight");
        const auto q = std::find_if(expected->tensors.begin(), expected->tensors.end(),
                                    [](const TensorErrors& t) { return t.name == "blk.0.attn_q.weight"; });
        QCOMPARE(page->heatmap()->valueAt(column, row).value_or(-1), 1.0 - q->types.at(1).cosine);
        settle(m_window.get());
        saveScreenshot(m_window.get(), QStringLiteral("quant-lab-errors.png"));

        const QString exported = m_dir.filePath(QStringLiteral("heatmap.png"));
        saveChartThroughMenu(page->heatmap(), exported, QSize(900, 600));
        QCOMPARE(QImage(exported).size(), QSize(900, 600));
    }

    // Cancel while it waits behind another job: it ends cancelled and the page says so.
    void errorsCancel() {
        widgets::ModelView* view = openFamily();
        widgets::QuantLabPage* page = view->quantLabPage();
        JobEnds ends(m_window->jobs(), "quant-errors");
        WorkerHold hold(m_window->jobs());
        page->button(Run::Errors)->click();
        QCOMPARE(page->button(Run::Errors)->text(), QStringLiteral("Cancel"));
        page->button(Run::Errors)->click();
        hold.release();
        QVERIFY(waitForJobs(ends, 1, 60000));
        QCOMPARE(ends.count(JobState::Cancelled), 1);
        QVERIFY(!page->isRunning(Run::Errors));
        QVERIFY(page->errorReport() == nullptr);
        QCOMPARE(page->findChild<QLabel*>(QStringLiteral("measureQuantErrorsStatus"))->text(),
                 QStringLiteral("Cancelled."));
    }

    // Find mixes on a text, by role: the group KLs are the engine's, the budget curve its optimal
    // mixes, llama-quantize's Q4_K_M its measured divergence; a second run keeps the model's own run.
    // A click on a point plans that mix; Undo restores the recipe before; Assemble writes the mix.
    void paretoSweepPlansAMix() {
        widgets::ModelView* view = openFamily();
        widgets::QuantLabPage* page = view->quantLabPage();
        page->textEdit()->setText(m_text);
        page->chunkBox()->setValue(128); // the text is longer than the model's context
        page->groupingBox()->setCurrentIndex(page->groupingBox()->findData(int(QuantGrouping::Role)));
        JobEnds ends(m_window->jobs(), "quant-pareto");
        page->button(Run::Pareto)->click();
        QVERIFY(page->isRunning(Run::Pareto));
        QVERIFY(waitForJobs(ends, 1, 280000));
        QVERIFY2(ends.count(JobState::Done) == 1,
                 qPrintable(page->findChild<QLabel*>(QStringLiteral("findQuantMixesStatus"))->text()));
        const ParetoReport* shown = page->paretoReport();
        QVERIFY(shown != nullptr);
        QVERIFY(shown->sensitivity.referenceSeconds > 0);

        const auto model = base();
        const ImatrixData matrix = readImatrix(familyImatrix().toStdString());
        SensitivityRequest request;
        request.grouping = QuantGrouping::Role;
        request.types = defaultBudgetTypes();
        request.text = readLabText(m_text.toStdString());
        request.chunk = 128;
        std::shared_ptr<const SensitivityReference> reference;
        const auto sensitivity = measureSensitivity(model, &matrix, familyImatrix().toStdString(), request,
                                                    {}, nullptr, &reference);
        QVERIFY(sensitivity && reference);
        QCOMPARE(shown->sensitivity.groups.size(), sensitivity->groups.size());
        for (std::size_t g = 0; g < sensitivity->groups.size(); ++g) {
            for (std::size_t t = 0; t < sensitivity->groups[g].types.size(); ++t) {
                QCOMPARE(shown->sensitivity.groups[g].types[t].klMean,
                         sensitivity->groups[g].types[t].klMean);
            }
        }
        // Every budget mix is the knapsack's at its size, never above it.
        QVERIFY(shown->mixes.size() >= 12);
        for (const ParetoPoint& p : shown->mixes) {
            const BudgetMix mix = chooseBudgetMix(*model, *sensitivity, p.size.tensorBytes);
            QCOMPARE(p.predictedKl.value_or(-1), mix.predictedKl);
        }
        const auto q4 = std::find_if(shown->references.begin(), shown->references.end(),
                                     [](const ParetoPoint& p) { return p.label == "Q4_K_M"; });
        QVERIFY(q4 != shown->references.end() && q4->measured);
        const auto measured = measureMixDivergence(model, q4->recipe, &matrix, *reference, 0, nullptr);
        QVERIFY(measured);
        QCOMPARE(q4->measured->klMean, measured->klMean);
        QCOMPARE(q4->size.tensorBytes, quantizedSize(*model, q4->recipe, true).tensorBytes);
        // The chart draws them where they are.
        widgets::ParetoChart* chart = page->paretoChart();
        const auto& points = chart->shown();
        const auto drawn = std::find_if(points.begin(), points.end(), [&](const auto& s) {
            return s.reference && s.point->label == "Q4_K_M";
        });
        QVERIFY(drawn != points.end());
        QCOMPARE(drawn->x, q4->size.bitsPerWeight());
        QCOMPARE(drawn->y, q4->measured->klMean);
        settle(m_window.get());
        saveScreenshot(m_window.get(), QStringLiteral("quant-lab-pareto.png"));

        // Again on the same text: the model's own run is kept.
        page->button(Run::Pareto)->click();
        QVERIFY(waitForJobs(ends, 2, 280000));
        QCOMPARE(page->paretoReport()->sensitivity.referenceSeconds, 0.0);
        QVERIFY(page->paretoSummary()->text().contains(QStringLiteral("kept from the last run")));

        // A recipe planned before; a click on the budget mix at Q4_K_M's size replaces it.
        model::GraftDocument* plan = m_window->surgery()->document();
        QuantizeRecipe before;
        before.fileType = QuantFileType::Q5_K_S;
        plan->quantize(familyModel("family-base-f16.gguf"), before);
        settle(m_window.get());
        const auto& now = chart->shown();
        const auto ours = std::find_if(now.begin(), now.end(), [](const auto& s) {
            return !s.reference && s.point->label == "Q4_K_M's size" && s.point->measured &&
                   s.y == s.point->measured->klMean;
        });
        QVERIFY(ours != now.end());
        const ParetoPoint chosen = *ours->point;
        QCOMPARE(chart->pointAtPixel(chart->pixelOf(int(ours - now.begin()))), int(ours - now.begin()));
        QTest::mouseClick(chart, Qt::LeftButton, {}, chart->pixelOf(int(ours - now.begin())));
        const GraftOperation* op = plan->plan().quantizeOperation();
        QVERIFY(op != nullptr);
        QVERIFY(op->quantize.tensorTypes == chosen.recipe.tensorTypes);
        QCOMPARE(op->quantize.imatrix, familyImatrix().toStdString());
        QVERIFY2(
            plan->describe(0).contains(QStringLiteral(" tensor-type overrides with the importance matrix")),
            qPrintable(plan->describe(0)));
        QVERIFY(chosen.size.tensorBytes <= q4->size.tensorBytes);
        plan->undoStack()->undo();
        QCOMPARE(plan->plan().quantizeOperation()->quantize.fileType, QuantFileType::Q5_K_S);
        QVERIFY(plan->plan().quantizeOperation()->quantize.tensorTypes.empty());
        plan->undoStack()->redo();
        QVERIFY(plan->plan().quantizeOperation()->quantize.tensorTypes == chosen.recipe.tensorTypes);

        // On the donor, the same chart plans nothing and says why.
        widgets::ModelView* donor = m_window->pane(app::MainWindow::Side::Donor)->currentView();
        donor->quantLabPage()->setParetoReport(std::make_shared<const ParetoReport>(*shown), false);
        QVERIFY(donor->quantLabPage()->planNote()->text().contains(QStringLiteral("donor")));
        donor->showPage(widgets::ModelView::Page::Quantization);
        settle(m_window.get());
        widgets::ParetoChart* donorChart = donor->quantLabPage()->paretoChart();
        const int revision = int(plan->revision());
        QTest::mouseClick(donorChart, Qt::LeftButton, {}, donorChart->pixelOf(0));
        QCOMPARE(int(plan->revision()), revision);

        const QString exported = m_dir.filePath(QStringLiteral("pareto.svg"));
        saveChartThroughMenu(chart, exported, QSize(800, 500));
        QFile svg(exported);
        QVERIFY(svg.open(QIODevice::ReadOnly));
        QVERIFY(svg.readAll().contains("Q4_K_M"));

        // Assemble writes the mix: its tensors take the bytes the point said.
        const QString output = m_dir.filePath(QStringLiteral("mix.gguf"));
        QSignalSpy assembled(m_window->surgery()->assembly(), &app::AssemblyController::ended);
        ModalSteps steps;
        steps.then([output](QWidget* active) {
            if (active->objectName() != QStringLiteral("assembleDialog")) {
                return false;
            }
            active->findChild<QLineEdit*>(QStringLiteral("chimeraPath"))->setText(output);
            QPushButton* ok = active->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
            QMetaObject::invokeMethod(ok, "click", Qt::QueuedConnection);
            return true;
        });
        m_window->surgery()->assembly()->assembleDialog();
        QTRY_VERIFY(steps.done());
        QTRY_COMPARE_WITH_TIMEOUT(assembled.count(), 1, 120000);
        QVERIFY2(assembled.at(0).at(0).toBool(), qPrintable(assembled.at(0).at(1).toString()));
        if (QMessageBox* box = visibleMessageBox()) {
            box->close();
        }
        const auto written = GgufModel::open(output.toStdString());
        std::uint64_t bytes = 0;
        for (const TensorInfo& t : written->tensors()) {
            bytes += t.bytes;
        }
        QCOMPARE(bytes, chosen.size.tensorBytes);
    }
};

QTEST_MAIN(TestWindowQuantLab)
#include "tst_window_quant_lab.moc"
