// Diff and spectral health in the window: the Δθ page's relative error and cosine against the
// donor (organ diff), its table and a row's two tensors side by side; α on the Heatmap page
// (organ spectral); the inspector's eigenvalue spectrum; cancelling both jobs.
#include "diff_table_model.h"
#include "gguf/gguf_model.h"
#include "gguf/specimen.h"
#include "job_ends.h"
#include "main_window.h"
#include "measure/model_diff.h"
#include "measure/spectral.h"
#include "model_roles.h"
#include "model_view.h"
#include "tensor_inspector.h"
#include "theta_heatmap.h"
#include "window_test_support.h"

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QImage>
#include <QLabel>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <qcustomplot.h>

using namespace organ;
using namespace organ::testing;

class TestWindowDiff : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_a; // two specimens: one architecture and shapes, other weights
    QString m_b;

    // The recipient `a` and the donor `b`, both measured, the Δθ page shown.
    widgets::ModelView* openPair(app::MainWindow& window) {
        window.resize(1500, 900);
        window.show();
        JobEnds measured(window.jobs(), "measure");
        window.openFiles({m_a});
        window.openFiles({m_b}, app::MainWindow::Side::Donor);
        if (!waitForJobs(measured, 2)) {
            return nullptr;
        }
        widgets::ModelView* view = window.currentView();
        if (!QTest::qWaitFor([view] { return view->hasComparison(); })) {
            return nullptr;
        }
        view->showPage(widgets::ModelView::Page::Delta);
        return view;
    }

    static int rowOf(const QAbstractItemModel* table, const std::string& name) {
        for (int row = 0; row < table->rowCount(); ++row) {
            if (table->index(row, 0).data().toString() == QString::fromStdString(name)) {
                return row;
            }
        }
        return -1;
    }

