// The window at 1280 × 800 (and, in the HiDPI run, at scale 2): no page grows the window and
// every label, button, chart title, legend and named axis can be read — on both panes, before
// and after vital signs (with five models to compare), with a plan and its check, and in the
// fleet window.
#include "fleet_controller.h"
#include "fleet_view.h"
#include "graft_document.h"
#include "graft_plan_panel.h"
#include "job_ends.h"
#include "layout_audit.h"
#include "main_window.h"
#include "model_pane.h"
#include "model_view.h"
#include "shared_models.h"
#include "surgery_controller.h"
#include "theta_heatmap.h"
#include "vitals_page.h"
#include "window_test_support.h"
#include "worker_wait.h"

#include <QDockWidget>
#include <QFontMetrics>
#include <QListWidget>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>

using namespace organ;
using namespace organ::testing;

namespace {

const QSize kLaptop(1280, 800);

} // namespace

class TestWindowLayout : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    // Shows every page of every open model; each must leave the window as it was and readable.
    static void checkEveryPage(app::MainWindow& window, const QString& when) {
        using Page = widgets::ModelView::Page;
        for (const auto side : {app::MainWindow::Side::Recipient, app::MainWindow::Side::Donor}) {
            widgets::ModelPane* pane = window.pane(side);
            for (widgets::ModelView* view : pane->views()) {
                pane->tabs()->setCurrentWidget(view);
                for (const Page page : {Page::Anatomy, Page::Heatmap, Page::Delta, Page::Inspector,
                                        Page::Metadata, Page::Tokenizer, Page::Vitals, Page::Quantization}) {
                    view->showPage(page);
                    settleAsShown();
                    const QString where =
                        QStringLiteral("%1, %2, page %3")
                            .arg(when, view->objectName().isEmpty()
                                           ? pane->tabs()->tabText(pane->tabs()->indexOf(view))
                                           : view->objectName())
                            .arg(int(page));
                    QVERIFY2(window.size() == kLaptop, qPrintable(QStringLiteral("%1: the window is %2 × %3")
                                                                      .arg(where)
                                                                      .arg(window.width())
                                                                      .arg(window.height())));
                    const QStringList problems = unreadableTexts(&window);
                    if (!problems.isEmpty()) {
                        saveScreenshot(&window, QStringLiteral("layout-failure.png"));
                    }
                    QVERIFY2(problems.isEmpty(), qPrintable(where + QStringLiteral(":\n  ") +
                                                            problems.join(QStringLiteral("\n  "))));
                }
            }
        }
    }

    static void takeVitals(app::MainWindow& window, widgets::ModelView* view) {
        JobEnds ready(window.jobs(), "vitals");
        view->showPage(widgets::ModelView::Page::Vitals);
        QTest::mouseClick(view->vitalsPage()->takeButton(), Qt::LeftButton);
        QVERIFY(waitForJobs(ready, 1, 60000));
    }

