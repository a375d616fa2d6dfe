// The window's panes: opening files (menu, command line, drops), measuring in the background,
// the recipient and donor panes, shortcuts, remembered layout, errors.
#include "anatomy_filter_proxy.h"
#include "anatomy_tree_model.h"
#include "chart_export.h"
#include "demo_models.h"
#include "fixtures.h"
#include "graft_document.h"
#include "graft_plan_panel.h"
#include "help_dialogs.h"
#include "hostile_models.h"
#include "job_ends.h"
#include "job_status.h"
#include "layout_audit.h"
#include "main_window.h"
#include "measure_controller.h"
#include "metadata_editing.h"
#include "model_pane.h"
#include "model_roles.h"
#include "model_view.h"
#include "quant_lab_page.h"
#include "report_export.h"
#include "shared_models.h"
#include "system_theta_charts.h"
#include "tensor_drag.h"
#include "tensor_inspector.h"
#include "theta_heatmap.h"
#include "vitals_page.h"
#include "window_test_support.h"
#include "worker_wait.h"
#include <QApplication>
#include <QCheckBox>
#include <QDialog>
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
#include <fstream>
#include <nlohmann/json.hpp>
#include <qcustomplot.h>

using namespace organ;
using namespace organ::testing;

class TestWindowPanes : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

