// The θ heatmap, its side charts, the palette, the inspector and the Δθ comparison.
#include "anatomy_filter_proxy.h"
#include "anatomy_tree_model.h"
#include "chart_export.h"
#include "demo_models.h"
#include "fixtures.h"
#include "graft_document.h"
#include "graft_plan_panel.h"
#include "job_ends.h"
#include "main_window.h"
#include "matrix_plot.h"
#include "model_pane.h"
#include "model_roles.h"
#include "model_view.h"
#include "organs/organ_directory.h"
#include "report_export.h"
#include "shared_models.h"
#include "system_theta_charts.h"
#include "tensor_drag.h"
#include "tensor_inspector.h"
#include "theta_heatmap.h"
#include "window_test_support.h"
#include "worker_wait.h"
#include <QApplication>
#include <QCheckBox>
#include <QDragEnterEvent>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QProcess>
#include <QProgressDialog>
#include <QPushButton>
#include <QRegularExpression>
#include <QSemaphore>
#include <QSettings>
#include <QSignalSpy>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBrowser>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QUndoStack>
#include <QXmlStreamReader>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <qcustomplot.h>

using namespace organ;
using namespace organ::testing;

class TestWindowHeatmap : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

private slots:
    void initTestCase() { initWindowTests(m_dir); }

    // The heatmap: 5 layers (plus the global column) × the model's roles, θ as the numpy
    // reference has it; the damaged organs lower than the healthy ones in the same cells;
    // a click on a cell selects that tensor in the tree.
    void heatmap() {
        const QString healthyPath = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        const QString damagedPath = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        ORGAN_REQUIRE_SHARED(healthyPath);
        ORGAN_REQUIRE_SHARED(damagedPath);
        ORGAN_REQUIRE_SHARED(sharedReference(QStringLiteral("zmeasure/stories260K-f32.json")));
        app::MainWindow window;
        window.resize(1280, 800);
        window.show();
        JobEnds finished(window.jobs(), "measure");
        QCOMPARE(window.openFiles({healthyPath, damagedPath}), 2);
        QVERIFY(waitForJobs(finished, 2, 20000));
        auto* healthy = qobject_cast<widgets::ModelView*>(window.documents()->widget(0));
        auto* damaged = qobject_cast<widgets::ModelView*>(window.documents()->widget(1));
        widgets::ThetaHeatmap* map = healthy->heatmap();
        QCOMPARE(map->columnCount(), 6);
        const std::vector<std::string> roles = {"token_embd", "attn_norm",   "attn_q",      "attn_k",
                                                "attn_v",     "attn_output", "ffn_norm",    "ffn_gate",
                                                "ffn_up",     "ffn_down",    "output_norm", "output"};
        QCOMPARE(map->roles(), roles);
        std::ifstream in(sharedReference(QStringLiteral("zmeasure/stories260K-f32.json")).toStdString());
        const auto reference = nlohmann::json::parse(in);
        const auto& tensors = healthy->snapshot().model->tensors();
        int checked = 0;
        for (int column = 0; column < map->columnCount(); ++column) {
            for (int row = 0; row < map->rowCount(); ++row) {
                const int tensor = map->tensorAt(column, row);
                if (tensor < 0) {
                    QVERIFY(!map->thetaAt(column, row));
                    continue;
                }
                for (const auto& ref : reference) {
                    if (ref.at("name") == tensors[std::size_t(tensor)].name) {
                        QVERIFY(std::abs(*map->thetaAt(column, row) - ref.at("theta").get<double>()) < 0.01);
                        ++checked;
                    }
                }
            }
        }
        QCOMPARE(checked, 48);
        QVERIFY(map->tensorAt(0, 0) >= 0 && map->tensorAt(1, 0) < 0); // token_embd: global only
        for (int layer = 1; layer <= 3; ++layer) {
            for (int row = 7; row <= 9; ++row) { // ffn_gate, ffn_up, ffn_down
                QVERIFY(*damaged->heatmap()->thetaAt(layer + 1, row) < *map->thetaAt(layer + 1, row));
            }
        }
        // Beside it: θ mean per layer per system, and per system, from the same results.
        const widgets::SystemThetaCharts* charts = healthy->systemCharts();
        const ModelMeasurement& measured = *healthy->measurement();
        for (const auto& group : measured.bySystem) {
            const auto system = *systemFromName(group.key);
            QVERIFY(std::abs(*charts->meanTheta(system, std::nullopt) - group.thetaMean) < 1e-9);
        }
        double organLayer2 = 0;
        for (int row = 7; row <= 9; ++row) {
            organLayer2 += *map->thetaAt(3, row) / 3;
        }
        QVERIFY(std::abs(*charts->meanTheta(System::Organ, 2) - organLayer2) < 1e-9);
        QVERIFY(!charts->meanTheta(System::Embed, 2));
        QTRY_COMPARE(charts->layerPlot()->graph(int(System::Organ))->dataCount(), 5);
        healthy->tabs()->setCurrentIndex(1);
        window.documents()->setCurrentWidget(healthy);
        settle(&window);
        map->plot()->replot();
        const int target = int(healthy->snapshot().model->findTensor("blk.2.ffn_up.weight") - tensors.data());
        QCOMPARE(map->tensorAtPixel(map->pixelOfTensor(target)), target);
        QTest::mouseClick(map->plot(), Qt::LeftButton, {}, map->pixelOfTensor(target));
        QCOMPARE(healthy->anatomyView()->currentIndex().data().toString(),
                 QStringLiteral("blk.2.ffn_up.weight"));
        saveScreenshot(&window, QStringLiteral("main-window-heatmap.png"));
        window.documents()->setCurrentWidget(damaged);
        damaged->tabs()->setCurrentIndex(1);
        saveScreenshot(&window, QStringLiteral("main-window-heatmap-damaged.png"));
        // Constant tensors (llama-2-tiny's norms are exactly 1.0) are drawn apart from θ.
        const QString tiny = sharedModel(QStringLiteral("llama-2-tiny-random-f16.gguf"));
        QCOMPARE(window.openFiles({tiny}), 1);
        QVERIFY(waitForJobs(finished, 3, 20000));
        auto* tinyView = window.currentView();
        tinyView->tabs()->setCurrentIndex(1);
        const auto& tinyTensors = tinyView->snapshot().model->tensors();
        const int norm =
            int(tinyView->snapshot().model->findTensor("blk.0.attn_norm.weight") - tinyTensors.data());
        QVERIFY(tinyView->heatmap()->tensorAtPixel(tinyView->heatmap()->pixelOfTensor(norm)) == norm);
        saveScreenshot(&window, QStringLiteral("main-window-heatmap-constant.png"));
        const QImage shot = window.grab().toImage();
        const QPoint cell =
            tinyView->heatmap()->plot()->mapTo(&window, tinyView->heatmap()->pixelOfTensor(norm));
        QCOMPARE(shot.pixelColor(cell * shot.devicePixelRatio()), QColor(0xf4, 0xa5, 0x82));
    }

    // Three systems leave an empty cell in the side charts' two-column legend (this crashed
    // the palette styling once).
    void legendWithAnEmptyCell() {
        GgufWriteSpec spec;
        spec.set("general.architecture", MetaValue::fromString("llama"));
        spec.tensors.push_back(testing::patternTensor("token_embd.weight", TensorType::F32, {8, 16}, 1));
        spec.tensors.push_back(testing::patternTensor("blk.0.attn_q.weight", TensorType::F32, {8, 8}, 2));
        spec.tensors.push_back(testing::patternTensor("blk.0.ffn_up.weight", TensorType::F32, {8, 12}, 3));
        const QString path = m_dir.filePath(QStringLiteral("three-systems.gguf"));
        QVERIFY(testing::writeFixture(path, spec));
        widgets::SystemThetaCharts charts(ModelSnapshot::of(openModel(path.toStdString())));
        charts.resize(400, 500);
        charts.show();
        QCOMPARE(charts.layerPlot()->legend->itemCount(), 4); // 3 entries in a 2 × 2 grid
        QVERIFY(charts.layerPlot()->legend->item(3) == nullptr);
        charts.layerPlot()->replot();
        QCOMPARE(charts.layerPlot()->legend->item(0)->textColor(),
                 charts.palette().color(QPalette::WindowText));
    }

    // In a dark palette the charts are dark with light text, not white boxes.
    void darkPalette() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const QPalette original = QApplication::palette();
        QPalette dark;
        dark.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
        dark.setColor(QPalette::WindowText, QColor(0xe0, 0xe0, 0xe0));
        dark.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
        dark.setColor(QPalette::AlternateBase, QColor(0x26, 0x26, 0x26));
        dark.setColor(QPalette::Text, QColor(0xe0, 0xe0, 0xe0));
        dark.setColor(QPalette::Button, QColor(0x35, 0x35, 0x35));
        dark.setColor(QPalette::ButtonText, QColor(0xe0, 0xe0, 0xe0));
        QApplication::setPalette(dark);
        {
            app::MainWindow window;
            window.resize(1280, 800);
            window.show();
            JobEnds finished(window.jobs(), "measure");
            QCOMPARE(window.openFiles({path}), 1);
            QVERIFY(waitForJobs(finished, 1, 20000));
            widgets::ModelView* view = window.currentView();
            view->showPage(widgets::ModelView::Page::Heatmap);
            QTRY_COMPARE(view->systemCharts()->layerPlot()->graph(int(System::Organ))->dataCount(), 5);
            QCustomPlot* plot = view->heatmap()->plot();
            plot->replot();
            QCOMPARE(plot->xAxis->tickLabelColor(), QColor(0xe0, 0xe0, 0xe0));
            // Charts draw at the screen's pixel density (2 in the HiDPI run).
            QCOMPARE(plot->bufferDevicePixelRatio(), plot->devicePixelRatioF());
            const QImage shot = plot->grab().toImage();
            QCOMPARE(shot.width(), qRound(plot->width() * plot->devicePixelRatioF()));
            QVERIFY(QColor(shot.pixel(2, 2)).lightness() < 60);
            // An absent cell (token_embd has no layer 0) shows the dark background.
            const QPoint absent =
                plot->axisRect()->rect().topLeft() + QPoint(plot->axisRect()->width() * 1.5 / 6, 3);
            QVERIFY(view->heatmap()->tensorAtPixel(absent) < 0);
            QVERIFY(QColor(shot.pixel(absent * shot.devicePixelRatio())).lightness() < 60);
            QCOMPARE(view->systemCharts()->layerPlot()->legend->textColor(), QColor(0xe0, 0xe0, 0xe0));
            saveScreenshot(&window, QStringLiteral("dark-heatmap.png"));
            view->selectTensor(int(view->snapshot().model->findTensor("blk.1.ffn_up.weight") -
                                   view->snapshot().model->tensors().data()));
            view->showPage(widgets::ModelView::Page::Inspector);
            QTRY_VERIFY(view->inspector()->hasPortrait());
            settle(&window);
            saveScreenshot(&window, QStringLiteral("dark-inspector.png"));
            // Back to a light palette: the charts follow.
            QApplication::setPalette(original);
            QTRY_COMPARE(plot->xAxis->tickLabelColor(), original.color(QPalette::WindowText));
            QVERIFY(QColor(plot->toPixmap().toImage().pixel(2, 2)).lightness() > 200);
        }
        QApplication::setPalette(original);
    }

    // Selecting a tensor shows it in the inspector: indicators, histogram, spectrum, matrix.
    void inspector() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        app::MainWindow window;
        window.resize(1300, 850);
        window.show();
        JobEnds finished(window.jobs(), "measure");
        JobEnds portraits(window.jobs(), "portrait");
        QCOMPARE(window.openFiles({path}), 1);
        QVERIFY(waitForJobs(finished, 1, 20000));
        widgets::ModelView* view = window.currentView();
        const auto& tensors = view->snapshot().model->tensors();
        widgets::TensorInspector* inspector = view->inspector();
        // Before a tensor is chosen, the inspector says how to choose one.
        QVERIFY(inspector->isEmptyShown());
        view->showPage(widgets::ModelView::Page::Inspector);
        saveScreenshot(&window, QStringLiteral("main-window-inspector-empty.png"));
        // A heatmap cell opens its tensor in the inspector, even one the tree's filter hides;
        // a double click brings the inspector to the front.
        view->filterEdit()->setText(QStringLiteral("attn_q"));
        view->showPage(widgets::ModelView::Page::Heatmap);
        settle(view);
        widgets::ThetaHeatmap* heatmap = view->heatmap();
        heatmap->plot()->replot();
        const int down = tensorOf(view, "blk.2.ffn_down.weight");
        QTest::mouseClick(heatmap->plot(), Qt::LeftButton, {}, heatmap->pixelOfTensor(down));
        QCOMPARE(inspector->tensor(), down);
        QVERIFY(!inspector->isEmptyShown());
        QCOMPARE(view->tabs()->currentIndex(), 1); // a click keeps the heatmap in view
        QTest::mouseDClick(heatmap->plot(), Qt::LeftButton, {}, heatmap->pixelOfTensor(down));
        QCOMPARE(view->tabs()->currentWidget(), static_cast<QWidget*>(inspector));
        view->filterEdit()->clear();
        QVERIFY(waitForJobs(portraits, 1, 20000));
        const ZResult& z = view->measurement()->tensors[std::size_t(down)];
        QVERIFY(inspector->indicatorsText().startsWith(QStringLiteral("θ %1°").arg(*z.theta, 0, 'f', 2)));
        auto* bars = qobject_cast<QCPBars*>(inspector->histogramPlot()->plottable(0));
        QVERIFY(bars != nullptr);
        double counted = 0;
        for (auto it = bars->data()->begin(); it != bars->data()->end(); ++it) {
            counted += it->value;
        }
        QCOMPARE(counted, double(172 * 64));
        QCOMPARE(inspector->spectrumPlot()->graph(0)->dataCount(), int(z.levelEnergies.size()));
        auto* map = qobject_cast<QCPColorMap*>(inspector->imagePlot()->plottable(0));
        QCOMPARE(map->data()->keySize(), 172);
        QCOMPARE(map->data()->valueSize(), 64);
        // The matrix keeps its aspect (as many pixels per row as per column), has a colour
        // scale symmetric around zero, says how it was averaged, and reads out under the pointer.
        QCustomPlot* image = inspector->imagePlot();
        image->replot();
        QVERIFY(inspector->matrix()->keepsAspect());
        const QRect cells = image->axisRect()->rect();
        QVERIFY(std::abs(image->xAxis->range().size() / cells.width() -
                         image->yAxis->range().size() / cells.height()) <
                1e-6 * image->xAxis->range().size());
        QVERIFY(inspector->matrix()->colorScale()->visible());
        const QCPRange range = map->dataRange();
        QCOMPARE(QColor(map->gradient().color(range.upper, range)),
                 QColor(0xb2, 0x18, 0x2b));                                            // red: positive
        QCOMPARE(QColor(map->gradient().color(0.0, range)), QColor(0xf7, 0xf7, 0xf7)); // zero: white
        QCOMPARE(inspector->matrix()->colorScale()->dataRange().lower,
                 -inspector->matrix()->colorScale()->dataRange().upper);
        QCOMPARE(inspector->matrixCaption(), QStringLiteral("64 rows × 172 columns; every value shown"));
        const QPoint at(qRound(image->xAxis->coordToPixel(10)), qRound(image->yAxis->coordToPixel(3)));
        const auto data = view->snapshot().model->tensorData(tensors[std::size_t(down)]);
        float expected = 0;
        std::memcpy(&expected, data.data() + (3 * 172 + 10) * sizeof(float), sizeof(float));
        QCOMPARE(inspector->matrix()->readout(at),
                 QStringLiteral("row 3, column 10: %1").arg(expected, 0, 'g', 5));
        inspector->logScale()->setChecked(true);
        QCOMPARE(inspector->histogramPlot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
        view->tabs()->setCurrentWidget(inspector);
        saveScreenshot(&window, QStringLiteral("main-window-inspector.png"));
    }

    // A LoRA adapter says so in its header and has no empty "global" column; a model of
    // random weights is one colour on the fixed 0–90° scale and spreads out on a fitted one.
    void smallModelsReadRight() {
        const QString lora = sharedModel(QStringLiteral("zoo/stories260K-lora-r8-f32.gguf"));
        const QString random = sharedModel(QStringLiteral("zoo/tiny-qwen2-f32.gguf"));
        ORGAN_REQUIRE_SHARED(lora);
        ORGAN_REQUIRE_SHARED(random);
        app::MainWindow window;
        window.resize(1300, 850);
        window.show();
        JobEnds finished(window.jobs(), "measure");
        QCOMPARE(window.openFiles({lora, random}), 2);
        QVERIFY(waitForJobs(finished, 2, 20000));
        auto* adapter = qobject_cast<widgets::ModelView*>(window.documents()->widget(0));
        QVERIFY2(adapter->headerText().contains(QStringLiteral("LORA adapter for llama")),
                 qPrintable(adapter->headerText()));
        QVERIFY(!adapter->heatmap()->hasGlobalColumn());
        QCOMPARE(adapter->heatmap()->columnCount(), 5);
        QCOMPARE(adapter->heatmap()->layerOfColumn(0), std::optional<std::uint32_t>(0));
        QVERIFY(adapter->heatmap()->tensorAt(0, 0) >= 0);
        window.documents()->setCurrentWidget(adapter);
        adapter->showPage(widgets::ModelView::Page::Heatmap);
        saveScreenshot(&window, QStringLiteral("main-window-heatmap-lora.png"));

        auto* tiny = qobject_cast<widgets::ModelView*>(window.documents()->widget(1));
        widgets::ThetaHeatmap* map = tiny->heatmap();
        QVERIFY(map->fixedScaleBox()->isChecked());
        QCOMPARE(map->colorRange().lower, 0.0);
        QCOMPARE(map->colorRange().upper, 90.0);
        double low = 90;
        double high = 0;
        for (int c = 0; c < map->columnCount(); ++c) {
            for (int r = 0; r < map->rowCount(); ++r) {
                if (const auto theta = map->thetaAt(c, r)) {
                    low = std::min(low, *theta);
                    high = std::max(high, *theta);
                }
            }
        }
        map->fixedScaleBox()->setChecked(false);
        QVERIFY(map->colorRange().lower <= low && map->colorRange().upper >= high);
        QVERIFY2(map->colorRange().size() < 0.5 * 90, qPrintable(QString::number(map->colorRange().size())));
        window.documents()->setCurrentWidget(tiny);
        tiny->showPage(widgets::ModelView::Page::Heatmap);
        QTRY_COMPARE(tiny->systemCharts()->layerPlot()->graph(int(System::Organ))->dataCount(), 2);
        saveScreenshot(&window, QStringLiteral("main-window-heatmap-fitted.png"));
        map->fixedScaleBox()->setChecked(true);
        QCOMPARE(map->colorRange().upper, 90.0);
    }

    // A very tall matrix (Llama-2's 32 000-token embedding, 8 wide) fills the chart instead of
    // a sliver, and says that it is stretched and how it was averaged; a one-layer model's
    // layer axis has whole-number ticks.
    void tallMatrixAndOneLayer() {
        const QString path = sharedModel(QStringLiteral("llama-2-tiny-random-f16.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        app::MainWindow window;
        window.resize(1300, 850);
        window.show();
        JobEnds finished(window.jobs(), "measure");
        JobEnds portraits(window.jobs(), "portrait");
        QCOMPARE(window.openFiles({path}), 1);
        QVERIFY(waitForJobs(finished, 1, 20000));
        widgets::ModelView* view = window.currentView();
        view->selectTensor(tensorOf(view, "token_embd.weight"));
        QVERIFY(waitForJobs(portraits, 1, 20000));
        widgets::TensorInspector* inspector = view->inspector();
        QVERIFY(!inspector->matrix()->keepsAspect());
        QCOMPARE(inspector->matrixCaption(),
                 QStringLiteral(
                     "32,000 rows × 8 columns; each cell the mean of up to 125 × 1 values; stretched to "
                     "fit (4000 : 1)"));
        view->showPage(widgets::ModelView::Page::Inspector);
        inspector->imagePlot()->replot();
        QCOMPARE(inspector->imagePlot()->yAxis->range().size(), 32000.0);
        saveScreenshot(&window, QStringLiteral("main-window-inspector-tall.png"));
        // An item's number and unit stay on one line.
        QVERIFY2(view->headerText().contains(QStringLiteral("1&nbsp;layer ")),
                 qPrintable(view->headerText()));
        QVERIFY2(view->headerText().contains(QRegularExpression(QStringLiteral("[0-9.]+&nbsp;[KMG]?i?B "))),
                 qPrintable(view->headerText()));
        view->showPage(widgets::ModelView::Page::Heatmap);
        QCustomPlot* layers = view->systemCharts()->layerPlot();
        layers->replot();
        const QVector<double> ticks = layers->xAxis->tickVector();
        QVERIFY(!ticks.isEmpty());
        for (double tick : ticks) {
            QCOMPARE(tick, std::round(tick));
        }
    }

    // Δθ: with the healthy model as recipient and the damaged one as donor, the nine
    // replaced organs are negative and every other tensor is exactly 0, drawn in the
    // background colour; the scale fits the largest |Δθ| (or ±45°); swapping flips it.
    void comparison() {
        const QString healthyPath = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        const QString damagedPath = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        ORGAN_REQUIRE_SHARED(healthyPath);
        ORGAN_REQUIRE_SHARED(damagedPath);
        using Side = app::MainWindow::Side;
        app::MainWindow window;
        window.resize(1500, 850);
        window.show();
        JobEnds finished(window.jobs(), "measure");
        window.openFiles({healthyPath});
        window.openFiles({damagedPath}, Side::Donor);
        QVERIFY(waitForJobs(finished, 2, 20000));
        widgets::ModelView* healthy = window.currentView();
        QTRY_VERIFY(healthy->hasComparison());
        widgets::ThetaHeatmap* delta = healthy->comparison();
        int negative = 0;
        int zero = 0;
        double largest = 0;
        QPoint zeroCell;
        for (int column = 0; column < delta->columnCount(); ++column) {
            for (int row = 0; row < delta->rowCount(); ++row) {
                if (const auto d = delta->valueAt(column, row)) {
                    negative += *d < 0;
                    zero += *d == 0.0;
                    largest = std::max(largest, std::abs(*d));
                    if (*d == 0.0) {
                        zeroCell = {column, row};
                    }
                }
            }
        }
        QCOMPARE(negative, 9);
        QCOMPARE(zero, 48 - 9);
        QVERIFY(*delta->valueAt(2, 8) < 0.0); // layer 1, ffn_up
        QCOMPARE(healthy->tabs()->tabText(2), QStringLiteral("Δθ"));
        QVERIFY(healthy->tabs()->isTabEnabled(2));
        healthy->showPage(widgets::ModelView::Page::Delta);
        QCOMPARE(healthy->tabs()->currentIndex(), 2);
        // Fitted: ±(largest |Δθ|), so that a change of a few degrees is a strong colour.
        QVERIFY(!delta->fixedScaleBox()->isChecked());
        QTRY_VERIFY(std::abs(delta->colorRange().upper - largest) < 1e-9);
        QVERIFY(std::abs(delta->colorRange().lower + largest) < 1e-9);
        QVERIFY(largest < 30); // so ±45° would have washed it out
        // Zero is the background colour, and the key says so.
        delta->plot()->replot();
        const QImage shot = delta->plot()->grab().toImage();
        const QPoint zeroPixel(int(delta->plot()->xAxis->coordToPixel(zeroCell.x())),
                               int(delta->plot()->yAxis->coordToPixel(zeroCell.y())));
        QCOMPARE(QColor(shot.pixel(zeroPixel * shot.devicePixelRatio())),
                 delta->plot()->palette().color(QPalette::Base));
        bool keyNamesZero = false;
        for (QCPLayoutElement* element : delta->plot()->plotLayout()->elements(true)) {
            if (auto* text = qobject_cast<QCPTextElement*>(element)) {
                keyNamesZero |= text->text().contains(QStringLiteral("background colour: Δθ = 0"));
            }
        }
        QVERIFY(keyNamesZero);
        saveScreenshot(&window, QStringLiteral("main-window-delta.png"));
        delta->fixedScaleBox()->setChecked(true);
        QCOMPARE(delta->colorRange().upper, 45.0);
        QCOMPARE(delta->colorRange().lower, -45.0);
        delta->fixedScaleBox()->setChecked(false);

        window.swapPanes();
        widgets::ModelView* damaged = window.currentView();
        QVERIFY(!healthy->hasComparison());
        QVERIFY(!healthy->comparison()->valueAt(2, 8));
        QTRY_VERIFY(damaged->hasComparison());
        QVERIFY(*damaged->comparison()->valueAt(2, 8) > 0.0);
        window.pane(Side::Donor)->closeView(0);
        QVERIFY(!damaged->hasComparison());
        QVERIFY(damaged->comparisonReason().startsWith(QStringLiteral("Open a donor")));
    }

    // Δθ is offered only for comparable models: one architecture, equal shapes.
    void comparisonNeedsComparableModels() {
        const QString stories = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        const QString qwen = sharedModel(QStringLiteral("zoo/tiny-qwen2-f32.gguf"));
        const QString tiny = sharedModel(QStringLiteral("llama-2-tiny-random-f16.gguf"));
        ORGAN_REQUIRE_SHARED(stories);
        ORGAN_REQUIRE_SHARED(qwen);
        ORGAN_REQUIRE_SHARED(tiny);
        using Side = app::MainWindow::Side;
        app::MainWindow window;
        window.resize(1500, 850);
        window.show();
        JobEnds finished(window.jobs(), "measure");
        window.openFiles({stories});
        window.openFiles({qwen}, Side::Donor);
        QVERIFY(waitForJobs(finished, 2, 20000));
        widgets::ModelView* recipient = window.currentView();
        QVERIFY(!recipient->hasComparison());
        QVERIFY2(recipient->comparisonReason().contains(
                     QStringLiteral("stories260K-f32 is llama and tiny-qwen2-f32 is "
                                    "qwen2")),
                 qPrintable(recipient->comparisonReason()));
        QVERIFY(!recipient->tabs()->isTabEnabled(2));
        window.openFiles({tiny}, Side::Donor);
        QVERIFY(waitForJobs(finished, 3, 20000));
        QVERIFY2(recipient->comparisonReason().contains(QStringLiteral("token_embd.weight is 64 × 512 in "
                                                                       "stories260K-f32 and 8 × 32000")),
                 qPrintable(recipient->comparisonReason()));
        QVERIFY(!recipient->hasComparison());
        recipient->showPage(widgets::ModelView::Page::Delta);
        QVERIFY(recipient->tabs()->currentIndex() != 2);
    }
};

QTEST_MAIN(TestWindowHeatmap)
#include "tst_window_heatmap.moc"
