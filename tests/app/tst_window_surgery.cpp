// Surgery in the window: drag and drop from donors onto the recipient, the plan, its preview,
// plans on disk, assembly on the engine thread and the guard rails.
#include "anatomy_filter_proxy.h"
#include "anatomy_tree_model.h"
#include "assembly_controller.h"
#include "chart_export.h"
#include "cli_run.h"
#include "demo_models.h"
#include "display_names.h"
#include "fixtures.h"
#include "graft_document.h"
#include "graft_plan_model.h"
#include "graft_plan_panel.h"
#include "job_ends.h"
#include "job_status.h"
#include "layer_importance_chart.h"
#include "main_window.h"
#include "model_pane.h"
#include "model_roles.h"
#include "model_view.h"
#include "report_export.h"
#include "shared_models.h"
#include "surgery_controller.h"
#include "system_theta_charts.h"
#include "tensor_drag.h"
#include "tensor_inspector.h"
#include "theta_heatmap.h"
#include "vitals_page.h"
#include "window_test_support.h"
#include "worker_wait.h"
#include "write_folder.h"
#include <QApplication>
#include <QCheckBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QDragEnterEvent>
#include <QLabel>
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

class TestWindowSurgery : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_healthyPath;
    QString m_damagedPath;
    QString m_cli;
    // Each test starts here: the damaged model as recipient, the healthy one as donor, both
    // measured (from the cache after the first test).
    std::unique_ptr<app::MainWindow> m_window;
    widgets::ModelView* m_recipient = nullptr;
    widgets::ModelView* m_donor = nullptr;
    model::GraftDocument* m_plan = nullptr;
    static constexpr int kFfnUpRow = 8;

    // The healing graft, in the tree: the donor's organ system, layers 1-3, dropped on the
    // recipient's organ system.
    void healInTheTree() {
        std::unique_ptr<QMimeData> organs(m_donor->anatomyModel()->mimeData(
            {layerNode(m_donor, QStringLiteral("organ"), QStringLiteral("layer 1")),
             layerNode(m_donor, QStringLiteral("organ"), QStringLiteral("layer 2")),
             layerNode(m_donor, QStringLiteral("organ"), QStringLiteral("layer 3"))}));
        const QModelIndex organTarget = systemNode(m_recipient, QStringLiteral("organ"));
        QVERIFY(
            m_recipient->anatomyModel()->canDropMimeData(organs.get(), Qt::CopyAction, -1, -1, organTarget));
        QCOMPARE(m_recipient->anatomyModel()->dropMessage(), QStringLiteral("Replaces 9 tensors"));
        QVERIFY(m_recipient->anatomyModel()->dropMimeData(organs.get(), Qt::CopyAction, -1, -1, organTarget));
        QCOMPARE(m_plan->report().layout.tensorsFromDonors, std::uint64_t(9));
        QVERIFY(!m_plan->report().hasErrors());
        QCOMPARE(m_window->surgery()->panel()->operationsView()->model()->rowCount(), 1);
    }

    // The texts Check chimera's menu offers as it opens, and the one checked.
    static std::pair<QStringList, QString> textsOffered(widgets::GraftPlanPanel* panel) {
        emit panel->checkMenu()->aboutToShow();
        std::pair<QStringList, QString> texts;
        for (QAction* action : panel->checkMenu()->actions()) {
            if (action->isCheckable()) {
                texts.first << action->text();
                if (action->isChecked()) {
                    texts.second = action->text();
                }
            }
        }
        return texts;
    }

