// The fleet in the window: File → Open fleet… measures a folder of models on the engine thread
// (progress, Cancel) and opens a fleet window: the table sorts and filters, the scatter chart
// draws θ against parameters on a log axis with the scale law and names each point on hover,
// the bars show the selected models' systems, rows open into the panes, charts export.
#include "gguf/specimen.h"
#include "fixtures.h"
#include "fleet_controller.h"
#include "fleet_table_model.h"
#include "fleet_view.h"
#include "job_ends.h"
#include "job_status.h"
#include "main_window.h"
#include "model_pane.h"
#include "model_view.h"
#include "organs/organ_directory.h"
#include "window_test_support.h"

#include <QFileDialog>
#include <QHeaderView>
#include <QLineEdit>
#include <QMenu>
#include <QProgressDialog>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QToolTip>
#include <qcustomplot.h>

using namespace organ;
using namespace organ::testing;

class TestWindowFleet : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_fleet;
    std::unique_ptr<app::MainWindow> m_window;

    widgets::FleetView* openFleet(const QString& folder) {
        QSignalSpy ended(m_window->fleet(), &app::FleetController::fleetEnded);
        QString error;
        if (!m_window->fleet()->startFleet({folder}, &error)) {
            qWarning("%s", qPrintable(error));
            return nullptr;
        }
        if (!ended.wait(120000) || !ended.front().at(0).toBool()) {
            return nullptr;
        }
        return m_window->fleet()->lastView();
    }

    // The row of the table (in view order) whose file is `name`.
    static int rowOfFile(widgets::FleetView* view, const QString& name) {
        QAbstractItemModel* model = view->table()->model();
        for (int r = 0; r < model->rowCount(); ++r) {
            if (model->index(r, model::FleetTableModel::File).data().toString() == name) {
                return r;
            }
        }
        return -1;
    }