private slots:
    void initTestCase() { initWindowTests(m_dir); }

    void panesStayReadable() {
        const QString damaged = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        const QString healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(damaged);
        ORGAN_REQUIRE_SHARED(healthy);
        app::MainWindow window;
        window.resize(kLaptop);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        JobEnds measured(window.jobs(), "measure");
        QCOMPARE(window.openFiles({damaged}), 1);
        QCOMPARE(window.openFiles({healthy}, app::MainWindow::Side::Donor), 1);
        QVERIFY(waitForJobs(measured, 2, 30000));
        checkEveryPage(window, QStringLiteral("measured"));
        if (QTest::currentTestFailed()) {
            return;
        }
        // The heatmap keeps a line for each role's name: a shorter pane scrolls (at 1024 × 680 the
        // names ran into each other).
        const widgets::ThetaHeatmap* map = window.currentView()->heatmap();
        const int line = QFontMetrics(map->plot()->yAxis->tickLabelFont()).lineSpacing();
        QVERIFY2(map->plot()->minimumHeight() >= int(map->roles().size()) * line + 100,
                 qPrintable(QStringLiteral("%1 px at the least for %2 roles")
                                .arg(map->plot()->minimumHeight())
                                .arg(map->roles().size())));

        // The donor's vital signs: "plans are made on the recipient" under its suggestion.
        takeVitals(window, window.pane(app::MainWindow::Side::Donor)->currentView());
        if (QTest::currentTestFailed()) {
            return;
        }
        checkEveryPage(window, QStringLiteral("donor's vital signs"));
        if (QTest::currentTestFailed()) {
            return;
        }
        saveScreenshot(&window, QStringLiteral("layout-donor-vitals.png"));

        // Five models to compare the recipient with.
        QStringList more;
        for (const char* name : {"stories260K-f16.gguf", "stories260K-bf16.gguf", "stories260K-q8_0.gguf",
                                 "stories260K-q4_0.gguf"}) {
            more << sharedModel(QString::fromUtf8(name));
        }
        QCOMPARE(window.openFiles(more, app::MainWindow::Side::Donor), 4);
        QVERIFY(waitForJobs(measured, 6, 60000));
        widgets::ModelView* recipient = window.currentView();
        takeVitals(window, recipient);
        if (QTest::currentTestFailed()) {
            return;
        }
        QCOMPARE(recipient->vitalsPage()->report()->parents.size(), std::size_t(5));
        checkEveryPage(window, QStringLiteral("five comparisons"));
        if (QTest::currentTestFailed()) {
            return;
        }
        recipient->showPage(widgets::ModelView::Page::Vitals);
        settleAsShown();
        saveScreenshot(&window, QStringLiteral("layout-recipient-vitals.png"));

        // A plan (the healing graft of layer 1's organs), its preview and its check.
        auto* donor = window.pane(app::MainWindow::Side::Donor)->views().front();
        window.pane(app::MainWindow::Side::Donor)->tabs()->setCurrentWidget(donor);
        model::TensorDrag drag;
        drag.model = QString::fromStdString(donor->snapshot().model->path());
        drag.pick = model::TensorDrag::Pick::Tensors;
        for (const char* name : {"blk.1.ffn_gate.weight", "blk.1.ffn_up.weight", "blk.1.ffn_down.weight"}) {
            drag.tensors.push_back(tensorOf(donor, name));
        }
        QVERIFY(window.surgery()->document()->dropTensors(
            drag, QString::fromStdString(recipient->snapshot().model->path()), DropTarget{}));
        QTableView* operations = window.surgery()->panel()->operationsView();
        settleAsShown();
        const int rowsBeforeCheck = operations->viewport()->height();
        QVERIFY(rowsBeforeCheck >= 3 * operations->rowHeight(0));
        JobEnds checked(window.jobs(), "vitals");
        window.surgery()->panel()->findChild<QToolButton*>(QStringLiteral("plan-checkchimera"))->click();
        QVERIFY(waitForJobs(checked, 1, 60000));
        checkEveryPage(window, QStringLiteral("a checked plan"));
        if (QTest::currentTestFailed()) {
            return;
        }
        // The check's result sits beside the operations: they keep their rows.
        QVERIFY(window.surgery()->panel()->vitalsLabel()->isVisible());
        QCOMPARE(operations->viewport()->height(), rowsBeforeCheck);
        // Over the findings, it takes most of the side; the findings keep two lines.
        const auto* checkArea =
            window.surgery()->panel()->findChild<QScrollArea*>(QStringLiteral("chimeraVitalsArea"));
        const auto* findings =
            window.surgery()->panel()->findChild<QListWidget*>(QStringLiteral("planFindings"));
        QVERIFY(checkArea != nullptr && findings != nullptr);
        QVERIFY2(checkArea->height() >= 2 * findings->height(),
                 qPrintable(QStringLiteral("%1 over %2").arg(checkArea->height()).arg(findings->height())));
        QVERIFY(findings->height() >= 2 * findings->fontMetrics().lineSpacing());
        // The header's two lines in one font; the sample says what it is.
        QVERIFY(!recipient->headerText().contains(QStringLiteral("<small>")));
        QVERIFY2(recipient->vitalsPage()->summaryText().contains(
                     QStringLiteral("<b>Sample</b> (after the prompt in italics, the model's own words)")),
                 qPrintable(recipient->vitalsPage()->summaryText()));
        if (QTest::currentTestFailed()) {
            return;
        }
        recipient->showPage(widgets::ModelView::Page::Heatmap);
        settleAsShown();
        saveScreenshot(&window, QStringLiteral("layout-plan-heatmap.png"));
        // The window made as short as it goes and tall again: the plan's dock gets its height back
        // (QMainWindow gives it all to the models), so the check is not left clipped to a few lines.
        const QSize size = window.size();
        const int checkHeight = checkArea->height();
        window.resize(size.width() - 300, 400);
        settleAsShown();
        QVERIFY(checkArea->height() < checkHeight);
        window.resize(size);
        settleAsShown();
        QCOMPARE(checkArea->height(), checkHeight);
        // A height the user gives the dock is the one it comes back to.
        QDockWidget* dock = window.surgery()->planDock();
        const int chosen = dock->height() + 100;
        window.resizeDocks({dock}, {chosen}, Qt::Vertical);
        settleAsShown();
        QCOMPARE(dock->height(), chosen);
        window.resize(size.width(), 400);
        settleAsShown();
        window.resize(size);
        settleAsShown();
        QCOMPARE(dock->height(), chosen);
    }

    void fleetStaysReadable() {
        const QString models = sharedModel(QString());
        ORGAN_REQUIRE_SHARED(models);
        app::MainWindow window;
        window.resize(kLaptop);
        window.show();
        QSignalSpy ended(window.fleet(), &app::FleetController::fleetEnded);
        QString error;
        QVERIFY2(window.fleet()->startFleet({models}, &error), qPrintable(error));
        QVERIFY(ended.wait(180000));
        widgets::FleetView* fleet = window.fleet()->lastView();
        QVERIFY(fleet != nullptr);
        QWidget* fleetWindow = fleet->window();
        QVERIFY(QTest::qWaitForWindowExposed(fleetWindow));
        fleet->table()->selectAll();
        // As it opens, on a laptop's screen, and as small as it lets itself be made.
        for (const QSize asked : {fleetWindow->size(), kLaptop, QSize(1, 1)}) {
            fleetWindow->resize(asked);
            settleAsShown();
            const QSize size = asked.expandedTo(fleetWindow->minimumSize());
            QTRY_COMPARE(fleetWindow->size(), size);
            settleAsShown();
            const QStringList problems = unreadableTexts(fleetWindow);
            QVERIFY2(problems.isEmpty(),
                     qPrintable(QStringLiteral("%1 × %2:\n  ").arg(size.width()).arg(size.height()) +
                                problems.join(QStringLiteral("\n  "))));
            saveScreenshot(fleetWindow, QStringLiteral("layout-fleet-%1.png").arg(size.width()));
        }
    }
};

QTEST_MAIN(TestWindowLayout)
#include "tst_window_layout.moc"
