// The window, offscreen: opens a real file, shows its tree and metadata, reports a bad
// file in a dialog, opens the demo specimens, and saves a screenshot for a person to look at.
#include "anatomy_filter_proxy.h"
#include "anatomy_tree_model.h"
#include "chart_export.h"
#include "demo_models.h"
#include "engine_thread.h"
#include "fixtures.h"
#include "graft_document.h"
#include "graft_plan_panel.h"
#include "main_window.h"
#include "model_pane.h"
#include "model_roles.h"
#include "model_view.h"
#include "report_export.h"
#include "shared_models.h"
#include "system_theta_charts.h"
#include "tensor_drag.h"
#include "tensor_inspector.h"
#include "theta_heatmap.h"

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
#include <fstream>
#include <nlohmann/json.hpp>
#include <qcustomplot.h>

using namespace organ;
using namespace organ::testing;

class TestMainWindow : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    static QMessageBox* errorDialog() {
        for (QWidget* w : QApplication::topLevelWidgets()) {
            if (auto* box = qobject_cast<QMessageBox*>(w); box != nullptr && box->isVisible()) {
                return box;
            }
        }
        return nullptr;
    }

    // Into the build folder; the HiDPI run's screenshots are prefixed "hidpi-".
    static void saveScreenshot(QWidget* window, const QString& name) {
        const QString folder = QStringLiteral(ORGAN_SCREENSHOT_DIR);
        QDir().mkpath(folder);
        const QPixmap shot = window->grab();
        QCOMPARE(shot.devicePixelRatio(), window->devicePixelRatioF());
        const QString prefix = window->devicePixelRatioF() > 1 ? QStringLiteral("hidpi-") : QString();
        QVERIFY(shot.save(folder + u'/' + prefix + name));
    }

    // Answers the next modal question box with `button` (from the event loop it opens).
    static void answerNextQuestion(QMessageBox::StandardButton button, QString* text = nullptr) {
        QTimer::singleShot(0, [button, text] {
            if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
                if (text != nullptr) {
                    *text = box->text();
                }
                box->button(button)->click();
            }
        });
    }

    // A layer node under a system node of a view's tree (source model indices).
    static QModelIndex layerNode(widgets::ModelView* view, const QString& system, const QString& layer) {
        model::AnatomyTreeModel* tree = view->anatomyModel();
        for (int s = 0; s < tree->rowCount(); ++s) {
            const QModelIndex systemIndex = tree->index(s, 0);
            if (systemIndex.data().toString() != system) {
                continue;
            }
            for (int l = 0; l < tree->rowCount(systemIndex); ++l) {
                if (tree->index(l, 0, systemIndex).data().toString() == layer) {
                    return tree->index(l, 0, systemIndex);
                }
            }
        }
        return {};
    }

    static QModelIndex systemNode(widgets::ModelView* view, const QString& system) {
        model::AnatomyTreeModel* tree = view->anatomyModel();
        for (int s = 0; s < tree->rowCount(); ++s) {
            if (tree->index(s, 0).data().toString() == system) {
                return tree->index(s, 0);
            }
        }
        return {};
    }

    static int tensorOf(const widgets::ModelView* view, const char* name) {
        const auto& model = *view->snapshot().model;
        return int(model.findTensor(name) - model.tensors().data());
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        qputenv("ORGAN_CACHE_DIR", m_dir.filePath(QStringLiteral("cache")).toLocal8Bit());
        QCoreApplication::setOrganizationName(QStringLiteral("OrganWorkbenchTests"));
        QSettings().clear();
    }

    void opensRealFile() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        app::MainWindow window;
        window.resize(1280, 800);
        window.show();
        QCOMPARE(window.openFiles({path}), 1);
        QCOMPARE(window.documents()->count(), 1);
        widgets::ModelView* view = window.currentView();
        QVERIFY(view != nullptr);
        QCOMPARE(window.windowTitle(), QStringLiteral("stories260K-f32 — Organ Workbench"));
        QVERIFY(view->headerText().contains(QStringLiteral("292.80 K")));
        QVERIFY(view->headerText().contains(QStringLiteral("5 layers")));
        QAbstractItemModel* tree = view->anatomyView()->model();
        QCOMPARE(tree->rowCount(), 4);
        QVERIFY(view->anatomyView()->isExpanded(tree->index(0, 0)));
        QCOMPARE(view->metadataView()->model()->rowCount(), 19);
        view->filterEdit()->setText(QStringLiteral("ffn_up"));
        QCOMPARE(tree->rowCount(), 1);
        view->filterEdit()->clear();
        view->findChild<QCheckBox*>(QStringLiteral("system-norm"))->setChecked(false);
        QCOMPARE(tree->rowCount(), 3);
        view->findChild<QCheckBox*>(QStringLiteral("system-norm"))->setChecked(true);
        view->anatomyView()->expandAll();
        saveScreenshot(&window, QStringLiteral("main-window-anatomy.png"));
        QCOMPARE(window.recentFiles().first(), QFileInfo(path).absoluteFilePath());
    }

    // Opening a model measures it on the engine thread; θ fills the tree as it arrives.
    void measuresInTheBackground() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        QDir(m_dir.filePath(QStringLiteral("cache"))).removeRecursively(); // measured for real
        app::MainWindow window;
        window.resize(1280, 800);
        window.show();
        QSignalSpy finished(window.engine(), &app::EngineThread::finished);
        QSignalSpy perTensor(window.engine(), &app::EngineThread::tensorMeasured);
        QCOMPARE(window.openFiles({path}), 1);
        widgets::ModelView* view = window.currentView();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
        QCOMPARE(perTensor.count(), 48);
        QVERIFY(view->measurement() != nullptr);
        QVERIFY2(view->headerText().contains(QStringLiteral("θ mean 36.65°")),
                 qPrintable(view->headerText()));
        const auto& tensors = view->snapshot().model->tensors();
        const int embd = int(view->snapshot().model->findTensor("token_embd.weight") - tensors.data());
        const QModelIndex cell =
            view->anatomyModel()->indexOfTensor(embd).siblingAtColumn(model::AnatomyTreeModel::Theta);
        QVERIFY(std::abs(cell.data(model::ThetaRole).toDouble() - 40.5206427) < 0.01); // the numpy reference
        QVERIFY(
            window.statusBar()->currentMessage().startsWith(QStringLiteral("Measured llama: θ mean 36.65°")));
        view->anatomyView()->expandAll();
        saveScreenshot(&window, QStringLiteral("main-window-theta.png"));
        // A second window opens the unchanged file from the cache: no per-tensor signals, the
        // whole measurement applied at once to the tree (group means too), heatmap and charts.
        app::MainWindow again;
        QSignalSpy cached(again.engine(), &app::EngineThread::finished);
        QSignalSpy cachedPerTensor(again.engine(), &app::EngineThread::tensorMeasured);
        again.openFiles({path});
        QTRY_COMPARE_WITH_TIMEOUT(cached.count(), 1, 20000);
        widgets::ModelView* fromCache = again.currentView();
        QVERIFY(fromCache->measurement()->fromCache);
        QCOMPARE(cachedPerTensor.count(), 0);
        for (int t = 0; t < int(tensors.size()); ++t) {
            const QModelIndex a = view->anatomyModel()->indexOfTensor(t);
            const QModelIndex b = fromCache->anatomyModel()->indexOfTensor(t);
            QCOMPARE(b.siblingAtColumn(model::AnatomyTreeModel::Theta).data(model::ThetaRole),
                     a.siblingAtColumn(model::AnatomyTreeModel::Theta).data(model::ThetaRole));
            QCOMPARE(b.parent().siblingAtColumn(model::AnatomyTreeModel::Theta).data(model::ThetaRole),
                     a.parent().siblingAtColumn(model::AnatomyTreeModel::Theta).data(model::ThetaRole));
        }
        QCOMPARE(fromCache->heatmap()->thetaAt(0, 0), view->heatmap()->thetaAt(0, 0));
        QTRY_COMPARE(fromCache->systemCharts()->meanTheta(System::Organ, 2),
                     view->systemCharts()->meanTheta(System::Organ, 2));
    }

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
        QSignalSpy finished(window.engine(), &app::EngineThread::finished);
        QCOMPARE(window.openFiles({healthyPath, damagedPath}), 2);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 20000);
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
        QTest::qWait(0); // let the plot lay out before computing pixels
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
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 20000);
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

    // Charts save as PNG, SVG and PDF at the size asked for; the measurement as JSON, CSV
    // and Markdown; Help → Z-measure shows the documentation.
    void exports() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        app::MainWindow window;
        window.resize(1100, 700);
        window.show();
        QString error;
        QCOMPARE(window.openFiles({path}), 1);
        QVERIFY(!window.exportMeasurement(m_dir.filePath(QStringLiteral("early.json")),
                                          &error)); // not measured yet
        QSignalSpy finished(window.engine(), &app::EngineThread::finished);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
        QCustomPlot* plot = window.currentView()->heatmap()->plot();

        const QString png = m_dir.filePath(QStringLiteral("map.png"));
        QVERIFY2(widgets::exportChart(plot, png, QSize(800, 500), &error), qPrintable(error));
        QCOMPARE(QImage(png).size(), QSize(800, 500));
        const QString svg = m_dir.filePath(QStringLiteral("map.svg"));
        QVERIFY2(widgets::exportChart(plot, svg, QSize(640, 400), &error), qPrintable(error));
        QXmlStreamReader xml(readAll(svg));
        QVERIFY(xml.readNextStartElement());
        QCOMPARE(xml.name(), QStringLiteral("svg"));
        QVERIFY(
            xml.attributes().value(QStringLiteral("viewBox")).toString().contains(QStringLiteral("640 400")));
        const QString pdf = m_dir.filePath(QStringLiteral("map.pdf"));
        QVERIFY2(widgets::exportChart(plot, pdf, QSize(600, 400), &error), qPrintable(error));
        QVERIFY(readAll(pdf).startsWith("%PDF"));
        QVERIFY(
            !widgets::exportChart(plot, m_dir.filePath(QStringLiteral("map.bmp")), QSize(600, 400), &error));
        QVERIFY(error.contains(QStringLiteral("map.bmp: choose a .png, .svg or .pdf file")));
        QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("*.partial*")}).size(), 0);

        const QString json = m_dir.filePath(QStringLiteral("measure.json"));
        QVERIFY2(window.exportMeasurement(json, &error), qPrintable(error));
        const auto doc = nlohmann::json::parse(readAll(json).toStdString());
        QCOMPARE(doc.at("z_measure").get<std::string>(), std::string("v1"));
        QCOMPARE(doc.at("models").at(0).at("tensors").size(), std::size_t(48));
        const QString csv = m_dir.filePath(QStringLiteral("measure.csv"));
        QVERIFY(window.exportMeasurement(csv, &error));
        QCOMPARE(QString::fromUtf8(readAll(csv)).count(u'\n'), 49);
        const QString md = m_dir.filePath(QStringLiteral("measure.md"));
        QVERIFY(window.exportMeasurement(md, &error));
        QVERIFY(readAll(md).startsWith("# Z-measure report"));

        // The tree exports what it shows, in the same schemas: everything when unfiltered
        // (identical to the measurement export), only the filtered tensors otherwise.
        widgets::ModelView* view = window.currentView();
        const QString allCsv = m_dir.filePath(QStringLiteral("tree.csv"));
        QVERIFY(widgets::writeMeasurementReport(view->shownTensorsReport(), allCsv, &error));
        QCOMPARE(readAll(allCsv), readAll(csv));
        view->filterEdit()->setText(QStringLiteral("ffn_down"));
        view->findChild<QCheckBox*>(QStringLiteral("system-norm"))->setChecked(false);
        const QString shownJson = m_dir.filePath(QStringLiteral("tree.json"));
        QVERIFY(widgets::writeMeasurementReport(view->shownTensorsReport(), shownJson, &error));
        const auto shown = nlohmann::json::parse(readAll(shownJson).toStdString()).at("models").at(0);
        QCOMPARE(shown.at("tensors").size(), std::size_t(5));
        QCOMPARE(shown.at("model").at("tensors").get<int>(), 5);
        for (const auto& t : shown.at("tensors")) {
            QVERIFY(t.at("name").get<std::string>().find("ffn_down") != std::string::npos);
            QVERIFY(t.at("theta").is_number());
        }
        view->filterEdit()->setText(QStringLiteral("norm"));
        QCOMPARE(view->shownTensorsReport().measurement.model.tensors, std::uint64_t(0));
        QVERIFY(!widgets::writeMeasurementReport(view->shownTensorsReport(),
                                                 m_dir.filePath(QStringLiteral("tree.txt")), &error));
        QVERIFY(error.startsWith(QStringLiteral("tree.txt: ")));

        window.showZMeasureHelp();
        auto* help = window.findChild<QDialog*>(QStringLiteral("zMeasureHelp"));
        QVERIFY(help != nullptr);
        QVERIFY(help->findChild<QTextBrowser*>()->toPlainText().contains(QStringLiteral("θ ∈ [0°, 90°]")));
        saveScreenshot(help, QStringLiteral("help-z-measure.png"));
        help->close();
    }

    // Before any θ arrives the tree still exports its tensors, with no θ.
    void exportsUnmeasuredTree() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto snapshot = ModelSnapshot::open(path.toStdString());
        widgets::ModelView view(snapshot);
        QString error;
        const QString csv = m_dir.filePath(QStringLiteral("unmeasured.csv"));
        QVERIFY2(widgets::writeMeasurementReport(view.shownTensorsReport(), csv, &error), qPrintable(error));
        const QStringList lines = QString::fromUtf8(readAll(csv)).split(u'\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 49);
        QVERIFY2(lines[1].startsWith(QStringLiteral("\"llama\",\"token_embd.weight\",embed,")),
                 qPrintable(lines[1]));
        QVERIFY2(lines[1].contains(QStringLiteral(",0,32768,,,,")), qPrintable(lines[1])); // n 0, N, no H/K/C
    }

    // Keyboard: Ctrl+F goes to the filter, Ctrl+1…4 to the pages, in the focused pane.
    void shortcuts() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        app::MainWindow window;
        window.resize(1200, 800);
        window.show();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QCOMPARE(window.openFiles({path}), 1);
        QCOMPARE(window.openFiles({path}, app::MainWindow::Side::Donor), 1);
        widgets::ModelView* recipient = window.currentView();
        widgets::ModelView* donor = window.pane(app::MainWindow::Side::Donor)->currentView();
        QTest::keyClick(&window, Qt::Key_2, Qt::ControlModifier);
        QCOMPARE(recipient->tabs()->currentIndex(), 1);
        QTest::keyClick(&window, Qt::Key_F, Qt::ControlModifier);
        QCOMPARE(recipient->tabs()->currentIndex(), 0);
        QCOMPARE(QApplication::focusWidget(), recipient->filterEdit());
        donor->anatomyView()->setFocus();
        QTest::keyClick(&window, Qt::Key_4, Qt::ControlModifier);
        QCOMPARE(donor->tabs()->currentWidget(), static_cast<QWidget*>(donor->metadataView()));
        QCOMPARE(recipient->tabs()->currentIndex(), 0);
        QTest::keyClick(&window, Qt::Key_3, Qt::ControlModifier);
        QCOMPARE(donor->tabs()->currentWidget(), static_cast<QWidget*>(donor->inspector()));
        // Help → About names the program, its version and Qt's.
        QString about;
        QTimer::singleShot(0, [&about] {
            if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
                about = box->text();
                box->accept();
            }
        });
        QApplication::setApplicationVersion(QStringLiteral("9.8.7"));
        window.showAbout();
        QVERIFY2(about.contains(QStringLiteral("Organ Workbench 9.8.7")), qPrintable(about));
        QVERIFY(about.contains(QString::fromLatin1(qVersion())));
    }

    // The split between the panes and between heatmap and side charts outlive the window.
    void layoutRemembered() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        QList<int> panes;
        QList<int> heatmap;
        {
            app::MainWindow window;
            window.resize(1200, 800);
            window.show();
            auto* splitter = window.findChild<QSplitter*>(QStringLiteral("panes"));
            QCOMPARE(window.openFiles({path}), 1);
            // The empty donor pane shrinks to its instructions.
            QTRY_VERIFY(splitter->sizes().at(1) <= 300);
            QCOMPARE(window.openFiles({path}, app::MainWindow::Side::Donor), 1);
            QTRY_VERIFY(std::abs(splitter->sizes().at(0) - splitter->sizes().at(1)) < 20);
            splitter->setSizes({720, 480});
            panes = splitter->sizes();
            auto* inner = window.currentView()->findChild<QSplitter*>(QStringLiteral("heatmapSplitter"));
            window.currentView()->showPage(widgets::ModelView::Page::Heatmap);
            inner->setSizes({500, 200});
            emit inner->splitterMoved(500, 1);
            heatmap = inner->sizes();
            window.close();
        }
        app::MainWindow again;
        again.resize(1200, 800);
        again.show();
        QCOMPARE(again.openFiles({path}), 1);
        QCOMPARE(again.openFiles({path}, app::MainWindow::Side::Donor), 1);
        // The same split (as a share of the width: the layout may settle to other pixels).
        const QList<int> restored = again.findChild<QSplitter*>(QStringLiteral("panes"))->sizes();
        QVERIFY2(std::abs(double(restored[0]) / (restored[0] + restored[1]) -
                          double(panes[0]) / (panes[0] + panes[1])) < 0.02,
                 qPrintable(QStringLiteral("%1/%2 vs %3/%4")
                                .arg(restored[0])
                                .arg(restored[1])
                                .arg(panes[0])
                                .arg(panes[1])));
        again.currentView()->showPage(widgets::ModelView::Page::Heatmap);
        QCOMPARE(again.currentView()->findChild<QSplitter*>(QStringLiteral("heatmapSplitter"))->sizes(),
                 heatmap);
        // Closing the donor shrinks its pane again; the next donor gets the remembered split.
        again.pane(app::MainWindow::Side::Donor)->closeView(0);
        QTRY_VERIFY(again.findChild<QSplitter*>(QStringLiteral("panes"))->sizes().at(1) <= 300);
        QSettings().remove(QStringLiteral("window"));
        QSettings().remove(QStringLiteral("layout"));
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
        widgets::SystemThetaCharts charts(ModelSnapshot::open(path.toStdString()));
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
            QSignalSpy finished(window.engine(), &app::EngineThread::finished);
            QCOMPARE(window.openFiles({path}), 1);
            QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
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
            QTest::qWait(300);
            saveScreenshot(&window, QStringLiteral("dark-inspector.png"));
            // Back to a light palette: the charts follow.
            QApplication::setPalette(original);
            QTRY_COMPARE(plot->xAxis->tickLabelColor(), original.color(QPalette::WindowText));
            QVERIFY(QColor(plot->toPixmap().toImage().pixel(2, 2)).lightness() > 200);
        }
        QApplication::setPalette(original);
    }

    // The signature flow: drag organs from the healthy donor onto the damaged recipient (tree
    // and heatmap), see the preview, save the plan (the CLI runs it to the same bytes),
    // assemble on the engine thread, open the chimera; cancel leaves no file; guard rails.
    void surgery() {
        const QString healthyPath = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        const QString damagedPath = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        ORGAN_REQUIRE_SHARED(healthyPath);
        ORGAN_REQUIRE_SHARED(damagedPath);
        const QString cli = qEnvironmentVariable("ORGAN_CLI");
        QVERIFY2(QFileInfo(cli).isExecutable(), "ORGAN_CLI names the organ binary");
        app::MainWindow window;
        window.resize(1500, 950);
        window.show();
        QSignalSpy finished(window.engine(), &app::EngineThread::finished);
        QCOMPARE(window.openFiles({damagedPath}), 1);
        QCOMPARE(window.openFiles({healthyPath}, app::MainWindow::Side::Donor), 1);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 20000);
        widgets::ModelView* recipient = window.currentView();
        widgets::ModelView* donor = window.pane(app::MainWindow::Side::Donor)->currentView();
        QVERIFY(recipient->isRecipient() && !donor->isRecipient());
        QCOMPARE(recipient->anatomyView()->dragDropMode(), QAbstractItemView::DropOnly);
        QVERIFY(recipient->anatomyView()->dragDropOverwriteMode());
        QCOMPARE(donor->anatomyView()->dragDropMode(), QAbstractItemView::DragOnly);
        // Swapping the panes swaps the roles.
        window.swapPanes();
        QVERIFY(donor->isRecipient() && !recipient->isRecipient());
        QCOMPARE(donor->anatomyView()->dragDropMode(), QAbstractItemView::DropOnly);
        window.swapPanes();
        QVERIFY(recipient->isRecipient() && !donor->isRecipient());
        model::GraftDocument* plan = window.graftDocument();

        // Heatmap: a row (ffn_up across layers) onto a recipient cell grafts it in place; a
        // column (layer 1) onto the label of layer 3 maps 1 → 3; a cell onto another role is
        // refused with the reason.
        recipient->showPage(widgets::ModelView::Page::Heatmap);
        QTest::qWait(0);
        widgets::ThetaHeatmap* to = recipient->heatmap();
        widgets::ThetaHeatmap* from = donor->heatmap();
        to->plot()->replot();
        const int ffnUpRow = 8;
        QCOMPARE(from->roles()[ffnUpRow], std::string("ffn_up"));
        std::unique_ptr<QMimeData> row(model::encodeTensorDrag(*from->dragForRow(ffnUpRow)));
        QString message;
        const QPoint cell = to->pixelOfTensor(tensorOf(recipient, "blk.0.ffn_up.weight"));
        QVERIFY(to->canDropAt(row.get(), cell, &message));
        QCOMPARE(message, QStringLiteral("Replaces 5 tensors"));
        QVERIFY(to->dropAt(row.get(), cell));
        std::unique_ptr<QMimeData> column(model::encodeTensorDrag(*from->dragForColumn(2)));
        const QRect cells = to->plot()->axisRect()->rect();
        const QPoint layer3Label(int(to->plot()->xAxis->coordToPixel(4)), cells.bottom() + 8);
        QVERIFY(to->canDropAt(column.get(), layer3Label, &message));
        QCOMPARE(message, QStringLiteral("Maps layer 1 → 3: 9 tensors"));
        QVERIFY(to->dropAt(column.get(), layer3Label));
        std::unique_ptr<QMimeData> one(model::encodeTensorDrag(*from->dragForCell(2, ffnUpRow)));
        QVERIFY(!to->canDropAt(one.get(), to->pixelOfTensor(tensorOf(recipient, "blk.1.attn_q.weight")),
                               &message));
        QVERIFY2(message.contains(QStringLiteral("same role")), qPrintable(message));
        QCOMPARE(plan->plan().operations.size(), std::size_t(2));
        // Ctrl+click selects donor cells (layers 0 and 4's ffn_up); dragging one drags both.
        donor->showPage(widgets::ModelView::Page::Heatmap);
        QTest::qWait(0);
        from->plot()->replot();
        for (const char* name : {"blk.0.ffn_up.weight", "blk.4.ffn_up.weight"}) {
            QTest::mouseClick(from->plot(), Qt::LeftButton, Qt::ControlModifier,
                              from->pixelOfTensor(tensorOf(donor, name)));
        }
        QCOMPARE(from->selectedTensors().size(), std::size_t(2));
        const auto selection = from->dragAtPixel(from->pixelOfTensor(tensorOf(donor, "blk.4.ffn_up.weight")));
        QCOMPARE(selection->tensors.size(), std::size_t(2));
        std::unique_ptr<QMimeData> cellsDrag(model::encodeTensorDrag(*selection));
        QVERIFY(to->canDropAt(cellsDrag.get(), to->pixelOfTensor(tensorOf(recipient, "blk.2.ffn_up.weight")),
                              &message));
        QCOMPARE(message, QStringLiteral("Replaces 2 tensors"));
        from->plot()->replot();
        saveScreenshot(from, QStringLiteral("surgery-donor-selection.png"));
        from->toggleSelected(tensorOf(donor, "blk.0.ffn_up.weight"));
        from->toggleSelected(tensorOf(donor, "blk.4.ffn_up.weight"));
        QVERIFY(from->selectedTensors().empty());
        // Undo both with the keyboard (Ctrl+Z), redo one (Ctrl+Shift+Z), undo it again.
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QTest::keyClick(&window, Qt::Key_Z, Qt::ControlModifier);
        QTest::keyClick(&window, Qt::Key_Z, Qt::ControlModifier);
        QVERIFY(plan->isEmpty());
        QTest::keyClick(&window, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
        QCOMPARE(plan->plan().operations.size(), std::size_t(1));
        QTest::keyClick(&window, Qt::Key_Z, Qt::ControlModifier);
        QVERIFY(plan->isEmpty());

        // Through the widgets' own paths: drag events on the recipient's heatmap (outline and
        // drop), and the tree views' proxy models (what QTreeView's drag and drop calls).
        {
            std::unique_ptr<QMimeData> cellDrag(model::encodeTensorDrag(*from->dragForCell(3, ffnUpRow)));
            const QPoint onCell = to->pixelOfTensor(tensorOf(recipient, "blk.2.ffn_up.weight"));
            QDragEnterEvent enter(onCell, Qt::CopyAction, cellDrag.get(), Qt::LeftButton, Qt::NoModifier);
            QApplication::sendEvent(to->plot(), &enter);
            QDragMoveEvent move(onCell, Qt::CopyAction, cellDrag.get(), Qt::LeftButton, Qt::NoModifier);
            QApplication::sendEvent(to->plot(), &move);
            QVERIFY(move.isAccepted());
            QDropEvent drop(QPointF(onCell), Qt::CopyAction, cellDrag.get(), Qt::LeftButton, Qt::NoModifier);
            QApplication::sendEvent(to->plot(), &drop);
            QVERIFY(drop.isAccepted());
            QCOMPARE(plan->plan().operations.size(), std::size_t(1));
            const QPoint wrong = to->pixelOfTensor(tensorOf(recipient, "blk.2.attn_q.weight"));
            QDragMoveEvent refused(wrong, Qt::CopyAction, cellDrag.get(), Qt::LeftButton, Qt::NoModifier);
            QApplication::sendEvent(to->plot(), &refused);
            QVERIFY(!refused.isAccepted());
            plan->undoStack()->undo();

            QAbstractItemModel* donorProxy = donor->anatomyView()->model();
            QAbstractItemModel* recipientProxy = recipient->anatomyView()->model();
            const QModelIndex proxyTensor = donor->anatomyProxy()->mapFromSource(
                donor->anatomyModel()->indexOfTensor(tensorOf(donor, "blk.4.ffn_down.weight")));
            QVERIFY(donorProxy->flags(proxyTensor) & Qt::ItemIsDragEnabled);
            QVERIFY(donorProxy->mimeTypes().contains(QString::fromLatin1(model::kTensorMimeType)));
            std::unique_ptr<QMimeData> viaProxy(donorProxy->mimeData({proxyTensor}));
            QCOMPARE(model::decodeTensorDrag(viaProxy.get())->tensors,
                     std::vector<int>{tensorOf(donor, "blk.4.ffn_down.weight")});
            const QModelIndex proxyTarget = recipient->anatomyProxy()->mapFromSource(
                recipient->anatomyModel()->indexOfTensor(tensorOf(recipient, "blk.4.ffn_down.weight")));
            QVERIFY(recipientProxy->flags(proxyTarget) & Qt::ItemIsDropEnabled);
            QVERIFY(recipientProxy->canDropMimeData(viaProxy.get(), Qt::CopyAction, -1, -1, proxyTarget));
            QVERIFY(recipientProxy->dropMimeData(viaProxy.get(), Qt::CopyAction, -1, -1, proxyTarget));
            QCOMPARE(plan->plan().operations.at(0).select.names,
                     std::vector<std::string>{"blk.4.ffn_down.weight"});
            plan->undoStack()->undo();
            QVERIFY(plan->isEmpty());
        }

        // The healing graft, in the tree: the organ system's layers 1-3 onto the recipient's organs.
        std::unique_ptr<QMimeData> organs(donor->anatomyModel()->mimeData(
            {layerNode(donor, QStringLiteral("organ"), QStringLiteral("layer 1")),
             layerNode(donor, QStringLiteral("organ"), QStringLiteral("layer 2")),
             layerNode(donor, QStringLiteral("organ"), QStringLiteral("layer 3"))}));
        const QModelIndex organTarget = systemNode(recipient, QStringLiteral("organ"));
        QVERIFY(
            recipient->anatomyModel()->canDropMimeData(organs.get(), Qt::CopyAction, -1, -1, organTarget));
        QCOMPARE(recipient->anatomyModel()->dropMessage(), QStringLiteral("Replaces 9 tensors"));
        QVERIFY(recipient->anatomyModel()->dropMimeData(organs.get(), Qt::CopyAction, -1, -1, organTarget));
        QCOMPARE(plan->report().layout.tensorsFromDonors, std::uint64_t(9));
        QVERIFY(!plan->report().hasErrors());
        QCOMPARE(window.planPanel()->operationsView()->model()->rowCount(), 1);

        // The recipient's layer context menu: duplicate layer 2, then the panel moves it up,
        // removes it; a finding selects its tensor in the recipient's tree.
        recipient->showPage(widgets::ModelView::Page::Anatomy);
        QTimer::singleShot(0, [] {
            auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
            QVERIFY(menu != nullptr);
            for (QAction* action : menu->actions()) {
                if (action->text() == QStringLiteral("Duplicate layer 2")) {
                    action->trigger();
                }
            }
            menu->close();
        });
        const QModelIndex layer2 = recipient->anatomyProxy()->mapFromSource(
            layerNode(recipient, QStringLiteral("skeleton"), QStringLiteral("layer 2")));
        emit recipient->anatomyView()->customContextMenuRequested(
            recipient->anatomyView()->visualRect(layer2).center());
        QCOMPARE(plan->plan().operations.size(), std::size_t(2));
        QVERIFY(plan->plan().operations[1].kind == GraftOperation::Kind::DuplicateLayer);
        QCOMPARE(plan->plan().operations[1].toLayer, 2u);
        QTableView* operations = window.planPanel()->operationsView();
        operations->selectRow(1);
        window.planPanel()->findChild<QToolButton*>(QStringLiteral("plan-up"))->click();
        QVERIFY(plan->plan().operations[0].kind == GraftOperation::Kind::DuplicateLayer);
        QCOMPARE(plan->report().layout.blocks, 6u);
        // Duplicating first renumbers: the organs of layers 1-3 now land in 1, 2 and 4,
        // and layer 3's copy keeps the damaged organs.
        operations->selectRow(0);
        window.planPanel()->findChild<QToolButton*>(QStringLiteral("plan-remove"))->click();
        QCOMPARE(plan->plan().operations.size(), std::size_t(1));
        QVERIFY(plan->plan().operations[0].kind == GraftOperation::Kind::Replace);
        plan->removeLayer(QString::fromStdString(recipient->snapshot().model->path()), 7); // an error
        QListWidget* findings = window.planPanel()->findingsView();
        QVERIFY(findings->count() >= 1);
        QVERIFY(findings->item(0)->text().contains(QStringLiteral("remove_layer: there is no layer 7")));
        plan->undoStack()->undo();
        QCOMPARE(findings->count(), 1);
        QVERIFY(findings->item(0)->text().contains(QStringLiteral("the plan fits")));
        // A second donor (F16): its skeleton converts to F32; the finding lists the tensors,
        // and choosing it selects the first in the recipient's tree. Then it is undone.
        const QString f16Path = sharedModel(QStringLiteral("stories260K-f16.gguf"));
        ORGAN_REQUIRE_SHARED(f16Path);
        QCOMPARE(window.openFiles({f16Path}, app::MainWindow::Side::Donor), 1);
        widgets::ModelView* f16 = window.pane(app::MainWindow::Side::Donor)->currentView();
        std::unique_ptr<QMimeData> skeleton(
            f16->anatomyModel()->mimeData({systemNode(f16, QStringLiteral("skeleton"))}));
        QVERIFY(
            recipient->anatomyModel()->dropMimeData(skeleton.get(), Qt::CopyAction, -1, -1, QModelIndex()));
        QCOMPARE(plan->plan().donors.size(), std::size_t(2));
        QVERIFY(!plan->report().hasErrors());
        QCOMPARE(findings->count(), 1);
        QVERIFY2(findings->item(0)->text().contains(QStringLiteral("20 tensors converted from F16 to F32")),
                 qPrintable(findings->item(0)->text()));
        findings->setCurrentRow(0);
        QCOMPARE(recipient->anatomyView()->currentIndex().data().toString(),
                 QStringLiteral("blk.0.attn_q.weight"));
        QTRY_COMPARE(to->preview().size(), std::size_t(29));
        saveScreenshot(&window, QStringLiteral("surgery-two-donors.png"));
        plan->undoStack()->undo();
        window.pane(app::MainWindow::Side::Donor)
            ->closeView(window.pane(app::MainWindow::Side::Donor)->tabs()->indexOf(f16));
        QCOMPARE(plan->plan().donors.size(), std::size_t(1));

        // The preview: 9 outlined cells with the healthy model's θ; θ mean before → after.
        QCOMPARE(to->preview().size(), std::size_t(9));
        const widgets::ThetaHeatmap* healthyMap = donor->heatmap();
        for (int layer = 1; layer <= 3; ++layer) {
            for (int r = 7; r <= 9; ++r) {
                QCOMPARE(to->shownThetaAt(layer + 1, r), healthyMap->thetaAt(layer + 1, r));
                QVERIFY(*to->shownThetaAt(layer + 1, r) > *to->thetaAt(layer + 1, r));
            }
        }
        QCOMPARE(to->shownThetaAt(1, 8), to->thetaAt(1, 8)); // layer 0 stays
        QVERIFY2(recipient->planPreviewLabel()->text().contains(QStringLiteral("θ mean 34.78° → 36.65°")),
                 qPrintable(recipient->planPreviewLabel()->text()));
        QTest::qWait(100);
        saveScreenshot(&window, QStringLiteral("surgery-preview.png"));

        // Save the plan; `organ assemble --plan` runs it. A plan made by `organ graft` opens
        // here and makes the same chimera.
        const QString planPath = m_dir.filePath(QStringLiteral("healing-plan.json"));
        QString error;
        QVERIFY2(window.savePlan(planPath, &error), qPrintable(error));
        QVERIFY(!plan->isModified());
        const QString cliPlan = m_dir.filePath(QStringLiteral("cli-plan.json"));
        QProcess graft;
        graft.start(cli, {QStringLiteral("graft"), QStringLiteral("--base"), damagedPath,
                          QStringLiteral("--donor"), healthyPath, QStringLiteral("--layers"),
                          QStringLiteral("1-3"), QStringLiteral("--system"), QStringLiteral("organ"),
                          QStringLiteral("-o"), m_dir.filePath(QStringLiteral("cli-chimera.gguf")),
                          QStringLiteral("--save-plan"), cliPlan});
        QVERIFY(graft.waitForFinished(60000));
        QVERIFY2(graft.exitCode() == 0, graft.readAllStandardError().constData());
        model::GraftDocument fromCli;
        fromCli.addModel(recipient->snapshotPointer());
        fromCli.addModel(donor->snapshotPointer());
        fromCli.load(cliPlan);
        auto layoutOf = [](const model::GraftDocument& d) {
            std::vector<std::pair<std::string, std::string>> out;
            for (const ChimeraTensor& t : d.report().layout.tensors) {
                const std::string* path = d.plan().donorPath(t.model);
                out.emplace_back(t.name, (path ? *path : d.plan().base) + ":" + t.sourceName);
            }
            return out;
        };
        QCOMPARE(layoutOf(fromCli), layoutOf(*plan));

        // Assemble on the engine thread; the window answers while it runs.
        const QString output = m_dir.filePath(QStringLiteral("healed.gguf"));
        QSignalSpy ended(&window, &app::MainWindow::assemblyEnded);
        QVERIFY2(window.startAssembly(output, &error), qPrintable(error));
        QVERIFY(window.assemblyDialog() != nullptr && window.assemblyDialog()->isVisible());
        QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 60000);
        QCOMPARE(ended.at(0).at(0).toBool(), true);
        QVERIFY(window.assemblyDialog() == nullptr);
        // The bytes, as the engine test checks them: the 9 organs are the healthy model's,
        // every other tensor the damaged one's.
        const auto healed = GgufModel::open(output.toStdString());
        const auto healthy = GgufModel::open(healthyPath.toStdString());
        const auto damaged = GgufModel::open(damagedPath.toStdString());
        int fromDonor = 0;
        for (const TensorInfo& t : healed->tensors()) {
            const bool organ = t.name.find("ffn_") != std::string::npos &&
                               t.name.find("norm") == std::string::npos &&
                               (t.name.starts_with("blk.1.") || t.name.starts_with("blk.2.") ||
                                t.name.starts_with("blk.3."));
            const GgufModel& source = organ ? *healthy : *damaged;
            const auto expected = source.tensorData(*source.findTensor(t.name));
            const auto actual = healed->tensorData(t);
            QVERIFY(std::equal(actual.begin(), actual.end(), expected.begin(), expected.end()));
            fromDonor += organ;
        }
        QCOMPARE(fromDonor, 9);
        QCOMPARE(healed->tensors().size(), damaged->tensors().size());
        // The CLI running the window's plan writes the same bytes.
        QProcess assemble;
        const QString cliOutput = m_dir.filePath(QStringLiteral("healed-by-cli.gguf"));
        assemble.start(cli, {QStringLiteral("assemble"), QStringLiteral("--plan"), planPath,
                             QStringLiteral("-o"), cliOutput});
        QVERIFY(assemble.waitForFinished(60000));
        QVERIFY2(assemble.exitCode() == 0, assemble.readAllStandardError().constData());
        QCOMPARE(readAll(cliOutput), readAll(output));

        // The result offers to open the chimera: it opens and is measured for real.
        QMessageBox* result = nullptr;
        QTRY_VERIFY((result = window.findChild<QMessageBox*>(QStringLiteral("assemblyResult"))) != nullptr);
        QVERIFY(result->text().contains(QStringLiteral("Validation: passed")));
        saveScreenshot(result, QStringLiteral("surgery-assembled.png"));
        result->findChild<QPushButton*>(QStringLiteral("openChimeraDonor"))->click();
        widgets::ModelView* chimera = window.findView(QFileInfo(output).absoluteFilePath());
        QVERIFY(chimera != nullptr && !chimera->isRecipient());
        QTRY_VERIFY_WITH_TIMEOUT(chimera->measurement() != nullptr, 20000);
        QCOMPARE(chimera->heatmap()->thetaAt(3, 8), healthyMap->thetaAt(3, 8));

        // Cancel: with the engine thread busy, the assembly is cancelled from its dialog
        // before it writes: a clear message and no file.
        QSemaphore hold;
        QMetaObject::invokeMethod(window.engine()->worker(), [&hold] { hold.acquire(); });
        const QString cancelled = m_dir.filePath(QStringLiteral("cancelled.gguf"));
        QSignalSpy ended2(&window, &app::MainWindow::assemblyEnded);
        QVERIFY2(window.startAssembly(cancelled, &error), qPrintable(error));
        QVERIFY(!window.startAssembly(cancelled, &error));           // one at a time
        window.assemblyDialog()->findChild<QPushButton*>()->click(); // its Cancel button
        hold.release();
        QTRY_COMPARE_WITH_TIMEOUT(ended2.count(), 1, 20000);
        QCOMPARE(ended2.at(0).at(0).toBool(), false);
        QVERIFY(window.statusBar()->currentMessage().contains(QStringLiteral("no file was written")));
        QVERIFY(!QFileInfo::exists(cancelled));
        QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("*.partial*")}).size(), 0);

        // Guard rails: closing the donor the plan uses asks; Cancel keeps it, Yes removes its
        // operations. Quitting with an unsaved plan asks too.
        widgets::ModelPane* donors = window.pane(app::MainWindow::Side::Donor);
        const int donorTab = donors->tabs()->indexOf(donor);
        QString question;
        answerNextQuestion(QMessageBox::Cancel, &question);
        donors->closeView(donorTab);
        QVERIFY2(question.contains(QStringLiteral("The graft plan uses stories260K-f32.gguf")),
                 qPrintable(question));
        QCOMPARE(donors->tabs()->indexOf(donor), donorTab);
        QVERIFY(!plan->isEmpty());
        answerNextQuestion(QMessageBox::Yes);
        donors->closeView(donorTab);
        QTRY_COMPARE(donors->tabs()->indexOf(donor), -1);
        QVERIFY(plan->isEmpty());
        plan->undoStack()->undo(); // the operations come back, unchecked while the donor is closed
        QVERIFY(!plan->isEmpty());
        QVERIFY(plan->unavailable().contains(QStringLiteral("stories260K-f32.gguf is not open")));
        QVERIFY(!plan->isModified()); // back at the saved state
        plan->duplicateLayer(QString::fromStdString(recipient->snapshot().model->path()), 0);
        QVERIFY(plan->isModified());
        answerNextQuestion(QMessageBox::Cancel, &question);
        QVERIFY(!window.close());
        QVERIFY(question.contains(QStringLiteral("unsaved changes")));
        QVERIFY(window.isVisible());
        answerNextQuestion(QMessageBox::Discard);
        QVERIFY(window.close());
    }

    // Selecting a tensor shows it in the inspector: indicators, histogram, spectrum, matrix.
    void inspector() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        app::MainWindow window;
        window.resize(1300, 850);
        window.show();
        QSignalSpy finished(window.engine(), &app::EngineThread::finished);
        QSignalSpy portraits(window.engine(), &app::EngineThread::portraitReady);
        QCOMPARE(window.openFiles({path}), 1);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
        widgets::ModelView* view = window.currentView();
        const auto& tensors = view->snapshot().model->tensors();
        const int down = int(view->snapshot().model->findTensor("blk.2.ffn_down.weight") - tensors.data());
        view->selectTensor(down);
        widgets::TensorInspector* inspector = view->inspector();
        QCOMPARE(inspector->tensor(), down);
        QTRY_COMPARE_WITH_TIMEOUT(portraits.count(), 1, 20000);
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
        inspector->logScale()->setChecked(true);
        QCOMPARE(inspector->histogramPlot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
        view->tabs()->setCurrentWidget(inspector);
        saveScreenshot(&window, QStringLiteral("main-window-inspector.png"));
    }

    // Δθ: with the healthy model as recipient and the damaged one as donor, the nine
    // replaced organs are negative and every other tensor is exactly 0; swapping flips it.
    void comparison() {
        const QString healthyPath = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        const QString damagedPath = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        ORGAN_REQUIRE_SHARED(healthyPath);
        ORGAN_REQUIRE_SHARED(damagedPath);
        using Side = app::MainWindow::Side;
        app::MainWindow window;
        window.resize(1500, 850);
        window.show();
        QSignalSpy finished(window.engine(), &app::EngineThread::finished);
        window.openFiles({healthyPath});
        window.openFiles({damagedPath}, Side::Donor);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 20000);
        widgets::ModelView* healthy = window.currentView();
        QTRY_VERIFY(healthy->comparison() != nullptr);
        widgets::ThetaHeatmap* delta = healthy->comparison();
        int negative = 0;
        int zero = 0;
        for (int column = 0; column < delta->columnCount(); ++column) {
            for (int row = 0; row < delta->rowCount(); ++row) {
                if (const auto d = delta->deltaAt(column, row)) {
                    negative += *d < 0;
                    zero += *d == 0.0;
                }
            }
        }
        QCOMPARE(negative, 9);
        QCOMPARE(zero, 48 - 9);
        QVERIFY(*delta->deltaAt(2, 8) < 0.0); // layer 1, ffn_up
        healthy->tabs()->setCurrentIndex(2);
        QCOMPARE(healthy->tabs()->tabText(2), QStringLiteral("&Δθ"));
        saveScreenshot(&window, QStringLiteral("main-window-delta.png"));
        window.swapPanes();
        widgets::ModelView* damaged = window.currentView();
        QVERIFY(healthy->comparison() == nullptr);
        QTRY_VERIFY(damaged->comparison() != nullptr);
        QVERIFY(*damaged->comparison()->deltaAt(2, 8) > 0.0);
        window.pane(Side::Donor)->closeView(0);
        QVERIFY(damaged->comparison() == nullptr);
    }

    void cancelMeasurement() {
        const QString path = sharedModel(QStringLiteral("quant/wide-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        app::MainWindow window;
        window.show();
        QSignalSpy cancelled(window.engine(), &app::EngineThread::cancelled);
        QSignalSpy finished(window.engine(), &app::EngineThread::finished);
        window.openFiles({path});
        window.engine()->cancel();
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 20000);
        QCOMPARE(finished.count(), 0);
        QVERIFY(window.currentView()->measurement() == nullptr);
        QCOMPARE(window.statusBar()->currentMessage(), QStringLiteral("Measurement cancelled"));
        QVERIFY(!window.engine()->isBusy());
    }

    // Two panes: the recipient on the left, donors on the right; each opens files dropped
    // on it; the two swap.
    void recipientAndDonorPanes() {
        QString error;
        QTemporaryDir dir;
        const QStringList demos = app::writeDemoModels(dir.path(), &error);
        QCOMPARE(demos.size(), 2);
        app::MainWindow window;
        window.resize(1500, 850);
        window.show();
        using Side = app::MainWindow::Side;
        QCOMPARE(window.openFiles({demos[0]}), 1);
        QCOMPARE(window.openFiles({demos[1]}, Side::Donor), 1);
        QCOMPARE(window.pane(Side::Recipient)->tabs()->count(), 1);
        QCOMPARE(window.pane(Side::Donor)->tabs()->count(), 1);
        QCOMPARE(window.windowTitle(),
                 QStringLiteral("specimen-recipient ← specimen-donor — Organ Workbench"));
        // A drop on the donor pane opens there.
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(demos[0])});
        widgets::ModelPane* donors = window.pane(Side::Donor);
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(donors, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(donors, &drop);
        QCOMPARE(donors->tabs()->count(), 2);
        QCOMPARE(window.pane(Side::Recipient)->tabs()->count(), 1);
        QSignalSpy finished(window.engine(), &app::EngineThread::finished);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 20000);
        donors->tabs()->setCurrentIndex(0);
        window.currentView()->tabs()->setCurrentIndex(1);
        donors->currentView()->tabs()->setCurrentIndex(1);
        for (widgets::ModelView* view : {window.currentView(), donors->currentView()}) {
            QTRY_COMPARE(view->systemCharts()->layerPlot()->graph(int(System::Organ))->dataCount(), 4);
        }
        saveScreenshot(&window, QStringLiteral("main-window-panes.png"));
        // Swap: the donors become recipients and the other way round.
        widgets::ModelView* recipient = window.currentView();
        window.swapPanes();
        QCOMPARE(window.pane(Side::Recipient)->tabs()->count(), 2);
        QCOMPARE(donors->tabs()->count(), 1);
        QCOMPARE(donors->currentView(), recipient);
        QVERIFY(window.windowTitle().endsWith(QStringLiteral("← specimen-recipient — Organ Workbench")));
        // Closing every model shows what to do again.
        window.pane(Side::Recipient)->closeView(0);
        window.pane(Side::Recipient)->closeView(0);
        donors->closeView(0);
        QCOMPARE(window.windowTitle(), QStringLiteral("Organ Workbench"));
    }

    void badFileShowsError() {
        const QString bad = m_dir.filePath(QStringLiteral("broken.gguf"));
        QVERIFY(
            writeAll(bad, QByteArray("GGUF\x02\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff\0\0\0\0\0\0\0\0", 24)));
        app::MainWindow window;
        window.show();
        QCOMPARE(window.openFiles({bad}), 0);
        QCOMPARE(window.documents()->count(), 0);
        QMessageBox* box = errorDialog();
        QVERIFY(box != nullptr);
        QVERIFY2(
            box->text().startsWith(QStringLiteral(
                "broken.gguf: tensor count at byte 8: 18 446 744 073 709 551 615 tensor infos cannot fit")),
            qPrintable(box->text()));
        saveScreenshot(box, QStringLiteral("main-window-error.png"));
        box->accept();
    }

    void dropOpensFiles() {
        QString error;
        const QStringList demos = app::writeDemoModels(m_dir.path(), &error);
        QCOMPARE(demos.size(), 2);
        app::MainWindow window;
        window.show();
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(demos[0]), QUrl::fromLocalFile(demos[1])});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&window, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&window, &drop);
        QCOMPARE(window.documents()->count(), 2);
        QCOMPARE(window.documents()->tabText(0), QStringLiteral("specimen-recipient"));
        QCOMPARE(window.documents()->tabText(1), QStringLiteral("specimen-donor"));
        window.currentView()->metadataView()->resizeColumnsToContents();
        saveScreenshot(&window, QStringLiteral("main-window-dropped.png"));
        window.closeCurrent();
        QTRY_COMPARE(window.documents()->count(), 1);
    }
};

QTEST_MAIN(TestMainWindow)
#include "tst_main_window.moc"