private slots:
    void initTestCase() {
        initWindowTests(m_dir);
        m_fleet = m_dir.filePath(QStringLiteral("fleet"));
        QVERIFY(QDir().mkpath(m_fleet + QStringLiteral("/nested")));
        SpecimenShape shape;
        int seed = 1;
        for (std::uint32_t blocks : {2u, 4u, 8u}) {
            shape.blocks = blocks;
            const QString path = m_fleet + QStringLiteral("/specimen-%1-blocks.gguf").arg(blocks);
            QVERIFY(writeSpecimen(path.toStdString(), seed++, shape).isOk());
        }
        SpecimenShape wide;
        wide.embedding = 128;
        wide.feedForward = 344;
        QVERIFY(writeSpecimen(QString(m_fleet + QStringLiteral("/nested/wide.gguf")).toStdString(), 7, wide)
                    .isOk());
        QCOMPARE(writeSplitFixture(m_fleet + QStringLiteral("/specimen-4-blocks.gguf"),
                                   m_fleet + QStringLiteral("/nested/split"), 3)
                     .size(),
                 3);
        const auto model =
            openModel(QString(m_fleet + QStringLiteral("/specimen-2-blocks.gguf")).toStdString());
        QVERIFY(extractOrgans(*model, QString(m_fleet + QStringLiteral("/organs")).toStdString()).isOk());
        QVERIFY(writeAll(m_fleet + QStringLiteral("/broken.gguf"), "GGUF but broken"));
    }

    void init() {
        m_window = std::make_unique<app::MainWindow>();
        m_window->resize(1400, 900);
        m_window->show();
    }
    void cleanup() { m_window.reset(); }

    void menuOffersTheFleet() {
        bool found = false;
        for (QAction* menu : m_window->menuBar()->actions()) {
            for (QAction* action : menu->menu() != nullptr ? menu->menu()->actions() : QList<QAction*>{}) {
                found = found || action->text() == QStringLiteral("Open &fleet…");
            }
        }
        QVERIFY(found);
    }

    void tableChartAndBars() {
        widgets::FleetView* view = openFleet(m_fleet);
        QVERIFY(view != nullptr);
        QWidget* window = view->window();
        QCOMPARE(window->objectName(), QStringLiteral("fleetWindow"));
        const FleetReport* report = view->findChild<model::FleetTableModel*>()->report();
        // 3 specimens, the wide one, the split set once, the organ directory, the broken file.
        QCOMPARE(report->rows.size(), std::size_t(7));
        QTableView* table = view->table();
        QCOMPARE(table->model()->rowCount(), 7);
        QCOMPARE(table->model()->index(0, model::FleetTableModel::Rank).data().toString(),
                 QStringLiteral("1"));
        const int broken = rowOfFile(view, QStringLiteral("broken.gguf"));
        QCOMPARE(broken, 6); // unranked last
        QVERIFY(table->model()
                    ->index(broken, model::FleetTableModel::Error)
                    .data()
                    .toString()
                    .contains(QStringLiteral("GGUF")));

        // Sorting by parameters: by the number, not its text.
        table->horizontalHeader()->setSortIndicator(model::FleetTableModel::Parameters, Qt::AscendingOrder);
        double last = -1;
        for (int r = 0; r < table->model()->rowCount(); ++r) {
            const QVariant v = table->model()
                                   ->index(r, model::FleetTableModel::Parameters)
                                   .data(model::FleetTableModel::kSortRole);
            if (v.isValid()) {
                QVERIFY(v.toDouble() >= last);
                last = v.toDouble();
            }
        }
        // Filtering.
        QTest::keyClicks(view->filter(), QStringLiteral("wide"));
        QCOMPARE(table->model()->rowCount(), 1);
        QCOMPARE(view->shownRows().size(), std::size_t(1));
        QVERIFY(!view->shownLaw().fitted);
        view->filter()->clear();
        QCOMPARE(table->model()->rowCount(), 7);

        // The scatter chart: a point per ranked model, the fleet's scale law.
        QCOMPARE(view->shownRows().size(), report->ranking().size());
        QVERIFY(view->shownLaw().fitted);
        QCOMPARE(view->shownLaw().slope, report->scaleLaw().slope);
        QCustomPlot* scatter = view->scatterPlot();
        QCOMPARE(scatter->xAxis->scaleType(), QCPAxis::stLogarithmic);
        settle(window);
        const FleetRow& first = report->rows[view->shownRows().front()];
        const QPoint pixel(int(scatter->xAxis->coordToPixel(double(first.parameters))),
                           int(scatter->yAxis->coordToPixel(*first.thetaMean)));
        QVERIFY2(view->pointLabelAt(pixel).contains(QString::fromStdString(first.name)),
                 qPrintable(view->pointLabelAt(pixel)));
        QVERIFY(view->pointLabelAt(QPoint(2, 2)).isEmpty());
        QMouseEvent move(QEvent::MouseMove, QPointF(pixel), QPointF(scatter->mapToGlobal(pixel)),
                         Qt::NoButton, Qt::NoButton, Qt::NoModifier);
        QApplication::sendEvent(scatter, &move);
        QTRY_VERIFY(QToolTip::text().contains(QString::fromStdString(first.name)));

        // Bars for the selected models.
        table->selectRow(0);
        QCOMPARE(view->barRows().size(), std::size_t(1));
        table->selectionModel()->select(table->model()->index(1, 0),
                                        QItemSelectionModel::Select | QItemSelectionModel::Rows);
        QCOMPARE(view->barRows().size(), std::size_t(2));
        QCOMPARE(view->systemPlot()->plottableCount(), 2);
        auto* bars = qobject_cast<QCPBars*>(view->systemPlot()->plottable(0));
        QVERIFY(bars != nullptr);
        QVERIFY(bars->data()->size() >= 3); // embed, skeleton, organ, norm
        settle(window);
        saveScreenshot(window, QStringLiteral("fleet-window.png"));

        // A chart saved from its context menu.
        const QString png = m_dir.filePath(QStringLiteral("scale-law.png"));
        saveChartThroughMenu(scatter, png, QSize(640, 400));
        QTRY_VERIFY(QFileInfo::exists(png));
        QCOMPARE(QImage(png).size(), QSize(640, 400));
        // The file says what the window shows: the scale law's equation and the filter.
        view->findChild<QLineEdit*>()->setText(QStringLiteral("specimen"));
        const QString svg = m_dir.filePath(QStringLiteral("scale-law.svg"));
        saveChartThroughMenu(scatter, svg, QSize(640, 400));
        const QString drawn = QString::fromUtf8(readAll(svg));
        QVERIFY2(drawn.contains(QStringLiteral("θ = ")) && drawn.contains(QStringLiteral("r² ")) &&
                     drawn.contains(QStringLiteral("(filter “specimen”)")),
                 qPrintable(drawn.left(2000)));
        QVERIFY2(window->findChild<QStatusBar*>()->currentMessage().contains(QStringLiteral("scale-law.svg")),
                 qPrintable(window->findChild<QStatusBar*>()->currentMessage()));
        view->findChild<QLineEdit*>()->clear();
    }

    void rowsOpenIntoThePanes() {
        widgets::FleetView* view = openFleet(m_fleet);
        QVERIFY(view != nullptr);
        QTableView* table = view->table();
        // Double click on a point: its model as recipient (the points are in parameter order,
        // the table in rank order).
        settle(view->window());
        const FleetReport* report = view->findChild<model::FleetTableModel*>()->report();
        const auto eight = std::find_if(report->rows.begin(), report->rows.end(), [](const FleetRow& r) {
            return r.path.ends_with("specimen-8-blocks.gguf");
        });
        QVERIFY(eight != report->rows.end());
        QCustomPlot* scatter = view->scatterPlot();
        const QPoint point(int(scatter->xAxis->coordToPixel(double(eight->parameters))),
                           int(scatter->yAxis->coordToPixel(*eight->thetaMean)));
        QVERIFY(view->pointLabelAt(point).contains(QStringLiteral("specimen-8-blocks.gguf")));
        QTest::mouseDClick(scatter, Qt::LeftButton, {}, point);
        QTRY_VERIFY(m_window->pane(app::MainWindow::Side::Recipient)->currentView() != nullptr);
        QVERIFY(QString::fromStdString(
                    m_window->pane(app::MainWindow::Side::Recipient)->currentView()->snapshot().model->path())
                    .endsWith(QStringLiteral("specimen-8-blocks.gguf")));
        // Double click on a row: recipient.
        const int wide = rowOfFile(view, QStringLiteral("wide.gguf"));
        QVERIFY(wide >= 0);
        const QRect cell = table->visualRect(table->model()->index(wide, model::FleetTableModel::Name));
        QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
        QTest::mouseDClick(table->viewport(), Qt::LeftButton, {}, cell.center());
        QTRY_VERIFY(
            QString::fromStdString(
                m_window->pane(app::MainWindow::Side::Recipient)->currentView()->snapshot().model->path())
                .endsWith(QStringLiteral("wide.gguf")));
        // Context menu: donor (the split set opens whole).
        const int split = rowOfFile(view, QStringLiteral("split-00001-of-00003.gguf"));
        QVERIFY(split >= 0);
        ModalSteps steps;
        steps.then([](QWidget* active) { return chooseMenuAction(active, QStringLiteral("Open as donor")); });
        const QRect row = table->visualRect(table->model()->index(split, model::FleetTableModel::Name));
        QMetaObject::invokeMethod(
            table, [table, row] { emit table->customContextMenuRequested(row.center()); },
            Qt::QueuedConnection);
        QTRY_VERIFY_WITH_TIMEOUT(steps.done(), 10000);
        QTRY_VERIFY(m_window->pane(app::MainWindow::Side::Donor)->currentView() != nullptr);
        QCOMPARE(
            m_window->pane(app::MainWindow::Side::Donor)->currentView()->snapshot().model->shards().size(),
            std::size_t(3));
    }

    void cancelLeavesNoWindow() {
        QSignalSpy ended(m_window->fleet(), &app::FleetController::fleetEnded);
        WorkerHold hold(m_window->jobs());
        QString error;
        QVERIFY(m_window->fleet()->startFleet({m_fleet}, &error));
        QVERIFY(!m_window->fleet()->startFleet({m_fleet}, &error)); // one at a time
        QVERIFY(m_window->fleet()->isRunning());
        QVERIFY2(m_window->jobStatus()->text().startsWith(QStringLiteral("Fleet of")),
                 qPrintable(m_window->jobStatus()->text()));
        const auto buttons = m_window->jobStatus()->findChildren<QPushButton*>();
        QCOMPARE(buttons.size(), 1);
        buttons.front()->click();
        hold.release();
        QVERIFY(ended.wait(60000));
        QCOMPARE(ended.front().at(0).toBool(), false);
        QCOMPARE(ended.front().at(1).toString(), QStringLiteral("cancelled"));
        QVERIFY(m_window->fleet()->lastView() == nullptr);
    }
};

QTEST_MAIN(TestWindowFleet)
#include "tst_window_fleet.moc"
