// Exports: charts as PNG, SVG and PDF, the measurement and the tree's tensors as JSON, CSV and
// Markdown.
#include "anatomy_filter_proxy.h"
#include "anatomy_tree_model.h"
#include "chart_export.h"
#include "demo_models.h"
#include "fixtures.h"
#include "graft_document.h"
#include "graft_plan_panel.h"
#include "job_ends.h"
#include "main_window.h"
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
#include <QContextMenuEvent>
#include <QDragEnterEvent>
#include <QFileDialog>
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
#include <QSpinBox>
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

class TestWindowExport : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    // A written chart, opened again: the PNG at its size with more than a few colours, the
    // SVG parsed to its end with its title, the PDF's magic.
    static void checkChartFile(const QString& path, QSize size, const QString& title) {
        QVERIFY2(QFileInfo::exists(path), qPrintable(path));
        if (path.endsWith(QStringLiteral(".png"))) {
            const QImage image(path);
            QCOMPARE(image.size(), size);
            QSet<QRgb> colours;
            for (int y = 0; y < image.height(); y += 3) {
                for (int x = 0; x < image.width(); x += 3) {
                    colours.insert(image.pixel(x, y));
                }
            }
            QVERIFY2(colours.size() > 8, qPrintable(path));
        } else if (path.endsWith(QStringLiteral(".svg"))) {
            const QByteArray svg = readAll(path);
            QXmlStreamReader xml(svg);
            int elements = 0;
            while (!xml.atEnd()) {
                elements += xml.readNext() == QXmlStreamReader::StartElement;
            }
            QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
            QVERIFY(elements > 20);
            QVERIFY2(svg.contains(title.toHtmlEscaped().toUtf8()), qPrintable(title));
        } else {
            QVERIFY(readAll(path).startsWith("%PDF"));
            QVERIFY(QFileInfo(path).size() > 1000);
        }
    }