private slots:
    void initTestCase() { initWindowTests(m_dir); }

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
        QVERIFY(view->headerText().contains(QStringLiteral("292.80&nbsp;K&nbsp;parameters")));
        QVERIFY(view->headerText().contains(QStringLiteral("5&nbsp;layers")));
        QAbstractItemModel* tree = view->anatomyView()->model();
        QCOMPARE(tree->rowCount(), 4);
        QVERIFY(view->anatomyView()->isExpanded(tree->index(0, 0)));
        QCOMPARE(view->metadataView()->model()->rowCount(), 19);
        // The filter opens the layers holding matches and counts them in each group; Enter
        // goes to the first match.
        QVERIFY(QTest::qWaitForWindowActive(&window));
        view->filterEdit()->setFocus();
        QTest::keyClicks(view->filterEdit(), QStringLiteral("ffn_up"));
        QCOMPARE(tree->rowCount(), 1);
        const QModelIndex organ = tree->index(0, 0);
        QCOMPARE(organ.siblingAtColumn(model::AnatomyTreeModel::Role).data().toString(),
                 QStringLiteral("5 of 15 tensors"));
        const QModelIndex layer2 = tree->index(2, 0, organ);
        QVERIFY(view->anatomyView()->isExpanded(layer2));
        QCOMPARE(layer2.siblingAtColumn(model::AnatomyTreeModel::Role).data().toString(),
                 QStringLiteral("1 of 3 tensors"));
        QCOMPARE(tree->index(0, 0, layer2).data().toString(), QStringLiteral("blk.2.ffn_up.weight"));
        view->anatomyView()->sortByColumn(model::AnatomyTreeModel::Theta, Qt::DescendingOrder);
        const QString first = view->anatomyProxy()->firstTensor().data().toString();
        QTest::keyClick(view->filterEdit(), Qt::Key_Return);
        QCOMPARE(QApplication::focusWidget(), static_cast<QWidget*>(view->anatomyView()));
        QCOMPARE(view->anatomyView()->currentIndex().data().toString(), first);
        QVERIFY(first.endsWith(QStringLiteral(".ffn_up.weight")));
        saveScreenshot(&window, QStringLiteral("main-window-filter.png"));
        view->anatomyView()->sortByColumn(-1, Qt::AscendingOrder);
        view->filterEdit()->clear();
        QVERIFY(!view->anatomyView()->isExpanded(tree->index(0, 0, tree->index(1, 0))));
        QCOMPARE(tree->index(1, 0).siblingAtColumn(model::AnatomyTreeModel::Role).data().toString(),
                 QStringLiteral("20 tensors"));
        // A hidden system counts as a filter too: the groups left are whole.
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
        JobEnds finished(window.jobs(), "measure");
        QSignalSpy perTensor(window.measurements(), &app::MeasureController::tensorApplied);
        QCOMPARE(window.openFiles({path}), 1);
        widgets::ModelView* view = window.currentView();
        QVERIFY(waitForJobs(finished, 1, 20000));
        QCOMPARE(perTensor.count(), 48);
        QVERIFY(view->measurement() != nullptr);
        QVERIFY2(view->headerText().contains(QStringLiteral("θ&nbsp;mean&nbsp;36.65°")),
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
        JobEnds cached(again.jobs(), "measure");
        QSignalSpy cachedPerTensor(again.measurements(), &app::MeasureController::tensorApplied);
        again.openFiles({path});
        QVERIFY(waitForJobs(cached, 1, 20000));
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

    // Keyboard: Ctrl+F goes to the filter, Ctrl+1…5 to the pages, in the focused pane (Δθ: the
    // recipient's).
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
        QTest::keyClick(&window, Qt::Key_5, Qt::ControlModifier);
        QCOMPARE(donor->tabs()->currentWidget(), static_cast<QWidget*>(donor->metadataPage()));
        QCOMPARE(recipient->tabs()->currentIndex(), 0);
        QTest::keyClick(&window, Qt::Key_6, Qt::ControlModifier);
        QCOMPARE(donor->tabs()->currentWidget(), static_cast<QWidget*>(donor->vitalsPage()));
        // Its mnemonic is S: Alt+V is the View menu's.
        QCOMPARE(donor->tabs()->tabText(donor->tabs()->indexOf(donor->vitalsPage())),
                 QStringLiteral("Vital &signs"));
        QTest::keyClick(&window, Qt::Key_7, Qt::ControlModifier);
        QCOMPARE(donor->tabs()->currentWidget(), static_cast<QWidget*>(donor->quantLabPage()));
        QTest::keyClick(&window, Qt::Key_5, Qt::ControlModifier);
        QTest::keyClick(&window, Qt::Key_4, Qt::ControlModifier);
        QCOMPARE(donor->tabs()->currentWidget(), static_cast<QWidget*>(donor->inspector()));
        // Ctrl+3, Δθ: on the recipient; before both are measured it says why it cannot show.
        QVERIFY(!recipient->hasComparison());
        QTest::keyClick(&window, Qt::Key_3, Qt::ControlModifier);
        QCOMPARE(recipient->tabs()->currentIndex(), 0);
        QVERIFY2(window.statusBar()->currentMessage().contains(QStringLiteral("once both")),
                 qPrintable(window.statusBar()->currentMessage()));
        QTRY_VERIFY_WITH_TIMEOUT(recipient->hasComparison(), 20000);
        QTest::keyClick(&window, Qt::Key_3, Qt::ControlModifier);
        QCOMPARE(recipient->tabs()->currentWidget()->findChild<widgets::ThetaHeatmap*>(),
                 recipient->comparison());
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
        QVERIFY(about.contains(QStringLiteral("organ help"))); // resources/texts/about.html
    }

    // resources/ is compiled in: the icon (drawn from its SVG), the guide and the texts.
    void resourcesCompiledIn() {
        app::MainWindow window;
        const QIcon icon = window.windowIcon();
        QVERIFY(!icon.isNull());
        const QImage drawn = icon.pixmap(64, 64).toImage();
        QCOMPARE(drawn.width(), int(64 * window.devicePixelRatioF()));
        // The icon's dark rounded square (from 8/128 of its size), outside its strokes; its
        // corner (2/128) is transparent.
        const QColor inside = drawn.pixelColor(drawn.width() * 20 / 128, drawn.height() * 20 / 128);
        QVERIFY2(inside.alpha() == 255 && inside.lightness() < 100, qPrintable(inside.name()));
        QCOMPARE(drawn.pixelColor(drawn.width() * 2 / 128, drawn.height() * 2 / 128).alpha(), 0);
        QVERIFY(app::resourceText(QStringLiteral(":/guide/user-guide.md")).startsWith(QStringLiteral("# ")));
        QVERIFY(app::aboutText().contains(QStringLiteral("Organ Workbench")));
        QVERIFY(app::resourceText(QStringLiteral(":/texts/none.html")).isEmpty());
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

    void cancelMeasurement() {
        const QString path = sharedModel(QStringLiteral("quant/wide-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        app::MainWindow window;
        window.show();
        JobEnds ended(window.jobs(), "measure");
        WorkerHold hold(window.jobs()); // the measurement waits, as behind a long job
        window.openFiles({path});
        // The status bar's Cancel stops the job it shows.
        QVERIFY(window.jobStatus()->isVisible());
        QVERIFY(window.jobStatus()->text().startsWith(QStringLiteral("Measuring")));
        settle(&window);
        saveScreenshot(&window, QStringLiteral("job-status.png"));
        window.jobStatus()->findChild<QPushButton*>()->click();
        hold.release();
        QVERIFY(waitForJobs(ended, 1, 20000));
        QCOMPARE(ended.count(JobState::Cancelled), 1);
        QVERIFY(window.currentView()->measurement() == nullptr);
        QCOMPARE(window.statusBar()->currentMessage(), QStringLiteral("Measurement cancelled"));
        QCOMPARE(window.jobs()->liveCount(), 0);
        QVERIFY(!window.jobStatus()->isVisible());
    }

    // Two panes: the recipient on the left, donors on the right; each opens files dropped
    // on it; the two swap. A file open in both panes is one open model, measured once: its
    // views read the same results, and closing one leaves the other's θ.
    void recipientAndDonorPanes() {
        QString error;
        QTemporaryDir dir;
        const QStringList demos = app::writeDemoModels(dir.path(), &error);
        QCOMPARE(demos.size(), 2);
        app::MainWindow window;
        window.resize(1500, 850);
        window.show();
        using Side = app::MainWindow::Side;
        QVERIFY(!window.pane(Side::Donor)->header()->isVisible());
        JobEnds finished(window.jobs(), "measure");
        QCOMPARE(window.openFiles({demos[0]}), 1);
        QVERIFY(!window.pane(Side::Donor)->header()->isVisible());
        QCOMPARE(window.openFiles({demos[1]}, Side::Donor), 1);
        QVERIFY(window.pane(Side::Donor)->header()->isVisible());
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
        QVERIFY(waitForJobs(finished, 2, 20000));
        QTest::qWait(200);
        QCOMPARE(finished.count(), 2); // demos[0] once, however many views show it
        widgets::ModelView* twin = donors->views().at(1);
        QCOMPARE(twin->results(), window.currentView()->results());
        QVERIFY(twin->measurement() != nullptr);
        QVERIFY2(twin->headerText().contains(QStringLiteral("θ&nbsp;mean")), qPrintable(twin->headerText()));
        donors->tabs()->setCurrentIndex(0);
        window.currentView()->tabs()->setCurrentIndex(1);
        donors->currentView()->tabs()->setCurrentIndex(1);
        for (widgets::ModelView* view : {window.currentView(), donors->currentView()}) {
            QTRY_COMPARE(view->systemCharts()->layerPlot()->graph(int(System::Organ))->dataCount(), 4);
        }
        // Two panes side by side make every chart narrow: what shows is readable as it is laid
        // out, without a replot of its own (names on an axis crowded after the pane narrowed
        // were drawn level, one over the next).
        settleAsShown();
        saveScreenshot(&window, QStringLiteral("main-window-panes.png"));
        QStringList problems = unreadableTexts(&window);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QStringLiteral("\n  "))));
        // And once the window is made narrower: each chart is replotted once, as it is resized.
        window.resize(1280, 800);
        settleAsShown();
        problems = unreadableTexts(&window);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QStringLiteral("\n  "))));
        window.resize(1500, 850);
        settleAsShown();
        // Each pane says which side it is (an empty one in large, on its page).
        QVERIFY(window.pane(Side::Recipient)->header()->isVisible());
        QVERIFY(
            window.pane(Side::Recipient)->header()->text().startsWith(QStringLiteral("<b>Recipient</b>")));
        QVERIFY(donors->header()->text().startsWith(QStringLiteral("<b>Donors</b>")));
        // Swap: the donors become recipients and the other way round, and the window says so.
        widgets::ModelView* recipient = window.currentView();
        window.swapPanes();
        QCOMPARE(
            window.statusBar()->currentMessage(),
            QStringLiteral("Swapped sides: the recipient pane now holds specimen-donor, specimen-recipient, "
                           "the donor pane specimen-recipient"));
        QCOMPARE(window.pane(Side::Recipient)->tabs()->count(), 2);
        QCOMPARE(donors->tabs()->count(), 1);
        QCOMPARE(donors->currentView(), recipient);
        QVERIFY(window.windowTitle().endsWith(QStringLiteral("← specimen-recipient — Organ Workbench")));
        // Closing every model shows what to do again; a model stays open (and measured) while a
        // view of it does.
        window.pane(Side::Recipient)->closeView(0);
        window.pane(Side::Recipient)->closeView(0);
        QCoreApplication::processEvents();
        QCOMPARE(donors->currentView(), recipient);
        QVERIFY(recipient->measurement() != nullptr);
        QVERIFY(recipient->results()->at(0).has_value());
        donors->closeView(0);
        QCOMPARE(window.windowTitle(), QStringLiteral("Organ Workbench"));
    }

    // F1 opens the user guide that ships with the program: written for users (the systems,
    // θ, the heatmap, grafting, the keys), not a developer page naming source files.
    void userGuide() {
        app::MainWindow window;
        window.resize(1000, 700);
        window.show();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QTest::keyClick(&window, Qt::Key_F1);
        auto* guide = window.findChild<QDialog*>(QStringLiteral("userGuide"));
        QVERIFY(guide != nullptr && guide->isVisible());
        const QString text = guide->findChild<QTextBrowser*>()->toPlainText();
        for (const char* heading :
             {"The anatomy of a model", "θ: how much structure a tensor carries", "Reading the heatmap",
              "Comparing two models: Δθ", "Grafting: making a chimera", "Keys"}) {
            QVERIFY2(text.contains(QString::fromUtf8(heading)), heading);
        }
        QVERIFY(text.contains(QStringLiteral("Ctrl+1 … Ctrl+7")));
        QVERIFY(
            text.contains(QStringLiteral("Quantization: what each type costs, and the best mix for a size")));
        QVERIFY(text.contains(QStringLiteral("Vital signs: does it live?")));
        QString withoutLlama = text;
        withoutLlama.remove(QStringLiteral("llama.cpp"));
        static const QRegularExpression sourceFile(
            QStringLiteral("\\b(engine|model|widgets|app)/|\\.(cpp|h)\\b"));
        QVERIFY2(!withoutLlama.contains(sourceFile), qPrintable(sourceFile.match(withoutLlama).captured()));
        saveScreenshot(guide, QStringLiteral("user-guide.png"));
        QTest::keyClick(&window, Qt::Key_F1); // a second F1 raises the same guide
        QCOMPARE(window.findChildren<QDialog*>(QStringLiteral("userGuide")).size(), 1);
        guide->close();
    }

    // organ-workbench --demo opens its two specimens, written to a folder deleted with the window:
    // they are not kept in Open Recent, while a file named beside them is. A recent file gone since
    // is not offered.
    void demoModelsAreNotRecent() {
        const QString program = qEnvironmentVariable("ORGAN_WORKBENCH");
        QVERIFY2(QFileInfo(program).isExecutable(), "ORGAN_WORKBENCH names the organ-workbench binary");
        QTemporaryDir config;
        QTemporaryDir models;
        QString error;
        const QStringList mine = app::writeDemoModels(models.path(), &error);
        QCOMPARE(mine.size(), 2);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), config.path());
        env.insert(QStringLiteral("XDG_DATA_HOME"), config.filePath(QStringLiteral("data")));
        env.insert(QStringLiteral("ORGAN_CACHE_DIR"), config.filePath(QStringLiteral("cache")));
        QProcess run;
        run.setProcessEnvironment(env);
        run.start(program, {QStringLiteral("--demo"), mine[1]});
        QVERIFY(run.waitForStarted());
        const QString conf = config.filePath(QStringLiteral("OrganWorkbench/organ-workbench.conf"));
        QStringList recent;
        QTRY_VERIFY_WITH_TIMEOUT(
            (recent =
                 QSettings(conf, QSettings::IniFormat).value(QStringLiteral("recentFiles")).toStringList())
                .contains(mine[1]),
            30000);
        QTest::qWait(500); // the demo's two were opened before it
        run.kill();
        run.waitForFinished();
        recent = QSettings(conf, QSettings::IniFormat).value(QStringLiteral("recentFiles")).toStringList();
        QCOMPARE(recent, QStringList{mine[1]});

        // In this process: a recent file deleted since is not in the menus.
        QSettings().setValue(QStringLiteral("recentFiles"),
                             QStringList{mine[0], models.filePath(QStringLiteral("gone.gguf"))});
        app::MainWindow window;
        QMenu* openRecent = window.findChild<QMenu*>(QStringLiteral("openRecent"));
        QVERIFY(openRecent != nullptr);
        QStringList offered;
        for (QAction* action : openRecent->actions()) {
            offered << action->toolTip();
        }
        QCOMPARE(offered, QStringList{mine[0]});
        QSettings().remove(QStringLiteral("recentFiles"));
    }

    // --help and --version answer on a machine with no display at all.
    void helpAndVersionWithoutADisplay() {
        const QString program = qEnvironmentVariable("ORGAN_WORKBENCH");
        QVERIFY2(QFileInfo(program).isExecutable(), "ORGAN_WORKBENCH names the organ-workbench binary");
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) {
            env.remove(QString::fromLatin1(name));
        }
        for (const QString& option : {QStringLiteral("--help"), QStringLiteral("--version")}) {
            QProcess run;
            run.setProcessEnvironment(env);
            run.start(program, {option});
            QVERIFY(run.waitForFinished(20000));
            QCOMPARE(run.exitStatus(), QProcess::NormalExit);
            QCOMPARE(run.exitCode(), 0);
            const QString out = QString::fromUtf8(run.readAllStandardOutput());
            if (option == QStringLiteral("--help")) {
                QVERIFY2(out.contains(QStringLiteral("Usage:")) && out.contains(QStringLiteral("--demo")),
                         qPrintable(out));
            } else {
                QVERIFY2(out.startsWith(QStringLiteral("organ-workbench ")), qPrintable(out));
            }
        }
    }

    // Names and values with control characters and invalid UTF-8 are shown escaped, visibly,
    // in the header, the tree, the metadata table and the heatmap's rows.
    void hostileNamesShowSafely() {
        const QString path = m_dir.filePath(QStringLiteral("hostile.gguf"));
        QVERIFY(writeFixture(path, hostileModelSpec(1)));
        app::MainWindow window;
        window.resize(1200, 800);
        window.show();
        QCOMPARE(window.openFiles({path}), 1);
        widgets::ModelView* view = window.currentView();
        QVERIFY2(view->headerText().contains(QStringLiteral("l\\xFF\\xFEa\\x1B]0;owned\\x07")),
                 qPrintable(view->headerText()));
        auto hasControl = [](const QString& text) {
            return std::any_of(text.begin(), text.end(),
                               [](QChar c) { return c.category() == QChar::Other_Control; });
        };
        const int evil = int(view->snapshot().model->findTensor(kHostileTensor) -
                             view->snapshot().model->tensors().data());
        const QString name = view->anatomyModel()->indexOfTensor(evil).data().toString();
        QCOMPARE(name, QStringLiteral("evil\\x1B[2J\\xFF.weight"));
        QAbstractItemModel* metadata = view->metadataView()->model();
        bool keyShown = false;
        for (int r = 0; r < metadata->rowCount(); ++r) {
            for (int c = 0; c < metadata->columnCount(); ++c) {
                QVERIFY(!hasControl(metadata->index(r, c).data().toString()));
            }
            keyShown |= metadata->index(r, 0).data().toString() == QStringLiteral("evil.key\\x1B[31m\\x9B");
        }
        QVERIFY(keyShown);
        view->anatomyView()->expandAll();
        saveScreenshot(&window, QStringLiteral("main-window-hostile.png"));
    }

    void badFileShowsError() {
        const QString bad = m_dir.filePath(QStringLiteral("broken.gguf"));
        QVERIFY(
            writeAll(bad, QByteArray("GGUF\x02\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff\0\0\0\0\0\0\0\0", 24)));
        app::MainWindow window;
        window.show();
        QCOMPARE(window.openFiles({bad}), 0);
        QCOMPARE(window.documents()->count(), 0);
        QMessageBox* box = visibleMessageBox();
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

QTEST_MAIN(TestWindowPanes)
#include "tst_window_panes.moc"