private slots:
    void initTestCase() {
        initWindowTests(m_dir);
        m_healthyPath = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        m_damagedPath = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        m_cli = qEnvironmentVariable("ORGAN_CLI");
        QVERIFY2(QFileInfo(m_cli).isExecutable(), "ORGAN_CLI names the organ binary");
    }

    void init() {
        ORGAN_REQUIRE_SHARED(m_healthyPath);
        ORGAN_REQUIRE_SHARED(m_damagedPath);
        m_window = std::make_unique<app::MainWindow>();
        m_window->resize(1500, 950);
        m_window->show();
        JobEnds finished(m_window->jobs(), "measure");
        QCOMPARE(m_window->openFiles({m_damagedPath}), 1);
        QCOMPARE(m_window->openFiles({m_healthyPath}, app::MainWindow::Side::Donor), 1);
        QVERIFY(waitForJobs(finished, 2, 20000));
        m_recipient = m_window->currentView();
        m_donor = m_window->pane(app::MainWindow::Side::Donor)->currentView();
        m_plan = m_window->surgery()->document();
    }

    // A window destroyed without closing: no questions, and its autosave goes; the text chosen for
    // vital signs is forgotten.
    void cleanup() {
        m_window.reset();
        QSettings().remove(QStringLiteral("vitals")); // the text vital signs are taken on
        m_recipient = m_donor = nullptr;
        m_plan = nullptr;
    }

    // Vital signs in the window: the recipient's page against the open donor (same
    // vocabulary), "Suggest layers to remove" plans the cheapest layer, Check chimera runs
    // the plan's chimera without writing it; the plan changing hides a stale check.
    void vitalSigns() {
        app::MainWindow& window = *m_window;
        widgets::VitalsPage* page = m_recipient->vitalsPage();
        m_recipient->showPage(widgets::ModelView::Page::Vitals);
        QCOMPARE(m_recipient->tabs()->currentWidget(), static_cast<QWidget*>(page));
        QVERIFY(!page->chart()->isVisible());
        QVERIFY(!page->suggestButton()->isEnabled());
        // Cancel: the engine thread is held busy, the run is asked for, then cancelled.
        WorkerHold hold(window.jobs());
        JobEnds cancelled(window.jobs(), "vitals");
        QTest::mouseClick(page->takeButton(), Qt::LeftButton);
        QVERIFY(page->isRunning());
        QCOMPARE(page->takeButton()->text(), QStringLiteral("Cancel"));
        QTest::mouseClick(page->takeButton(), Qt::LeftButton);
        hold.release();
        QVERIFY(waitForJobs(cancelled, 1, 30000));
        QCOMPARE(cancelled.count(JobState::Cancelled), 1);
        QVERIFY(!page->isRunning());
        QVERIFY(page->report() == nullptr);
        QCOMPARE(page->takeButton()->text(), QStringLiteral("Take vital signs"));

        JobEnds ready(window.jobs(), "vitals");
        QTest::mouseClick(page->takeButton(), Qt::LeftButton);
        QVERIFY(page->isRunning());
        QVERIFY(waitForJobs(ready, 1, 30000));
        QVERIFY(!page->isRunning());
        const VitalsReport* report = page->report();
        QVERIFY(report != nullptr);
        QVERIFY(report->perplexity.perplexity > 1000); // the damaged model
        QCOMPARE(report->parents.size(), std::size_t(1));
        QVERIFY(report->parents.front().divergence.meanKl > 1);
        QVERIFY(page->chart()->isVisible());
        QCOMPARE(page->chart()->plottable(0)->interface1D()->dataCount(), 5);
        QVERIFY2(page->summaryText().contains(QStringLiteral("stories260K-f32.gguf")),
                 qPrintable(page->summaryText()));
        QVERIFY2(page->findChild<QLabel*>(QStringLiteral("vitalsStatus"))
                     ->text()
                     .endsWith(QStringLiteral(" tokens of the built-in text.")),
                 qPrintable(page->findChild<QLabel*>(QStringLiteral("vitalsStatus"))->text()));
        settle(&window);
        saveScreenshot(&window, QStringLiteral("vitals-page.png"));
        // Beside the θ heatmap and on it: the same layer importance, a chart and a row.
        widgets::ThetaHeatmap* heatmap = m_recipient->heatmap();
        QCOMPARE(heatmap->importanceRowPosition(), std::optional(heatmap->rowCount() + 0.5));
        QVERIFY(!heatmap->importanceAt(0)); // "global"
        for (std::uint32_t layer = 0; layer < 5; ++layer) {
            QCOMPARE(heatmap->importanceAt(heatmap->columnOfLayer(layer)),
                     std::optional(report->importance.angular[layer]));
        }
        m_recipient->showPage(widgets::ModelView::Page::Heatmap);
        settle(&window);
        QVERIFY(m_recipient->importanceChart()->isVisible());
        QCOMPARE(m_recipient->importanceChart()->plottable(0)->interface1D()->dataCount(), 5);
        // The row sits under the cells, on their axes: no cell there, and the plot shows it.
        QCOMPARE(heatmap->tensorAt(heatmap->columnOfLayer(2), heatmap->rowCount()), -1);
        QVERIFY(heatmap->plot()->yAxis->range().contains(*heatmap->importanceRowPosition()));
        saveScreenshot(&window, QStringLiteral("vitals-heatmap.png"));
        m_recipient->showPage(widgets::ModelView::Page::Vitals);

        // Suggest: the cheapest block of 2 layers becomes two remove_layer operations.
        page->blockSize()->setValue(2);
        QVERIFY(page->suggestButton()->isEnabled());
        const auto cheapest = report->importance.cheapest[1];
        QTest::mouseClick(page->suggestButton(), Qt::LeftButton);
        QCOMPARE(m_plan->plan().operations.size(), std::size_t(2));
        // From the last, so that each keeps the number the user saw.
        QCOMPARE(m_plan->plan().operations[0].kind, GraftOperation::Kind::RemoveLayer);
        QCOMPARE(m_plan->plan().operations[0].toLayer, cheapest.first + 1);
        QCOMPARE(m_plan->plan().operations[1].toLayer, cheapest.first);
        QCOMPARE(m_plan->report().layout.blocks, 3u);

        // Check chimera: the planned chimera against the recipient and the (unused) donor.
        widgets::GraftPlanPanel* panel = window.surgery()->panel();
        auto* check = panel->findChild<QToolButton*>(QStringLiteral("plan-checkchimera"));
        QVERIFY(check != nullptr && check->isEnabled());
        // Its Cancel, while the engine thread is held busy.
        WorkerHold busy(window.jobs());
        JobEnds checkCancelled(window.jobs(), "vitals");
        check->click();
        QVERIFY(panel->isChecking());
        QCOMPARE(check->text(), QStringLiteral("Cancel check"));
        check->click();
        busy.release();
        QVERIFY(waitForJobs(checkCancelled, 1, 30000));
        QCOMPARE(checkCancelled.count(JobState::Cancelled), 1);
        QVERIFY(!panel->isChecking());
        QCOMPARE(panel->vitalsLabel()->text(), QStringLiteral("Cancelled."));
        QCOMPARE(check->text(), QStringLiteral("Check chimera"));
        JobEnds checked(window.jobs(), "vitals");
        check->click();
        QVERIFY(waitForJobs(checked, 1, 30000));
        const QString text = panel->vitalsLabel()->text();
        QVERIFY2(text.contains(QStringLiteral("Chimera (planned)</b> on the built-in text (")) &&
                     text.contains(QStringLiteral(" tokens): perplexity ")) &&
                     text.contains(QStringLiteral("→")) &&
                     text.contains(QStringLiteral("KL to <b>stories260K-damaged-f32.gguf</b>")),
                 qPrintable(text));
        QVERIFY(panel->vitalsLabel()->isVisible());
        // Pressed again with the plan unchanged: said to be current, not run again.
        JobEnds again(window.jobs(), "vitals");
        check->click();
        QVERIFY(!panel->isChecking());
        QCOMPARE(window.statusBar()->currentMessage(),
                 QStringLiteral("The chimera's vital signs shown are current: neither the plan nor the text "
                                "has changed since they were taken"));
        QCOMPARE(panel->vitalsLabel()->text(), text);
        settle(&window);
        saveScreenshot(&window, QStringLiteral("vitals-check-chimera.png"));
        // Nothing was written beside the recipient.
        QVERIFY(QDir(QFileInfo(m_damagedPath).absolutePath())
                    .entryList({QStringLiteral("*chimera*")}, QDir::Files)
                    .isEmpty());
        // An edit makes the shown check stale: it goes.
        m_plan->undoStack()->undo();
        QVERIFY(!panel->vitalsLabel()->isVisible());
    }

    // A model open in both panes (or in two tabs) is compared with once.
    void comparesEachModelOnce() {
        app::MainWindow& window = *m_window;
        JobEnds finished(window.jobs(), "measure");
        QCOMPARE(window.openFiles({m_healthyPath}), 1);
        QCOMPARE(window.openFiles({m_healthyPath}, app::MainWindow::Side::Donor), 1);
        // Open already (the donor): one model, measured once, whatever views show it.
        QVERIFY(window.currentView()->measurement() != nullptr);
        QCOMPARE(window.currentView()->results(), m_donor->results());
        QCOMPARE(finished.count(), 0);
        window.pane(app::MainWindow::Side::Recipient)->tabs()->setCurrentWidget(m_recipient);
        JobEnds ready(window.jobs(), "vitals");
        m_recipient->showPage(widgets::ModelView::Page::Vitals);
        QTest::mouseClick(m_recipient->vitalsPage()->takeButton(), Qt::LeftButton);
        QVERIFY(waitForJobs(ready, 1, 30000));
        QCOMPARE(m_recipient->vitalsPage()->report()->parents.size(), std::size_t(1));
    }

    // Vital signs on a text the user chooses: on any page or in Check chimera's menu, one choice for
    // every run, kept in the settings. A text longer than the model's context is scored in chunks of
    // the context unless a chunk is set; what the window scores is what organ vitals scores.
    void vitalSignsOnAChosenText() {
        app::MainWindow& window = *m_window;
        const QString longText = m_dir.filePath(QStringLiteral("long stories.txt"));
        {
            QFile file(longText);
            QVERIFY(file.open(QIODevice::WriteOnly));
            for (int i = 0; i < 400; ++i) {
                file.write(
                    QStringLiteral("Once upon a time Lily saw a big red ball %1 times in the park. She "
                                   "was happy and she played all day.\n")
                        .arg(i)
                        .toUtf8());
            }
        }
        widgets::VitalsPage* page = m_recipient->vitalsPage();
        m_recipient->showPage(widgets::ModelView::Page::Vitals);
        // Typed (never confirmed with Enter) is chosen: the donor's page shows it too.
        page->textPath()->setText(longText);
        QCOMPARE(m_donor->vitalsPage()->textPath()->text(), longText);
        JobEnds ready(window.jobs(), "vitals");
        QTest::mouseClick(page->takeButton(), Qt::LeftButton);
        QVERIFY(waitForJobs(ready, 1, 60000));
        QCOMPARE(ready.count(JobState::Done), 1);
        const VitalsReport* report = page->report();
        QVERIFY(report != nullptr);
        QCOMPARE(report->chunk, std::size_t(2048)); // the model's context
        QVERIFY(report->tokens.size() >= 2 * 2048);
        const QString status = page->findChild<QLabel*>(QStringLiteral("vitalsStatus"))->text();
        QVERIFY2(status.startsWith(QStringLiteral("Taken on long stories.txt: %1 tokens in chunks of 2048, ")
                                       .arg(report->tokens.size())),
                 qPrintable(status));
        // The command line on the same text and chunk gives the same numbers.
        const QString json = m_dir.filePath(QStringLiteral("long-vitals.json"));
        const testing::CliRun cli = testing::runOrganCli(
            {QStringLiteral("vitals"), m_damagedPath, QStringLiteral("--text"), longText,
             QStringLiteral("--chunk"), QStringLiteral("2048"), QStringLiteral("--json"), json});
        QVERIFY2(cli.exitCode == 0, qPrintable(cli.err));
        const auto measured = nlohmann::json::parse(readAll(json).toStdString());
        QCOMPARE(measured["tokens"].get<std::size_t>(), report->tokens.size());
        QCOMPARE(measured["scored"].get<std::size_t>(), report->scored);
        QCOMPARE(measured["perplexity"].get<double>(), report->perplexity.perplexity);
        // A chunk set on the page is the one used.
        page->textChunk()->setValue(64);
        QCOMPARE(m_donor->vitalsPage()->textChunk()->value(), 64);
        JobEnds chunked(window.jobs(), "vitals");
        QTest::mouseClick(page->takeButton(), Qt::LeftButton);
        QVERIFY(waitForJobs(chunked, 1, 60000));
        QCOMPARE(page->report()->chunk, std::size_t(64));
        // Typed, a number passes through its first digits ("128" through "1"); the arrows step over 1
        // to 3, which leave nothing to score, and a 1 to 3 typed becomes 4 once the editing ends.
        QSpinBox* chunk = page->textChunk();
        chunk->setFocus();
        chunk->selectAll();
        QTest::keyClicks(chunk, QStringLiteral("128"));
        QCOMPARE(chunk->value(), 128);
        QCOMPARE(m_donor->vitalsPage()->textChunk()->value(), 128);
        chunk->setValue(0);
        chunk->stepBy(1);
        QCOMPARE(chunk->value(), 4);
        chunk->stepBy(-1);
        QCOMPARE(chunk->value(), 0);
        chunk->selectAll();
        QTest::keyClicks(chunk, QStringLiteral("2"));
        QCOMPARE(chunk->value(), 2);
        QMetaObject::invokeMethod(chunk, "editingFinished");
        QCOMPARE(chunk->value(), 4);
        chunk->setValue(64);

        // Check chimera's menu offers the built-in text and the texts chosen lately.
        m_plan->removeLayer(m_damagedPath, 4);
        widgets::GraftPlanPanel* panel = window.surgery()->panel();
        auto* check = panel->findChild<QToolButton*>(QStringLiteral("plan-checkchimera"));
        QCOMPARE(check->menu(), panel->checkMenu());
        const auto [offered, checked] = textsOffered(panel);
        QCOMPARE(offered, (QStringList{QStringLiteral("The built-in short stories"),
                                       QStringLiteral("long stories.txt")}));
        QCOMPARE(checked, QStringLiteral("long stories.txt"));
        JobEnds checkedOnLong(window.jobs(), "vitals");
        check->click();
        QVERIFY(waitForJobs(checkedOnLong, 1, 60000));
        QVERIFY2(
            panel->vitalsLabel()->text().contains(
                QStringLiteral("Chimera (planned)</b> on long stories.txt (%1 tokens, in chunks of 64): ")
                    .arg(report->tokens.size())),
            qPrintable(panel->vitalsLabel()->text()));
        // The file changed since makes the shown check not current: pressed again, it runs.
        {
            QFile file(longText);
            QVERIFY(file.open(QIODevice::Append));
            file.write("The end.\n");
        }
        JobEnds checkedOnChanged(window.jobs(), "vitals");
        check->click();
        QVERIFY(waitForJobs(checkedOnChanged, 1, 60000));
        QCOMPARE(checkedOnChanged.count(JobState::Done), 1);
        // Another text too.
        const QList<QAction*> choices = panel->checkMenu()->actions();
        const auto builtIn = std::find_if(choices.begin(), choices.end(), [](QAction* a) {
            return a->text() == QStringLiteral("The built-in short stories");
        });
        QVERIFY(builtIn != choices.end());
        (*builtIn)->trigger();
        QCOMPARE(window.statusBar()->currentMessage(),
                 QStringLiteral("Vital signs and Check chimera are taken on the built-in text"));
        QCOMPARE(page->textPath()->text(), QString());
        QCOMPARE(page->textChunk()->value(), 64);
        page->textChunk()->setValue(0);
        JobEnds checkedOnBuiltIn(window.jobs(), "vitals");
        check->click();
        QVERIFY(waitForJobs(checkedOnBuiltIn, 1, 60000));
        QVERIFY2(panel->vitalsLabel()->text().contains(
                     QStringLiteral("Chimera (planned)</b> on the built-in text (")),
                 qPrintable(panel->vitalsLabel()->text()));

        // A text that cannot be read fails the run, naming the file.
        const QString empty = m_dir.filePath(QStringLiteral("empty.txt"));
        QVERIFY(QFile(empty).open(QIODevice::WriteOnly));
        for (const auto& [path, says] :
             {std::pair{empty, QStringLiteral("empty.txt: the text is empty")},
              std::pair{m_dir.filePath(QStringLiteral("missing.txt")), QStringLiteral("missing.txt: ")}}) {
            page->textPath()->setText(path);
            JobEnds failed(window.jobs(), "vitals");
            QTest::mouseClick(page->takeButton(), Qt::LeftButton);
            QVERIFY(waitForJobs(failed, 1, 60000));
            QCOMPARE(failed.count(JobState::Failed), 1);
            // The signs shown keep saying what they were taken on.
            const QString said = page->findChild<QLabel*>(QStringLiteral("vitalsStatus"))->text();
            QVERIFY2(said.startsWith(says) &&
                         said.contains(
                             QStringLiteral("\nShown still: taken on long stories.txt: %1 tokens in chunks "
                                            "of 64, ")
                                 .arg(report->tokens.size())),
                     qPrintable(said));
        }
        // The menu offers the text chosen (checked) and the texts scored, not those that failed before.
        const auto [recent, current] = textsOffered(panel);
        QCOMPARE(recent, (QStringList{QStringLiteral("The built-in short stories"),
                                      QStringLiteral("missing.txt"), QStringLiteral("long stories.txt")}));
        QCOMPARE(current, QStringLiteral("missing.txt"));
        // Kept in the settings: the next window takes them on the same text.
        page->textPath()->setText(longText);
        {
            app::MainWindow next;
            JobEnds measured(next.jobs(), "measure");
            QCOMPARE(next.openFiles({m_healthyPath}), 1);
            QCOMPARE(next.currentView()->vitalsPage()->textPath()->text(), longText);
            QVERIFY(waitForJobs(measured, 1, 20000));
        }
        // A parent closed since the vital signs were taken is said to be.
        QVERIFY2(page->summaryText().contains(QStringLiteral("stories260K-f32.gguf</td>")),
                 qPrintable(page->summaryText()));
        window.pane(app::MainWindow::Side::Donor)->closeView(0);
        QVERIFY2(page->summaryText().contains(QStringLiteral("stories260K-f32.gguf (closed since)</td>")),
                 qPrintable(page->summaryText()));
    }

    // The recipient's views take drops, the donor's drag; swapping the panes swaps the roles.
    void roles() {
        app::MainWindow& window = *m_window;
        widgets::ModelView* recipient = m_recipient;
        widgets::ModelView* donor = m_donor;
        model::GraftDocument* plan = m_plan;
        QVERIFY(recipient->isRecipient() && !donor->isRecipient());
        QCOMPARE(recipient->anatomyView()->dragDropMode(), QAbstractItemView::DropOnly);
        QVERIFY(recipient->anatomyView()->dragDropOverwriteMode());
        QCOMPARE(donor->anatomyView()->dragDropMode(), QAbstractItemView::DragOnly);
        window.swapPanes();
        QVERIFY(donor->isRecipient() && !recipient->isRecipient());
        QCOMPARE(donor->anatomyView()->dragDropMode(), QAbstractItemView::DropOnly);
        window.swapPanes();
        QVERIFY(recipient->isRecipient() && !donor->isRecipient());
        QVERIFY(plan->isEmpty());
        // With a plan, swapping says the plan keeps its recipient.
        healInTheTree();
        window.swapPanes();
        QVERIFY2(window.statusBar()->currentMessage().endsWith(
                     QStringLiteral("The graft plan still grafts into stories260K-damaged-f32.gguf")),
                 qPrintable(window.statusBar()->currentMessage()));
        window.swapPanes();
    }

    void heatmapDrops() {
        app::MainWindow& window = *m_window;
        widgets::ModelView* recipient = m_recipient;
        widgets::ModelView* donor = m_donor;
        model::GraftDocument* plan = m_plan;
        // Heatmap: a row (ffn_up across layers) onto a recipient cell grafts it in place; a
        // column (layer 1) onto the label of layer 3 maps 1 → 3; a cell onto another role is
        // refused with the reason.
        recipient->showPage(widgets::ModelView::Page::Heatmap);
        donor->showPage(widgets::ModelView::Page::Heatmap);
        settle(m_window.get());
        widgets::ThetaHeatmap* to = recipient->heatmap();
        widgets::ThetaHeatmap* from = donor->heatmap();
        to->plot()->replot();
        from->plot()->replot();
        QCOMPARE(from->roles()[kFfnUpRow], std::string("ffn_up"));
        std::unique_ptr<QMimeData> row(model::encodeTensorDrag(*from->dragForRow(kFfnUpRow)));
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
        std::unique_ptr<QMimeData> one(model::encodeTensorDrag(*from->dragForCell(2, kFfnUpRow)));
        QVERIFY(!to->canDropAt(one.get(), to->pixelOfTensor(tensorOf(recipient, "blk.1.attn_q.weight")),
                               &message));
        QVERIFY2(message.contains(QStringLiteral("same role")), qPrintable(message));
        QCOMPARE(plan->plan().operations.size(), std::size_t(2));
        // Ctrl+click selects donor cells (layers 0 and 4's ffn_up); dragging one drags both.
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
        // A click, then Ctrl+clicks: the first cell clicked is part of what drags (it was left out),
        // and the pointer says how many tensors go.
        QTest::mouseClick(from->plot(), Qt::LeftButton, {},
                          from->pixelOfTensor(tensorOf(donor, "blk.0.ffn_gate.weight")));
        for (const char* name : {"blk.0.ffn_up.weight", "blk.0.ffn_down.weight"}) {
            QTest::mouseClick(from->plot(), Qt::LeftButton, Qt::ControlModifier,
                              from->pixelOfTensor(tensorOf(donor, name)));
        }
        QCOMPARE(from->selectedTensors().size(), std::size_t(3));
        // The press that starts the drag keeps the selection whole.
        const QPoint gate = from->pixelOfTensor(tensorOf(donor, "blk.0.ffn_gate.weight"));
        QTest::mousePress(from->plot(), Qt::LeftButton, {}, gate);
        QCOMPARE(from->selectedTensors().size(), std::size_t(3));
        const auto three = from->dragAtPixel(gate);
        QCOMPARE(three->tensors.size(), std::size_t(3));
        QCOMPARE(from->dragText(*three), QStringLiteral("3 tensors"));
        std::unique_ptr<QMimeData> threeDrag(model::encodeTensorDrag(*three));
        const QPoint layer1Label(int(to->plot()->xAxis->coordToPixel(2)), cells.bottom() + 8);
        QVERIFY(to->canDropAt(threeDrag.get(), layer1Label, &message));
        QCOMPARE(message, QStringLiteral("Maps layer 0 → 1: 3 tensors"));
        // Released where it was pressed (a click, no drag): the selection narrows to that cell.
        QTest::mouseRelease(from->plot(), Qt::LeftButton, {}, gate);
        QCOMPARE(from->selectedTensors(), std::set<int>{tensorOf(donor, "blk.0.ffn_gate.weight")});
        // A plain click on another cell starts a new selection.
        QTest::mouseClick(from->plot(), Qt::LeftButton, {},
                          from->pixelOfTensor(tensorOf(donor, "blk.2.ffn_up.weight")));
        QCOMPARE(from->selectedTensors(), std::set<int>{tensorOf(donor, "blk.2.ffn_up.weight")});
        QCOMPARE(
            from->dragText(*from->dragAtPixel(from->pixelOfTensor(tensorOf(donor, "blk.2.ffn_up.weight")))),
            QStringLiteral("blk.2.ffn_up.weight"));
        // A plain click where no tensor is (ffn_up has none in the global column) clears the
        // selection: it stayed, and the menu there offered to merge it.
        QCOMPARE(from->tensorAt(0, kFfnUpRow), -1);
        const QPoint blank(int(from->plot()->xAxis->coordToPixel(0)),
                           from->pixelOfTensor(tensorOf(donor, "blk.2.ffn_up.weight")).y());
        QTest::mouseClick(from->plot(), Qt::LeftButton, {}, blank);
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
    }

    void dragEventsAndProxies() {
        widgets::ModelView* recipient = m_recipient;
        widgets::ModelView* donor = m_donor;
        model::GraftDocument* plan = m_plan;
        recipient->showPage(widgets::ModelView::Page::Heatmap);
        donor->showPage(widgets::ModelView::Page::Heatmap);
        settle(m_window.get());
        widgets::ThetaHeatmap* to = recipient->heatmap();
        widgets::ThetaHeatmap* from = donor->heatmap();
        to->plot()->replot();
        from->plot()->replot();
        // Through the widgets' own paths: drag events on the recipient's heatmap (outline and
        // drop), and the tree views' proxy models (what QTreeView's drag and drop calls).
        std::unique_ptr<QMimeData> cellDrag(model::encodeTensorDrag(*from->dragForCell(3, kFfnUpRow)));
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
        // A second drag, onto a cell where it does not fit: "no" at the pointer (no action),
        // but accepted, so that a release there still arrives and can say why.
        const QPoint wrong = to->pixelOfTensor(tensorOf(recipient, "blk.2.attn_q.weight"));
        QDragEnterEvent again(onCell, Qt::CopyAction, cellDrag.get(), Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(to->plot(), &again);
        QDragMoveEvent refused(wrong, Qt::CopyAction, cellDrag.get(), Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(to->plot(), &refused);
        QVERIFY(refused.isAccepted());
        QCOMPARE(refused.dropAction(), Qt::IgnoreAction);
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

    // The plan shows wherever the recipient shows: replaced tensors marked in the tree in
    // their donor's colour (tooltip: the source), the side charts' θ after the plan beside
    // today's, and an operation label naming what was dragged.
    void planVisibleEverywhere() {
        app::MainWindow& window = *m_window;
        widgets::ModelView* recipient = m_recipient;
        widgets::ModelView* donor = m_donor;
        model::GraftDocument* plan = m_plan;
        healInTheTree();
        const QModelIndex replaced =
            recipient->anatomyModel()->indexOfTensor(tensorOf(recipient, "blk.2.ffn_up.weight"));
        QCOMPARE(replaced.data(model::PlanDonorRole).toInt(), 0);
        const QImage mark = replaced.data(Qt::DecorationRole).value<QIcon>().pixmap(12, 12).toImage();
        QCOMPARE(mark.pixelColor(5, 6), model::donorColor(0));
        QVERIFY2(
            replaced.data(Qt::ToolTipRole)
                .toString()
                .contains(QStringLiteral("The plan replaces it with blk.2.ffn_up.weight of stories260K-f32")),
            qPrintable(replaced.data(Qt::ToolTipRole).toString()));
        const QModelIndex kept =
            recipient->anatomyModel()->indexOfTensor(tensorOf(recipient, "blk.0.ffn_up.weight"));
        QCOMPARE(kept.data(model::PlanDonorRole).toInt(), -1);
        QVERIFY(!kept.data(Qt::DecorationRole).isValid());
        const QModelIndex organLayer2 =
            layerNode(recipient, QStringLiteral("organ"), QStringLiteral("layer 2"));
        QCOMPARE(organLayer2.data(Qt::ToolTipRole).toString(),
                 QStringLiteral("The plan replaces 3 of its 3 tensors"));
        QCOMPARE(systemNode(recipient, QStringLiteral("organ")).data(Qt::ToolTipRole).toString(),
                 QStringLiteral("The plan replaces 9 of its 15 tensors"));
        QVERIFY(!systemNode(recipient, QStringLiteral("skeleton")).data(Qt::DecorationRole).isValid());
        // The side charts: organ θ after the plan = the healthy model's, per layer and overall.
        widgets::SystemThetaCharts* charts = recipient->systemCharts();
        QVERIFY(charts->hasPreview());
        for (std::uint32_t layer = 1; layer <= 3; ++layer) {
            QVERIFY(std::abs(*charts->meanTheta(System::Organ, layer, true) -
                             *donor->systemCharts()->meanTheta(System::Organ, layer)) < 1e-9);
            QVERIFY(*charts->meanTheta(System::Organ, layer, true) >
                    *charts->meanTheta(System::Organ, layer));
        }
        QCOMPARE(charts->meanTheta(System::Organ, 0, true), charts->meanTheta(System::Organ, 0));
        QCOMPARE(charts->meanTheta(System::Skeleton, std::nullopt, true),
                 charts->meanTheta(System::Skeleton, std::nullopt));
        QTRY_COMPARE(charts->layerPlot()->graph(int(kSystemCount + std::size_t(System::Organ)))->dataCount(),
                     3);
        // The operation's label says what was dragged.
        QCOMPARE(window.surgery()
                     ->panel()
                     ->operationsView()
                     ->model()
                     ->index(0, model::GraftPlanModel::Operation)
                     .data()
                     .toString(),
                 QStringLiteral("replace organ of layers 1–3 (9 tensors) from stories260K-f32"));
        recipient->showPage(widgets::ModelView::Page::Anatomy);
        recipient->anatomyView()->expandAll();
        saveScreenshot(&window, QStringLiteral("surgery-tree-plan.png"));
        recipient->showPage(widgets::ModelView::Page::Heatmap);
        settle(recipient);
        saveScreenshot(recipient, QStringLiteral("surgery-side-charts-plan.png"));
        // Clearing the plan clears every mark.
        plan->clear();
        QCOMPARE(replaced.data(model::PlanDonorRole).toInt(), -1);
        QVERIFY(!charts->hasPreview());
    }

    // A drop that does not fit leaves its reason in the status bar (tree and heatmap), and
    // the plan panel's Undo/Redo keep their size while their tooltips name the edit.
    void refusedDropsAndButtons() {
        app::MainWindow& window = *m_window;
        widgets::ModelView* recipient = m_recipient;
        widgets::ModelView* donor = m_donor;
        model::GraftDocument* plan = m_plan;
        recipient->showPage(widgets::ModelView::Page::Heatmap);
        donor->showPage(widgets::ModelView::Page::Heatmap);
        settle(m_window.get());
        widgets::ThetaHeatmap* to = recipient->heatmap();
        widgets::ThetaHeatmap* from = donor->heatmap();
        to->plot()->replot();
        from->plot()->replot();
        std::unique_ptr<QMimeData> one(model::encodeTensorDrag(*from->dragForCell(2, kFfnUpRow)));
        const QPoint wrong = to->pixelOfTensor(tensorOf(recipient, "blk.1.attn_q.weight"));
        // As a drag does it: enter (the target), then the drop.
        QDragEnterEvent mapEnter(wrong, Qt::CopyAction, one.get(), Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(to->plot(), &mapEnter);
        QDropEvent drop(QPointF(wrong), Qt::CopyAction, one.get(), Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(to->plot(), &drop);
        QVERIFY(!drop.isAccepted());
        QVERIFY2(window.statusBar()->currentMessage().startsWith(
                     QStringLiteral("Not added to the plan: blk.1.ffn_up.weight cannot "
                                    "replace blk.1.attn_q.weight")),
                 qPrintable(window.statusBar()->currentMessage()));
        window.statusBar()->clearMessage();
        recipient->showPage(widgets::ModelView::Page::Anatomy);
        QTreeView* tree = recipient->anatomyView();
        tree->expandAll();
        const QModelIndex attnQ = recipient->anatomyProxy()->mapFromSource(
            recipient->anatomyModel()->indexOfTensor(tensorOf(recipient, "blk.1.attn_q.weight")));
        tree->scrollTo(attnQ);
        const QPoint onRow = tree->visualRect(attnQ).center();
        // The drag enters the tree over a row where it fits (its own tensor), then moves on.
        const QModelIndex ffnUp = recipient->anatomyProxy()->mapFromSource(
            recipient->anatomyModel()->indexOfTensor(tensorOf(recipient, "blk.1.ffn_up.weight")));
        QDragEnterEvent enter(tree->visualRect(ffnUp).center(), Qt::CopyAction, one.get(), Qt::LeftButton,
                              Qt::NoModifier);
        QApplication::sendEvent(tree->viewport(), &enter);
        QVERIFY(enter.isAccepted());
        QDragMoveEvent move(onRow, Qt::CopyAction, one.get(), Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(tree->viewport(), &move);
        QVERIFY(move.isAccepted());
        QCOMPARE(move.dropAction(), Qt::IgnoreAction);
        QDropEvent treeDrop(QPointF(onRow), Qt::CopyAction, one.get(), Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(tree->viewport(), &treeDrop);
        QVERIFY(plan->isEmpty());
        QVERIFY2(window.statusBar()->currentMessage().contains(
                     QStringLiteral("a tensor replaces one of the same role")),
                 qPrintable(window.statusBar()->currentMessage()));

        auto* undo = window.surgery()->panel()->findChild<QToolButton*>(QStringLiteral("plan-undo"));
        QVERIFY(undo != nullptr && !undo->isEnabled());
        const QSize before = undo->sizeHint();
        healInTheTree();
        QVERIFY(undo->isEnabled());
        QCOMPARE(undo->text(), QStringLiteral("Undo"));
        QCOMPARE(undo->sizeHint(), before);
        QVERIFY2(undo->toolTip().contains(QStringLiteral("replace organ of layers 1–3")),
                 qPrintable(undo->toolTip()));
        undo->click();
        QVERIFY(plan->isEmpty());
        auto* redo = window.surgery()->panel()->findChild<QToolButton*>(QStringLiteral("plan-redo"));
        QCOMPARE(redo->sizeHint().width(), redo->sizeHint().width());
        QVERIFY(redo->isEnabled());
        redo->click();
        QCOMPARE(plan->plan().operations.size(), std::size_t(1));
    }

    // The recipient's layer context menu: duplicate layer 2, then the panel moves it up,
    // removes it; a finding selects its tensor in the recipient's tree.
    void layerMenuAndPanel() {
        app::MainWindow& window = *m_window;
        widgets::ModelView* recipient = m_recipient;
        model::GraftDocument* plan = m_plan;
        healInTheTree();
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
        QTableView* operations = window.surgery()->panel()->operationsView();
        operations->selectRow(1);
        window.surgery()->panel()->findChild<QToolButton*>(QStringLiteral("plan-up"))->click();
        QVERIFY(plan->plan().operations[0].kind == GraftOperation::Kind::DuplicateLayer);
        QCOMPARE(plan->report().layout.blocks, 6u);
        // Duplicating first renumbers: the organs of layers 1-3 now land in 1, 2 and 4,
        // and layer 3's copy keeps the damaged organs.
        operations->selectRow(0);
        window.surgery()->panel()->findChild<QToolButton*>(QStringLiteral("plan-remove"))->click();
        QCOMPARE(plan->plan().operations.size(), std::size_t(1));
        QVERIFY(plan->plan().operations[0].kind == GraftOperation::Kind::Replace);
        plan->removeLayer(QString::fromStdString(recipient->snapshot().model->path()), 7); // an error
        QListWidget* findings = window.surgery()->panel()->findingsView();
        QVERIFY(findings->count() >= 1);
        QVERIFY(findings->item(0)->text().contains(QStringLiteral("remove_layer: there is no layer 7")));
        plan->undoStack()->undo();
        QCOMPARE(findings->count(), 1);
        QVERIFY(findings->item(0)->text().contains(QStringLiteral("the plan fits")));
    }

    // A layer operation on a model with per-layer arrays shows, before assembly, which
    // layer-indexed keys it rewrites.
    void layerMetadataInFindings() {
        app::MainWindow& window = *m_window;
        const QString path = m_dir.filePath(QStringLiteral("per-layer.gguf"));
        QVERIFY(writeFixture(path, perLayerLlama(1)));
        JobEnds finished(window.jobs(), "measure");
        QCOMPARE(window.openFiles({path}), 1);
        QVERIFY(waitForJobs(finished, 1, 20000));
        widgets::ModelView* recipient = window.currentView();
        QCOMPARE(QString::fromStdString(recipient->snapshot().model->path()), path);
        recipient->showPage(widgets::ModelView::Page::Anatomy);
        QTimer::singleShot(0, [] {
            auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
            QVERIFY(menu != nullptr);
            for (QAction* action : menu->actions()) {
                if (action->text() == QStringLiteral("Remove layer 2")) {
                    action->trigger();
                }
            }
            menu->close();
        });
        const QModelIndex layer2 = recipient->anatomyProxy()->mapFromSource(
            layerNode(recipient, QStringLiteral("organ"), QStringLiteral("layer 2")));
        emit recipient->anatomyView()->customContextMenuRequested(
            recipient->anatomyView()->visualRect(layer2).center());
        QCOMPARE(m_plan->plan().operations.size(), std::size_t(1));
        QListWidget* findings = window.surgery()->panel()->findingsView();
        QStringList texts;
        for (int i = 0; i < findings->count(); ++i) {
            texts << findings->item(i)->text();
        }
        const QString all = texts.join(u'\n');
        QVERIFY2(all.contains(QStringLiteral("llama.feed_forward_length: array of 5 → 4 entries")),
                 qPrintable(all));
        QVERIFY2(all.contains(QStringLiteral("llama.attention.head_count_kv: array of 5 → 4 entries")),
                 qPrintable(all));
        QVERIFY2(
            all.contains(QStringLiteral("llama.attention.sliding_window_pattern: array of 5 → 4 entries")),
            qPrintable(all));
        QVERIFY(!m_plan->report().hasErrors());
        saveScreenshot(&window, QStringLiteral("layer-metadata-findings.png"));
    }

    void secondDonor() {
        app::MainWindow& window = *m_window;
        widgets::ModelView* recipient = m_recipient;
        model::GraftDocument* plan = m_plan;
        healInTheTree();
        QListWidget* findings = window.surgery()->panel()->findingsView();
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
        QTRY_COMPARE(recipient->heatmap()->preview().size(), std::size_t(29));
        saveScreenshot(&window, QStringLiteral("surgery-two-donors.png"));
        plan->undoStack()->undo();
        window.pane(app::MainWindow::Side::Donor)
            ->closeView(window.pane(app::MainWindow::Side::Donor)->tabs()->indexOf(f16));
        QCOMPARE(plan->plan().donors.size(), std::size_t(1));
    }

    void preview() {
        app::MainWindow& window = *m_window;
        widgets::ModelView* recipient = m_recipient;
        widgets::ModelView* donor = m_donor;
        healInTheTree();
        // The preview: 9 outlined cells with the healthy model's θ; θ mean before → after.
        widgets::ThetaHeatmap* to = recipient->heatmap();
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
        settle(&window);
        saveScreenshot(&window, QStringLiteral("surgery-preview.png"));
    }

    // Open plan… with unsaved changes asks first (it replaced them, with no undo); Save plan
    // (Ctrl+S) writes a plan that has a file to it without asking where.
    void unsavedPlanIsAskedAbout() {
        app::MainWindow& window = *m_window;
        model::GraftDocument* plan = m_plan;
        healInTheTree();
        QVERIFY(plan->isModified());
        const std::size_t operations = plan->plan().operations.size();
        QString asked;
        ModalSteps cancel;
        cancel.then([&](QWidget* active) {
            auto* box = qobject_cast<QMessageBox*>(active);
            if (box == nullptr) {
                return false;
            }
            asked = box->text();
            box->button(QMessageBox::Cancel)->click();
            return true;
        });
        window.surgery()->openPlanDialog();
        QVERIFY(cancel.done());
        QCOMPARE(asked, QStringLiteral(
                            "The graft plan has unsaved changes. Save it before another plan replaces it?"));
        QCOMPARE(plan->plan().operations.size(), operations);
        QVERIFY(plan->isModified());

        const QString planPath = m_dir.filePath(QStringLiteral("ctrl-s-plan.json"));
        QString error;
        QVERIFY2(window.surgery()->savePlan(planPath, &error), qPrintable(error));
        plan->removeLayer(QString::fromStdString(m_recipient->snapshot().model->path()), 0);
        QVERIFY(plan->isModified());
        QAction* save = window.findChild<QAction*>(QStringLiteral("savePlanAction"));
        QVERIFY(save != nullptr);
        QCOMPARE(save->shortcut(), QKeySequence(QKeySequence::Save));
        save->trigger(); // no dialog: a modal one would block here
        QVERIFY(!plan->isModified());
        QCOMPARE(loadGraftPlan(planPath.toStdString()).operations.size(), operations + 1);
    }

    // Save the plan; `organ assemble --plan` runs it. A plan made by `organ graft` opens
    // here and makes the same chimera. Assemble from the window, open the result.
    void plansAndAssembly() {
        app::MainWindow& window = *m_window;
        widgets::ModelView* recipient = m_recipient;
        widgets::ModelView* donor = m_donor;
        model::GraftDocument* plan = m_plan;
        const QString cli = m_cli;
        healInTheTree();
        const QString planPath = m_dir.filePath(QStringLiteral("healing-plan.json"));
        QString error;
        QVERIFY2(window.surgery()->savePlan(planPath, &error), qPrintable(error));
        QVERIFY(!plan->isModified());
        const QString cliPlan = m_dir.filePath(QStringLiteral("cli-plan.json"));
        QProcess graft;
        graft.start(cli, {QStringLiteral("graft"), QStringLiteral("--base"), m_damagedPath,
                          QStringLiteral("--donor"), m_healthyPath, QStringLiteral("--layers"),
                          QStringLiteral("1-3"), QStringLiteral("--system"), QStringLiteral("organ"),
                          QStringLiteral("-o"), m_dir.filePath(QStringLiteral("cli-chimera.gguf")),
                          QStringLiteral("--save-plan"), cliPlan});
        QVERIFY(graft.waitForFinished(60000));
        QVERIFY2(graft.exitCode() == 0, graft.readAllStandardError().constData());
        model::OpenModels both;
        both.take(recipient->snapshotPointer());
        both.take(donor->snapshotPointer());
        model::GraftDocument fromCli(&both);
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

        // Graft → Assemble chimera…: the dialog names the chimera ("<recipient> + <donor>
        // chimera" unless the user types another) and where to write it; the engine thread
        // assembles while the window answers.
        const QString output = m_dir.filePath(QStringLiteral("healed.gguf"));
        QSignalSpy ended(window.surgery()->assembly(), &app::AssemblyController::ended);
        QString suggested;
        ModalSteps steps;
        steps.then([&](QWidget* active) {
            if (active->objectName() != QStringLiteral("assembleDialog")) {
                return false;
            }
            auto* name = active->findChild<QLineEdit*>(QStringLiteral("chimeraName"));
            suggested = name->text();
            name->setText(QStringLiteral("Healed stories"));
            active->findChild<QLineEdit*>(QStringLiteral("chimeraPath"))->setText(output);
            saveScreenshot(active, QStringLiteral("surgery-assemble-dialog.png"));
            qobject_cast<QDialog*>(active)->accept();
            return true;
        });
        window.surgery()->assembly()->assembleDialog();
        QVERIFY(steps.done());
        QCOMPARE(suggested, QStringLiteral("stories260K-damaged-f32 + stories260K-f32 chimera"));
        QCOMPARE(plan->chimeraName(), QStringLiteral("Healed stories"));
        QVERIFY(plan->isModified()); // the name is part of the plan
        // Its progress is the status bar's while it runs.
        QVERIFY(window.surgery()->assembly()->isRunning());
        QVERIFY(window.jobStatus()->isVisible());
        QCOMPARE(window.jobStatus()->shownJob(), window.surgery()->assembly()->job());
        QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 60000);
        QCOMPARE(ended.at(0).at(0).toBool(), true);
        QVERIFY(!window.surgery()->assembly()->isRunning());
        // The bytes, as the engine test checks them: the 9 organs are the healthy model's,
        // every other tensor the damaged one's.
        const auto healed = GgufModel::open(output.toStdString());
        const auto healthy = GgufModel::open(m_healthyPath.toStdString());
        const auto damaged = GgufModel::open(m_damagedPath.toStdString());
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
        QCOMPARE(healed->name(), std::string("Healed stories"));
        // Saved with its name, the plan makes the same file from the command line.
        QVERIFY2(window.surgery()->savePlan(planPath, &error), qPrintable(error));
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
        widgets::ModelView* chimera = window.surgery()->findView(QFileInfo(output).absoluteFilePath());
        QVERIFY(chimera != nullptr && !chimera->isRecipient());
        QTRY_VERIFY_WITH_TIMEOUT(chimera->measurement() != nullptr, 20000);
        QCOMPARE(chimera->heatmap()->thetaAt(3, 8), donor->heatmap()->thetaAt(3, 8));
    }

    // The plan's file, as the dock's header names it: saved (at once, not at the next edit); a
    // cleared plan is a new, unsaved one (Undo brings the old one back with its file); each step
    // says what it did in the status bar, and Undo replaces what the edit said.
    void planFileAndStatus() {
        app::MainWindow& window = *m_window;
        model::GraftDocument* plan = m_plan;
        QLabel* header = window.surgery()->panel()->summaryLabel();
        healInTheTree();
        QVERIFY2(window.statusBar()->currentMessage().contains(QStringLiteral("Replaces 9 tensors")),
                 qPrintable(window.statusBar()->currentMessage()));
        plan->undoStack()->undo();
        QVERIFY2(window.statusBar()->currentMessage().startsWith(QStringLiteral("Undone: graft")),
                 qPrintable(window.statusBar()->currentMessage()));
        plan->undoStack()->redo();
        QVERIFY2(window.statusBar()->currentMessage().startsWith(QStringLiteral("Redone: graft")),
                 qPrintable(window.statusBar()->currentMessage()));
        QVERIFY(header->text().contains(QStringLiteral("unsaved plan")));
        const QString planPath = m_dir.filePath(QStringLiteral("file-handling-plan.json"));
        QString error;
        QVERIFY2(window.surgery()->savePlan(planPath, &error), qPrintable(error));
        QVERIFY2(header->text().contains(QStringLiteral("file-handling-plan.json")) &&
                     !header->text().contains(QStringLiteral("unsaved")) &&
                     !header->text().contains(QStringLiteral("modified")),
                 qPrintable(header->text()));
        // Saved again under its name (the stack is clean already): still named.
        QVERIFY2(window.surgery()->savePlan(planPath, &error), qPrintable(error));
        QVERIFY(header->text().contains(QStringLiteral("file-handling-plan.json")));

        window.surgery()->panel()->findChild<QToolButton*>(QStringLiteral("plan-clear"))->click();
        QVERIFY(plan->isEmpty());
        QVERIFY(plan->fileName().isEmpty());
        healInTheTree();
        QVERIFY2(header->text().contains(QStringLiteral("unsaved plan")), qPrintable(header->text()));
        plan->undoStack()->undo();
        plan->undoStack()->undo(); // the Clear
        QCOMPARE(plan->fileName(), planPath);
        QVERIFY(!plan->isModified());
        QVERIFY2(header->text().contains(QStringLiteral("file-handling-plan.json")),
                 qPrintable(header->text()));
    }

    // Assemble chimera…: the folder proposed is the one written to last; an existing file is
    // replaced only when the user says yes.
    void assembleAsksBeforeReplacing() {
        app::MainWindow& window = *m_window;
        healInTheTree();
        const QString folder = m_dir.filePath(QStringLiteral("written-last"));
        QVERIFY(QDir().mkpath(folder));
        const QString output = folder + QStringLiteral("/existing.gguf");
        {
            QFile existing(output);
            QVERIFY(existing.open(QIODevice::WriteOnly));
            existing.write("not a chimera");
        }
        widgets::rememberWriteFolder(output);
        QString proposed;
        QString question;
        QSignalSpy ended(window.surgery()->assembly(), &app::AssemblyController::ended);
        // The dialog, the output typed and Assemble clicked; then the question, answered.
        auto assembleInto = [&](ModalSteps& steps, QMessageBox::StandardButton answer) {
            steps
                .then([&](QWidget* active) {
                    if (active->objectName() != QStringLiteral("assembleDialog")) {
                        return false;
                    }
                    auto* path = active->findChild<QLineEdit*>(QStringLiteral("chimeraPath"));
                    proposed = path->text();
                    path->setText(output);
                    QPushButton* ok = active->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
                    QMetaObject::invokeMethod(ok, "click", Qt::QueuedConnection);
                    return true;
                })
                .then([&, answer](QWidget* active) {
                    auto* box = qobject_cast<QMessageBox*>(active);
                    if (box == nullptr) {
                        return false;
                    }
                    question = box->text();
                    QMetaObject::invokeMethod(box->button(answer), "click", Qt::QueuedConnection);
                    return true;
                });
        };
        ModalSteps steps;
        assembleInto(steps, QMessageBox::No);
        steps.then([&](QWidget* active) {
            if (active->objectName() != QStringLiteral("assembleDialog")) {
                return false;
            }
            // Still open after No: the user may choose another name, or Cancel.
            QMetaObject::invokeMethod(
                active->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Cancel), "click",
                Qt::QueuedConnection);
            return true;
        });
        window.surgery()->assembly()->assembleDialog();
        QVERIFY(steps.done());
        QVERIFY2(proposed.startsWith(folder + u'/'), qPrintable(proposed));
        QVERIFY2(question.contains(QStringLiteral("existing.gguf exists already")), qPrintable(question));
        QVERIFY(!window.surgery()->assembly()->isRunning());
        QCOMPARE(readAll(output), QByteArray("not a chimera"));

        ModalSteps yes;
        assembleInto(yes, QMessageBox::Yes);
        window.surgery()->assembly()->assembleDialog();
        QVERIFY(yes.done());
        QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 60000);
        QCOMPARE(ended.at(0).at(0).toBool(), true);
        QVERIFY(GgufModel::open(output.toStdString())->tensors().size() > 0);
        QTRY_VERIFY(window.findChild<QMessageBox*>(QStringLiteral("assemblyResult")) != nullptr);
        window.findChild<QMessageBox*>(QStringLiteral("assemblyResult"))->close();
    }

    // With a plan on another recipient, Purify…, Quantize… and the layer operations are offered disabled
    // with the reason, before any dialog; with a plan on this recipient, the layers to remove are
    // suggested from the planned chimera (Check chimera), not from the recipient's own vital signs.
    void refusalsAndPlannedSuggestions() {
        app::MainWindow& window = *m_window;
        widgets::ModelView* recipient = m_recipient;
        model::GraftDocument* plan = m_plan;
        healInTheTree();
        // A second recipient: the plan grafts into the first.
        QCOMPARE(window.openFiles({m_healthyPath}), 1);
        widgets::ModelView* other = window.currentView();
        QVERIFY(other->measurement() != nullptr); // open already, as the donor
        QVERIFY(other != recipient);
        other->showPage(widgets::ModelView::Page::Anatomy);
        QStringList disabled;
        QString tip;
        ModalSteps steps;
        steps.then([&](QWidget* active) {
            auto* menu = qobject_cast<QMenu*>(active);
            if (menu == nullptr) {
                return false;
            }
            for (QAction* action : menu->actions()) {
                if (!action->isEnabled() && !action->text().isEmpty()) {
                    disabled << action->text();
                    tip = action->toolTip();
                }
            }
            menu->close();
            return true;
        });
        QTreeView* tree = other->anatomyView();
        const QModelIndex layer = other->anatomyProxy()->mapFromSource(
            layerNode(other, QStringLiteral("organ"), QStringLiteral("layer 1")));
        tree->scrollTo(layer);
        emit tree->customContextMenuRequested(tree->visualRect(layer).center());
        QVERIFY(steps.done());
        QVERIFY2(disabled.size() == 5 && disabled[3].startsWith(QStringLiteral("Purify 3 tensors")) &&
                     disabled[4].startsWith(QStringLiteral("Quantize this model")),
                 qPrintable(disabled.join(u'|')));
        QVERIFY2(tip.contains(QStringLiteral("The plan grafts into stories260K-damaged-f32.gguf")),
                 qPrintable(tip));
        QCOMPARE(plan->plan().operations.size(), std::size_t(1));

        // The recipient's page waits for the planned chimera's check, then suggests from it.
        window.pane(app::MainWindow::Side::Recipient)->tabs()->setCurrentWidget(recipient);
        widgets::VitalsPage* page = recipient->vitalsPage();
        JobEnds ready(window.jobs(), "vitals");
        recipient->showPage(widgets::ModelView::Page::Vitals);
        QTest::mouseClick(page->takeButton(), Qt::LeftButton);
        QVERIFY(waitForJobs(ready, 1, 60000));
        QVERIFY(!page->suggestButton()->isEnabled());
        auto* suggestion = page->findChild<QLabel*>(QStringLiteral("removalSuggestion"));
        QVERIFY2(suggestion->text().contains(QStringLiteral("Check chimera")),
                 qPrintable(suggestion->text()));
        window.surgery()->panel()->findChild<QToolButton*>(QStringLiteral("plan-checkchimera"))->click();
        QVERIFY(waitForJobs(ready, 2, 60000));
        QVERIFY(page->suggestButton()->isEnabled());
        QVERIFY(window.surgery()->panel()->vitalsLabel()->isVisible());
        QVERIFY2(suggestion->text().contains(QStringLiteral("in the planned chimera: layer 2 ")),
                 qPrintable(suggestion->text()));
        // The damaged recipient's own least-needed layer is another (its sick layers change little).
        QCOMPARE(page->report()->importance.cheapest.front().first, 4u);
        const auto before = plan->plan().operations.size();
        QTest::mouseClick(page->suggestButton(), Qt::LeftButton);
        QCOMPARE(plan->plan().operations.size(), before + 1);
        QCOMPARE(plan->plan().operations.back().kind, GraftOperation::Kind::RemoveLayer);
        QCOMPARE(plan->plan().operations.back().toLayer, 2u);
        // An edit makes the check stale: the suggestion waits for a new one.
        QVERIFY(!page->suggestButton()->isEnabled());
    }

    void cancelAssembly() {
        app::MainWindow& window = *m_window;
        healInTheTree();
        QString error;
        // Cancel: with the engine's worker busy, the assembly is cancelled from the status bar
        // before it writes: a clear message and no file.
        WorkerHold hold(window.jobs());
        const QString cancelled = m_dir.filePath(QStringLiteral("cancelled.gguf"));
        QSignalSpy ended2(window.surgery()->assembly(), &app::AssemblyController::ended);
        QVERIFY2(window.surgery()->assembly()->start(cancelled, &error), qPrintable(error));
        QVERIFY(!window.surgery()->assembly()->start(cancelled, &error)); // one at a time
        QVERIFY2(window.jobStatus()->text().startsWith(QStringLiteral("Assembling cancelled.gguf")),
                 qPrintable(window.jobStatus()->text()));
        window.jobStatus()->findChild<QPushButton*>()->click(); // the status bar's Cancel
        hold.release();
        QTRY_COMPARE_WITH_TIMEOUT(ended2.count(), 1, 20000);
        QCOMPARE(ended2.at(0).at(0).toBool(), false);
        QVERIFY(window.statusBar()->currentMessage().contains(QStringLiteral("no file was written")));
        QVERIFY(!QFileInfo::exists(cancelled));
        QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("*.partial*")}).size(), 0);
    }

    void guardRails() {
        app::MainWindow& window = *m_window;
        widgets::ModelView* recipient = m_recipient;
        widgets::ModelView* donor = m_donor;
        model::GraftDocument* plan = m_plan;
        healInTheTree();
        QString error;
        QVERIFY2(window.surgery()->savePlan(m_dir.filePath(QStringLiteral("guarded-plan.json")), &error),
                 qPrintable(error));
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
};

QTEST_MAIN(TestWindowSurgery)
#include "tst_window_surgery.moc"