private slots:
    void initTestCase() { initWindowTests(m_dir); }

    // Every chart of the window saves from its context menu in every format (this crashed:
    // the suggested names were string builders outliving their operands), with a title
    // naming the model, tensor or comparison.
    void chartsSaveFromTheirMenus_data() {
        QTest::addColumn<QString>("format");
        QTest::newRow("png") << QStringLiteral("png");
        QTest::newRow("svg") << QStringLiteral("svg");
        QTest::newRow("pdf") << QStringLiteral("pdf");
    }
    void chartsSaveFromTheirMenus() {
        QFETCH(QString, format);
        const QString healthyPath = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        const QString damagedPath = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        ORGAN_REQUIRE_SHARED(healthyPath);
        ORGAN_REQUIRE_SHARED(damagedPath);
        app::MainWindow window;
        window.resize(1400, 850);
        window.show();
        JobEnds finished(window.jobs(), "measure");
        JobEnds portraits(window.jobs(), "portrait");
        QCOMPARE(window.openFiles({healthyPath}), 1);
        QCOMPARE(window.openFiles({damagedPath}, app::MainWindow::Side::Donor), 1);
        QVERIFY(waitForJobs(finished, 2, 20000));
        widgets::ModelView* view = window.currentView();
        QTRY_VERIFY(view->hasComparison());
        view->selectTensor(tensorOf(view, "blk.1.ffn_up.weight"));
        QVERIFY(waitForJobs(portraits, 1, 20000));
        const std::pair<QCustomPlot*, QString> charts[] = {
            {view->heatmap()->plot(), QStringLiteral("stories260K-f32 — θ per layer and role")},
            {view->comparison()->plot(), QStringLiteral("Δθ stories260K-damaged-f32 − stories260K-f32")},
            {view->systemCharts()->layerPlot(), QStringLiteral("stories260K-f32 — θ mean per layer")},
            {view->systemCharts()->systemPlot(), QStringLiteral("stories260K-f32 — θ mean per system")},
            {view->inspector()->histogramPlot(),
             QStringLiteral("stories260K-f32 — blk.1.ffn_up.weight: values")},
            {view->inspector()->spectrumPlot(),
             QStringLiteral("stories260K-f32 — blk.1.ffn_up.weight: cross-scale spectrum")},
            {view->inspector()->imagePlot(),
             QStringLiteral("stories260K-f32 — blk.1.ffn_up.weight: the matrix")},
        };
        const QString folder = m_dir.filePath(QStringLiteral("menu-") + format);
        QVERIFY(QDir().mkpath(folder));
        int k = 0;
        for (const auto& [plot, title] : charts) {
            const QString path = folder + QStringLiteral("/chart-%1.").arg(k++) + format;
            const QSize size(640 + 10 * k, 420);
            saveChartThroughMenu(plot, path, size);
            checkChartFile(path, size, title);
            if (QTest::currentTestFailed()) {
                return;
            }
            if (format == QStringLiteral("png")) { // for a person to look at
                QDir().mkpath(QStringLiteral(ORGAN_SCREENSHOT_DIR));
                QFile::remove(QStringLiteral(ORGAN_SCREENSHOT_DIR "/export-%1.png").arg(k));
                QVERIFY(QFile::copy(path, QStringLiteral(ORGAN_SCREENSHOT_DIR "/export-%1.png").arg(k)));
            }
        }
        QCOMPARE(QDir(folder).entryList({QStringLiteral("*.partial*")}).size(), 0);
    }

    // What only the screen shows stays off the file: the clicked cell's red outline and the
    // selection's. The size dialog starts at the size chosen last, and the status bar says where
    // the chart went.
    void exportsLeaveScreenMarks() {
        const QString healthyPath = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(healthyPath);
        app::MainWindow window;
        window.resize(1280, 800);
        window.show();
        JobEnds finished(window.jobs(), "measure");
        QCOMPARE(window.openFiles({healthyPath}, app::MainWindow::Side::Donor), 1);
        QVERIFY(waitForJobs(finished, 1, 20000));
        widgets::ModelView* view = window.pane(app::MainWindow::Side::Donor)->currentView();
        view->showPage(widgets::ModelView::Page::Heatmap);
        widgets::ThetaHeatmap* heatmap = view->heatmap();
        settle(&window);
        QTest::mouseClick(heatmap->plot(), Qt::LeftButton, {},
                          heatmap->pixelOfTensor(tensorOf(view, "blk.2.ffn_up.weight")));
        QTest::mouseClick(heatmap->plot(), Qt::LeftButton, Qt::ControlModifier,
                          heatmap->pixelOfTensor(tensorOf(view, "blk.3.ffn_up.weight")));
        QCOMPARE(heatmap->selectedTensors().size(), std::size_t(2));
        view->selectTensor(tensorOf(view, "blk.0.attn_q.weight")); // the current tensor: outlined red
        const QColor selection = heatmap->palette().color(QPalette::Highlight);
        auto marked = [&](const QImage& image) {
            int red = 0;
            int selected = 0;
            for (int y = 0; y < image.height(); ++y) {
                for (int x = 0; x < image.width(); ++x) {
                    const QColor c = image.pixelColor(x, y);
                    red += c.red() > 200 && c.green() < 60 && c.blue() < 60;
                    selected += c == selection;
                }
            }
            return std::pair(red, selected);
        };
        // On the screen, both marks show.
        const auto shown = marked(heatmap->plot()->toPixmap(640, 420, 1.0).toImage());
        QVERIFY2(shown.first > 20 && shown.second > 20,
                 qPrintable(QStringLiteral("%1 %2").arg(shown.first).arg(shown.second)));
        const QString path = m_dir.filePath(QStringLiteral("marks.png"));
        saveChartThroughMenu(heatmap->plot(), path, QSize(640, 420));
        const auto saved = marked(QImage(path));
        QCOMPARE(saved, std::pair(0, 0));
        QVERIFY2(window.statusBar()->currentMessage().contains(path),
                 qPrintable(window.statusBar()->currentMessage()));
        // Still on the screen after the export.
        QCOMPARE(marked(heatmap->plot()->toPixmap(640, 420, 1.0).toImage()), shown);

        // The next chart's size dialog starts at 640 × 420.
        QSize offered;
        ModalSteps steps;
        steps
            .then([](QWidget* active) {
                return chooseMenuAction(active, QStringLiteral("Save as PNG, SVG or PDF"));
            })
            .then([&](QWidget* active) {
                auto* dialog = qobject_cast<QFileDialog*>(active);
                if (dialog == nullptr) {
                    return false;
                }
                // The folder, then the name typed (selectFile() leaves the name alone once the name
                // field has the focus, which it gets at a moment of its own).
                dialog->setDirectory(m_dir.path());
                dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"))
                    ->setText(QStringLiteral("second.png"));
                QMetaObject::invokeMethod(dialog, "accept", Qt::QueuedConnection);
                return true;
            })
            .then([&](QWidget* active) {
                if (active->objectName() != QStringLiteral("chartSizeDialog")) {
                    return false;
                }
                offered = QSize(active->findChild<QSpinBox*>(QStringLiteral("chartWidth"))->value(),
                                active->findChild<QSpinBox*>(QStringLiteral("chartHeight"))->value());
                qobject_cast<QDialog*>(active)->reject();
                return true;
            });
        QCustomPlot* other = view->systemCharts()->layerPlot();
        const QPoint at = other->rect().center();
        QContextMenuEvent menu(QContextMenuEvent::Mouse, at, other->mapToGlobal(at));
        QApplication::sendEvent(other, &menu);
        QTRY_VERIFY_WITH_TIMEOUT(steps.done(), 10000);
        QCOMPARE(offered, QSize(640, 420));
    }

    // Charts save as PNG, SVG and PDF at the size asked for; the measurement as JSON, CSV
    // and Markdown.
    void exports() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        app::MainWindow window;
        window.resize(1100, 700);
        window.show();
        QString error;
        JobEnds finished(window.jobs(), "measure");
        QCOMPARE(window.openFiles({path}), 1);
        QVERIFY(!window.exportMeasurement(m_dir.filePath(QStringLiteral("early.json")),
                                          &error)); // not measured yet
        QVERIFY(waitForJobs(finished, 1, 20000));
        QCustomPlot* plot = window.currentView()->heatmap()->plot();

        const QString png = m_dir.filePath(QStringLiteral("map.png"));
        QVERIFY2(widgets::exportChart(plot, png, QSize(800, 500), QString(), &error), qPrintable(error));
        QCOMPARE(QImage(png).size(), QSize(800, 500));
        const QString svg = m_dir.filePath(QStringLiteral("map.svg"));
        QVERIFY2(widgets::exportChart(plot, svg, QSize(640, 400), QStringLiteral("a title"), &error),
                 qPrintable(error));
        QXmlStreamReader xml(readAll(svg));
        QVERIFY(xml.readNextStartElement());
        QCOMPARE(xml.name(), QStringLiteral("svg"));
        QVERIFY(
            xml.attributes().value(QStringLiteral("viewBox")).toString().contains(QStringLiteral("640 400")));
        const QString pdf = m_dir.filePath(QStringLiteral("map.pdf"));
        QVERIFY2(widgets::exportChart(plot, pdf, QSize(600, 400), QString(), &error), qPrintable(error));
        QVERIFY(readAll(pdf).startsWith("%PDF"));
        QVERIFY(!widgets::exportChart(plot, m_dir.filePath(QStringLiteral("map.bmp")), QSize(600, 400),
                                      QString(), &error));
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
    }

    // Before any θ arrives the tree still exports its tensors, with no θ.
    void exportsUnmeasuredTree() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto snapshot = ModelSnapshot::of(openModel(path.toStdString()));
        const model::TensorResults unmeasured(snapshot->model->tensors().size());
        widgets::ModelView view(snapshot, &unmeasured);
        QString error;
        const QString csv = m_dir.filePath(QStringLiteral("unmeasured.csv"));
        QVERIFY2(widgets::writeMeasurementReport(view.shownTensorsReport(), csv, &error), qPrintable(error));
        const QStringList lines = QString::fromUtf8(readAll(csv)).split(u'\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 49);
        QVERIFY2(lines[1].startsWith(QStringLiteral("\"llama\",\"token_embd.weight\",embed,")),
                 qPrintable(lines[1]));
        QVERIFY2(lines[1].contains(QStringLiteral(",0,32768,,,,")), qPrintable(lines[1])); // n 0, N, no H/K/C
    }
};

QTEST_MAIN(TestWindowExport)
#include "tst_window_export.moc"