private slots:
    void initTestCase() {
        initWindowTests(m_dir);
        m_a = m_dir.filePath(QStringLiteral("a.gguf"));
        m_b = m_dir.filePath(QStringLiteral("b.gguf"));
        QVERIFY(writeSpecimen(m_a.toStdString(), 1).isOk());
        QVERIFY(writeSpecimen(m_b.toStdString(), 2).isOk());
    }

    // Relative error and cosine: the heatmap's cells are the engine's diff of the two files,
    // computed once (on the engine's worker) for both metrics; the table lists every tensor.
    void diffMetrics() {
        app::MainWindow window;
        widgets::ModelView* view = openPair(window);
        QVERIFY(view != nullptr);
        QAbstractItemModelTester tester(view->diffModel());
        JobEnds diffs(window.jobs(), "diff");
        view->comparisonMetricBox()->setCurrentIndex(1);
        QVERIFY(waitForJobs(diffs, 1));
        QCOMPARE(diffs.count(JobState::Done), 1);
        const auto modelA = GgufModel::open(m_a.toStdString());
        const GgufModel& a = *modelA;
        const auto modelB = GgufModel::open(m_b.toStdString());
        const GgufModel& b = *modelB;
        const auto engine = diffModels(a, b, TensorSelector{});
        QVERIFY(engine);
        QCOMPARE(view->diffTable()->model()->rowCount(), int(engine->tensors.size()));
        widgets::ThetaHeatmap* map = view->comparison();
        QCOMPARE(map->metric(), widgets::HeatmapMetric::RelativeError);
        auto check = [&](bool cosine) {
            int cells = 0;
            for (int column = 0; column < map->columnCount(); ++column) {
                for (int row = 0; row < map->rowCount(); ++row) {
                    const int tensor = map->tensorAt(column, row);
                    if (tensor < 0) {
                        continue;
                    }
                    const std::string& name = a.tensors()[std::size_t(tensor)].name;
                    const auto it = std::find_if(engine->tensors.begin(), engine->tensors.end(),
                                                 [&](const TensorDiff& t) { return t.name == name; });
                    QVERIFY(it != engine->tensors.end());
                    QCOMPARE(map->valueAt(column, row),
                             cosine ? it->sums.cosine() : it->sums.relativeError());
                    ++cells;
                }
            }
            QCOMPARE(cells, int(engine->tensors.size()));
        };
        check(false);
        const int q = int(a.findTensor("blk.1.attn_q.weight") - a.tensors().data());
        QVERIFY(map->tooltipText(q).contains(QStringLiteral("relative error")));
        QVERIFY(map->tooltipText(q).contains(QStringLiteral("SQNR")));
        view->comparisonMetricBox()->setCurrentIndex(2);
        QCOMPARE(map->metric(), widgets::HeatmapMetric::Cosine);
        check(true);
        QCOMPARE(diffs.count(), 1); // the diff is kept for both metrics
        settle(&window);
        saveScreenshot(&window, QStringLiteral("diff-cosine.png"));
        // Back to Δθ: the measured θ differences again.
        view->comparisonMetricBox()->setCurrentIndex(0);
        QCOMPARE(map->metric(), widgets::HeatmapMetric::DeltaTheta);
        int deltas = 0;
        for (int column = 0; column < map->columnCount(); ++column) {
            for (int row = 0; row < map->rowCount(); ++row) {
                deltas += map->valueAt(column, row).has_value() ? 1 : 0;
            }
        }
        QVERIFY(deltas > 0);
        QVERIFY(map->tooltipText(q).contains(QStringLiteral("Δθ")));
    }

    // A row activated: both tensors side by side in the inspector, each named with its model,
    // each with its portrait.
    void rowShowsBothTensors() {
        app::MainWindow window;
        widgets::ModelView* view = openPair(window);
        QVERIFY(view != nullptr);
        JobEnds diffs(window.jobs(), "diff");
        view->comparisonMetricBox()->setCurrentIndex(1);
        QVERIFY(waitForJobs(diffs, 1));
        QTableView* table = view->diffTable();
        const int row = rowOf(table->model(), "blk.2.ffn_down.weight");
        QVERIFY(row >= 0);
        table->setFocus();
        table->setCurrentIndex(table->model()->index(row, 0));
        QTest::keyClick(table, Qt::Key_Return);
        widgets::TensorInspector* inspector = view->inspector();
        QCOMPARE(view->tabs()->currentWidget(), static_cast<QWidget*>(inspector));
        QVERIFY(inspector->hasPartnerShown());
        const auto modelA = GgufModel::open(m_a.toStdString());
        const GgufModel& a = *modelA;
        const auto modelB = GgufModel::open(m_b.toStdString());
        const GgufModel& b = *modelB;
        QCOMPARE(inspector->tensor(), int(a.findTensor("blk.2.ffn_down.weight") - a.tensors().data()));
        widgets::TensorInspector* partner = inspector->partner();
        QCOMPARE(partner->tensor(), int(b.findTensor("blk.2.ffn_down.weight") - b.tensors().data()));
        QVERIFY(inspector->titleText().startsWith(QStringLiteral("a: ")));
        QVERIFY(partner->titleText().startsWith(QStringLiteral("b: ")));
        QVERIFY(partner->titleText().contains(QStringLiteral("blk.2.ffn_down.weight")));
        QTRY_VERIFY(inspector->hasPortrait() && partner->hasPortrait());
        QTRY_VERIFY_WITH_TIMEOUT(inspector->eigenvalues() != nullptr && partner->eigenvalues() != nullptr,
                                 60000);
        QVERIFY(*inspector->eigenvalues() != *partner->eigenvalues());
        QVERIFY(partner->indicatorsText().startsWith(QStringLiteral("θ "))); // the donor's own θ
        QVERIFY(partner->histogramPlot()->plottableCount() > 0);
        settle(&window);
        saveScreenshot(&window, QStringLiteral("diff-pair-inspector.png"));
        // A tensor chosen elsewhere: the inspector shows it alone again.
        view->inspectTensor(0);
        QVERIFY(!inspector->hasPartnerShown());
    }

    // α on the Heatmap page: each weight matrix's α as the engine fits it, its label in the
    // tooltip.
    void alphaHeatmap() {
        app::MainWindow window;
        window.resize(1400, 900);
        window.show();
        JobEnds measured(window.jobs(), "measure");
        window.openFiles({m_a});
        QVERIFY(waitForJobs(measured, 1));
        widgets::ModelView* view = window.currentView();
        view->showPage(widgets::ModelView::Page::Heatmap);
        JobEnds spectra(window.jobs(), "spectral");
        view->heatmapMetricBox()->setCurrentIndex(1);
        QVERIFY(waitForJobs(spectra, 1, 60000));
        QCOMPARE(spectra.count(JobState::Done), 1);
        QVERIFY(view->alphaMap()->isVisible());
        const auto modelA = GgufModel::open(m_a.toStdString());
        const GgufModel& a = *modelA;
        const auto engine = measureSpectra(a, TensorSelector{});
        QVERIFY(engine);
        widgets::ThetaHeatmap* map = view->alphaMap();
        int compared = 0;
        for (const MatrixSpectrum& m : engine->matrices) {
            const int tensor = int(a.findTensor(m.name) - a.tensors().data());
            const std::optional<double> alpha = m.fit ? m.fit->alpha : std::nullopt;
            int found = -1;
            for (int c = 0; c < map->columnCount() && found < 0; ++c) {
                for (int r = 0; r < map->rowCount(); ++r) {
                    if (map->tensorAt(c, r) == tensor) {
                        QCOMPARE(map->valueAt(c, r), alpha);
                        found = tensor;
                    }
                }
            }
            QVERIFY(found >= 0);
            if (alpha) {
                const QString label = QString::fromStdString(spectralLabel(*m.fit));
                QVERIFY2(map->tooltipText(tensor).contains(label), qPrintable(map->tooltipText(tensor)));
                ++compared;
            }
        }
        QVERIFY(compared > 10);
        const int norm = int(a.findTensor("blk.0.attn_norm.weight") - a.tensors().data());
        QVERIFY(map->tooltipText(norm).contains(QStringLiteral("no α")));
        settle(&window);
        saveScreenshot(&window, QStringLiteral("alpha-heatmap.png"));
    }

    // The inspector's eigenvalue spectrum: the points are the engine's eigenvalues, the line is
    // the fit's power law (slope 1 − α on log-log axes) from xmin; the chart exports.
    void eigenvalueSpectrum() {
        app::MainWindow window;
        window.resize(1400, 1000);
        window.show();
        JobEnds measured(window.jobs(), "measure");
        window.openFiles({m_a});
        QVERIFY(waitForJobs(measured, 1));
        widgets::ModelView* view = window.currentView();
        const auto modelA = GgufModel::open(m_a.toStdString());
        const GgufModel& a = *modelA;
        const TensorInfo& info = *a.findTensor("blk.1.ffn_up.weight");
        const int tensor = int(&info - a.tensors().data());
        view->inspectTensor(tensor);
        view->showPage(widgets::ModelView::Page::Inspector);
        widgets::TensorInspector* inspector = view->inspector();
        QTRY_VERIFY_WITH_TIMEOUT(inspector->eigenvalues() != nullptr, 60000);
        const std::vector<double> lambda = matrixEigenvalues(a, info, 0);
        QVERIFY(inspector->eigenvalues() != nullptr);
        QCOMPARE(*inspector->eigenvalues(), lambda);
        QCustomPlot* plot = inspector->eigenvaluePlot();
        QVERIFY(plot->graphCount() >= 2);
        const auto points = plot->graph(0)->data();
        std::vector<double> positive;
        for (const double l : lambda) {
            if (l > 0) {
                positive.push_back(l);
            }
        }
        QCOMPARE(points->size(), int(positive.size()));
        for (int k = 0; k < points->size(); ++k) {
            QCOMPARE(points->at(k)->key, positive[std::size_t(k)]);
        }
        const SpectralFit fit = fitSpectrum(lambda);
        QVERIFY(fit.alpha);
        const auto line = plot->graph(1)->data();
        QCOMPARE(line->size(), 2);
        QCOMPARE(line->at(0)->key, fit.xmin);
        const double slope =
            std::log(line->at(1)->value / line->at(0)->value) / std::log(line->at(1)->key / line->at(0)->key);
        QVERIFY(std::abs(slope - (1.0 - *fit.alpha)) < 1e-9);
        QVERIFY(plot->graph(1)->name().contains(QStringLiteral("α %1").arg(*fit.alpha, 0, 'f', 2)));
        QCOMPARE(plot->xAxis->scaleType(), QCPAxis::stLogarithmic);
        QCOMPARE(plot->yAxis->scaleType(), QCPAxis::stLogarithmic);
        QVERIFY(inspector->eigenvalueCaption().contains(QString::fromStdString(spectralLabel(fit))));
        settle(&window);
        saveScreenshot(&window, QStringLiteral("inspector-eigenvalues.png"));
        const QString png = m_dir.filePath(QStringLiteral("eigenvalues.png"));
        saveChartThroughMenu(plot, png, QSize(800, 500));
        QVERIFY(QImage(png).width() >= 800);
        // A vector has no spectrum, and says so.
        const int norm = int(a.findTensor("blk.1.ffn_norm.weight") - a.tensors().data());
        view->inspectTensor(norm);
        QVERIFY(inspector->eigenvalues() == nullptr);
        QVERIFY(inspector->eigenvalueCaption().contains(QStringLiteral("no eigenvalue spectrum")));
        QCOMPARE(plot->graphCount(), 0);
    }

    // Cancelled while queued: nothing shown, the metric back to what it was, and the reason.
    void cancel() {
        app::MainWindow window;
        widgets::ModelView* view = openPair(window);
        QVERIFY(view != nullptr);
        JobEnds spectra(window.jobs(), "spectral");
        JobEnds diffs(window.jobs(), "diff");
        {
            WorkerHold hold(window.jobs());
            view->heatmapMetricBox()->setCurrentIndex(1);
            view->comparisonMetricBox()->setCurrentIndex(2);
            QCOMPARE(window.jobs()->liveCount("spectral"), 1);
            QCOMPARE(window.jobs()->liveCount("diff"), 1);
            window.jobs()->cancelKind("spectral");
            window.jobs()->cancelKind("diff");
        }
        QVERIFY(waitForJobs(spectra, 1));
        QVERIFY(waitForJobs(diffs, 1));
        QCOMPARE(spectra.count(JobState::Cancelled), 1);
        QCOMPARE(diffs.count(JobState::Cancelled), 1);
        QVERIFY(view->spectra() == nullptr);
        QCOMPARE(view->heatmapMetricBox()->currentIndex(), 0);
        QVERIFY(view->spectraNote()->text().contains(QStringLiteral("cancelled")));
        QVERIFY(view->diff() == nullptr);
        QCOMPARE(view->comparisonMetricBox()->currentIndex(), 0);
        QCOMPARE(view->diffModel()->rowCount(), 0);
        QVERIFY(view->diffNote()->text().contains(QStringLiteral("cancelled")));
        // Asked again, it runs to the end.
        view->comparisonMetricBox()->setCurrentIndex(1);
        QVERIFY(waitForJobs(diffs, 2));
        QVERIFY(view->diff() != nullptr);
    }
};

QTEST_MAIN(TestWindowDiff)
#include "tst_window_diff.moc"
