// Organ directories and purification in the window: a directory opens like a GGUF (command line,
// drop of a folder, recent files) as recipient or donor; Extract to organ directory… runs on the
// engine thread with progress and Cancel; Purify… in the recipient's context menu adds a purify
// operation whose preview shows, on the heatmap, the θ the engine thread computed.
#include "anatomy_filter_proxy.h"
#include "assembly_controller.h"
#include "demo_models.h"
#include "graft_document.h"
#include "job_ends.h"
#include "job_status.h"
#include "main_window.h"
#include "model_pane.h"
#include "model_view.h"
#include "organs/organ_directory.h"
#include "organs_controller.h"
#include "purify/purify_model.h"
#include "shared_models.h"
#include "surgery_controller.h"
#include "theta_heatmap.h"
#include "window_test_support.h"
#include "worker_wait.h"
#include "write_folder.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMimeData>
#include <QProgressDialog>
#include <QPushButton>
#include <QSemaphore>
#include <QSettings>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>
#include <fstream>
#include <nlohmann/json.hpp>
#include <qcustomplot.h>

using namespace organ;
using namespace organ::testing;

class TestWindowOrgans : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_damagedOrgans;
    QString m_healthyOrgans;
    std::unique_ptr<app::MainWindow> m_window;

    // Opens the damaged model's organs as recipient (from the "command line": openFiles) and the
    // healthy model's as donor (by a drop of the folder on the donor pane), both measured.
    void openBoth() {
        m_window = std::make_unique<app::MainWindow>();
        m_window->resize(1500, 950);
        m_window->show();
        JobEnds finished(m_window->jobs(), "measure");
        QCOMPARE(m_window->openFiles({m_damagedOrgans}), 1);
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(m_healthyOrgans)});
        widgets::ModelPane* donors = m_window->pane(app::MainWindow::Side::Donor);
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(donors, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(donors, &drop);
        QCOMPARE(donors->tabs()->count(), 1);
        QVERIFY(waitForJobs(finished, 2, 20000));
    }

    // The texts of the heatmap's context menu on a tensor's cell (the menu is closed unused).
    static QStringList contextMenuOf(widgets::ThetaHeatmap* heatmap, int tensor) {
        QStringList seen;
        QTimer::singleShot(0, [&seen] {
            auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
            if (menu != nullptr) {
                for (QAction* action : menu->actions()) {
                    seen << action->text();
                }
                menu->close();
            }
        });
        emit heatmap->plot()->customContextMenuRequested(heatmap->pixelOfTensor(tensor));
        return seen;
    }

private slots:
    void initTestCase() {
        initWindowTests(m_dir);
        const QString damaged = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        const QString healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(damaged);
        m_damagedOrgans = m_dir.filePath(QStringLiteral("damaged-organs"));
        m_healthyOrgans = m_dir.filePath(QStringLiteral("healthy-organs"));
        QVERIFY(extractOrgans(*GgufModel::open(damaged.toStdString()), m_damagedOrgans.toStdString()).isOk());
        QVERIFY(extractOrgans(*GgufModel::open(healthy.toStdString()), m_healthyOrgans.toStdString()).isOk());
    }

    void cleanup() { m_window.reset(); }

    // A directory is a model like any other: its header says what it is, it is remembered among
    // the recent files, and its θ equals that of the GGUF it came from.
    void directoriesOpenLikeModels() {
        openBoth();
        widgets::ModelView* recipient = m_window->currentView();
        widgets::ModelView* donor = m_window->pane(app::MainWindow::Side::Donor)->currentView();
        QVERIFY(recipient->snapshot().model->hasTensorFiles());
        QVERIFY2(recipient->headerText().contains(QStringLiteral("organ directory, 48 tensor files")),
                 qPrintable(recipient->headerText()));
        QVERIFY(donor->snapshot().model->hasTensorFiles());
        QVERIFY(m_window->recentFiles().contains(QFileInfo(m_damagedOrgans).absoluteFilePath()));
        QVERIFY(m_window->recentFiles().contains(QFileInfo(m_healthyOrgans).absoluteFilePath()));
        // Measured as the GGUF it came from is, to the bit.
        JobEnds finished(m_window->jobs(), "measure");
        QCOMPARE(m_window->openFiles({sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"))}), 1);
        QVERIFY(waitForJobs(finished, 1, 20000));
        const widgets::ModelView* gguf = m_window->currentView();
        QVERIFY(gguf != recipient && !gguf->snapshot().model->hasTensorFiles());
        QVERIFY(recipient->measurement() != nullptr && gguf->measurement() != nullptr);
        QCOMPARE(recipient->measurement()->model.thetaMean, gguf->measurement()->model.thetaMean);
        for (std::size_t t = 0; t < gguf->measurement()->tensors.size(); ++t) {
            QCOMPARE(recipient->measurement()->tensors[t].theta, gguf->measurement()->tensors[t].theta);
        }
        m_window->pane(app::MainWindow::Side::Recipient)->tabs()->setCurrentIndex(0);
        saveScreenshot(m_window.get(), QStringLiteral("organ-directories-open.png"));
    }

    // Extract to organ directory…: the current model taken apart on the engine thread, the result
    // offered to open; an existing target refused; Cancel leaves nothing.
    void extraction() {
        openBoth();
        app::OrgansController* organs = m_window->organs();
        const QString target = m_dir.filePath(QStringLiteral("extracted"));
        QSignalSpy ended(organs, &app::OrgansController::extractionEnded);
        QString error;
        QVERIFY2(organs->startExtraction(m_window->currentView(), target, &error), qPrintable(error));
        QVERIFY(organs->isExtracting());
        QVERIFY(m_window->jobStatus()->text().startsWith(QStringLiteral("Extracting extracted")));
        QVERIFY(ended.wait(20000));
        QCOMPARE(ended.front().at(0).toBool(), true);
        QVERIFY(OrganDirectory::looksLikeOne(target.toStdString()));
        QVERIFY(!organs->isExtracting());
        QMessageBox* box = visibleMessageBox();
        QVERIFY(box != nullptr);
        QCOMPARE(box->objectName(), QStringLiteral("extractionResult"));
        box->findChild<QPushButton*>(QStringLiteral("openOrgansDonor"))->click();
        QCOMPARE(m_window->pane(app::MainWindow::Side::Donor)->tabs()->count(), 2);

        QVERIFY(!organs->startExtraction(m_window->currentView(), target, &error));
        QVERIFY2(error.contains(QStringLiteral("exists already")), qPrintable(error));

        // Cancel while the engine thread is held busy: nothing is written, not even a partial.
        const QString cancelled = m_dir.filePath(QStringLiteral("never"));
        QTRY_COMPARE_WITH_TIMEOUT(m_window->jobs()->liveCount(), 0, 20000); // the donor opened is measured
        WorkerHold hold(m_window->jobs());
        JobEnds cancelledJobs(m_window->jobs(), "extract");
        QVERIFY(organs->startExtraction(m_window->currentView(), cancelled, &error));
        QVERIFY(m_window->jobStatus()->text().startsWith(QStringLiteral("Extracting never")));
        QPushButton* cancel = m_window->jobStatus()->findChild<QPushButton*>();
        QVERIFY(cancel != nullptr);
        cancel->click();
        hold.release();
        QVERIFY(waitForJobs(cancelledJobs, 1, 20000));
        QCOMPARE(cancelledJobs.count(JobState::Cancelled), 1);
        QVERIFY(!QFileInfo::exists(cancelled));
        QVERIFY(QDir(m_dir.path()).entryList({QStringLiteral("never*")}, QDir::AllEntries).isEmpty());
    }

    // File → Extract to organ directory… with a row of the donor's tree clicked: the dialog names
    // the donor, proposes the folder written to last, and the directory holds the donor — not the
    // recipient, which the focus falls back to while the dialog closes.
    void extractTheFocusedDonor() {
        const QString damaged = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        const QString healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(healthy);
        m_window = std::make_unique<app::MainWindow>();
        m_window->resize(1280, 800);
        m_window->show();
        QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
        JobEnds finished(m_window->jobs(), "measure");
        QCOMPARE(m_window->openFiles({damaged}), 1);
        QCOMPARE(m_window->openFiles({healthy}, app::MainWindow::Side::Donor), 1);
        QVERIFY(waitForJobs(finished, 2, 20000));
        const QString written = m_dir.filePath(QStringLiteral("written-before/x.json"));
        QVERIFY(QDir().mkpath(QFileInfo(written).absolutePath()));
        widgets::rememberWriteFolder(written);

        widgets::ModelView* donor = m_window->pane(app::MainWindow::Side::Donor)->currentView();
        QTreeView* tree = donor->anatomyView();
        const QModelIndex row = tree->model()->index(0, 0);
        QTest::mouseClick(tree->viewport(), Qt::LeftButton, {}, tree->visualRect(row).center());
        QVERIFY(donor->isAncestorOf(QApplication::focusWidget()));

        const QString target = m_dir.filePath(QStringLiteral("donor-organs"));
        QString title;
        QString proposed;
        ModalSteps steps;
        steps.then([&](QWidget* active) {
            auto* dialog = qobject_cast<QFileDialog*>(active);
            if (dialog == nullptr || dialog->objectName() != QStringLiteral("extractDialog")) {
                return false;
            }
            title = dialog->windowTitle();
            proposed = dialog->directory().absolutePath();
            // As a user does: go to the folder, type the name (selectFile() leaves the name alone
            // once the name field has the focus, which it gets at a moment of its own).
            dialog->setDirectory(QFileInfo(target).absolutePath());
            dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"))
                ->setText(QFileInfo(target).fileName());
            QMetaObject::invokeMethod(dialog, "accept", Qt::QueuedConnection);
            return true;
        });
        QSignalSpy ended(m_window->organs(), &app::OrgansController::extractionEnded);
        QAction* extract = nullptr;
        for (QAction* action : m_window->menuBar()->actions().front()->menu()->actions()) {
            if (action->text().startsWith(QStringLiteral("E&xtract to organ directory"))) {
                extract = action;
            }
        }
        QVERIFY(extract != nullptr);
        extract->trigger();
        QVERIFY(steps.done());
        QVERIFY2(title.contains(QStringLiteral("stories260K-f32.gguf")), qPrintable(title));
        QCOMPARE(proposed, QFileInfo(written).absolutePath());
        QVERIFY(ended.wait(20000));
        QCOMPARE(ended.front().at(0).toBool(), true);
        const QString manifestPath = target + QStringLiteral("/manifest.json");
        QVERIFY2(QFileInfo::exists(manifestPath), qPrintable(manifestPath));
        std::ifstream manifest(manifestPath.toStdString());
        const auto json = nlohmann::json::parse(manifest);
        QCOMPARE(json.at("source").at("file").get<std::string>(), std::string("stories260K-f32.gguf"));
        if (QMessageBox* box = visibleMessageBox()) {
            box->close();
        }
    }

    // Purify… from the recipient's tree: the dialog's method and parameters become a purify
    // operation; the preview marks the purified cells and colours them with the θ the engine
    // thread computed — exactly what purifying them gives; the assembled chimera is purified.
    void purifyFromTheTree() {
        openBoth();
        widgets::ModelView* recipient = m_window->currentView();
        model::GraftDocument* plan = m_window->surgery()->document();
        recipient->showPage(widgets::ModelView::Page::Anatomy);
        ModalSteps steps;
        steps
            .then(
                [](QWidget* active) { return chooseMenuAction(active, QStringLiteral("Purify 3 tensors")); })
            .then([](QWidget* active) -> bool {
                if (active->objectName() != QStringLiteral("purifyDialog")) {
                    return false;
                }
                active->findChild<QComboBox*>(QStringLiteral("purifyMethod"))->setCurrentIndex(1);
                active->findChild<QDoubleSpinBox*>(QStringLiteral("purifyThreshold"))->setValue(0.5);
                if (active->findChild<QDoubleSpinBox*>(QStringLiteral("purifyKeep"))->isEnabled()) {
                    return false; // keep is fft's: the dialog must disable it for haar
                }
                active->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click();
                return true;
            });
        const QModelIndex layer2 = recipient->anatomyProxy()->mapFromSource(
            layerNode(recipient, QStringLiteral("organ"), QStringLiteral("layer 2")));
        emit recipient->anatomyView()->customContextMenuRequested(
            recipient->anatomyView()->visualRect(layer2).center());
        QTRY_VERIFY(steps.done());
        QCOMPARE(plan->plan().operations.size(), std::size_t(1));
        const GraftOperation& op = plan->plan().operations.front();
        QVERIFY(op.kind == GraftOperation::Kind::Purify);
        QVERIFY(op.purify.method == PurifyParams::Method::Haar);
        QCOMPARE(op.purify.threshold, 0.5);
        QCOMPARE(op.select.names.size(), std::size_t(3));
        QVERIFY(!plan->report().hasErrors());

        QTRY_VERIFY_WITH_TIMEOUT(!m_window->surgery()->purifyPreviewPending(), 20000);
        recipient->showPage(widgets::ModelView::Page::Heatmap);
        const auto& preview = recipient->heatmap()->preview();
        QCOMPARE(preview.size(), std::size_t(3));
        const GgufModel& model = *recipient->snapshot().model;
        for (const widgets::ThetaHeatmap::PreviewCell& cell : preview) {
            QVERIFY(cell.purified);
            QVERIFY(cell.theta.has_value());
            const TensorInfo& t = model.tensors()[std::size_t(cell.tensor)];
            const auto expected = purifyTensor(model, t, t.type, op.purify).report.thetaAfter;
            QCOMPARE(*cell.theta, *expected);
            // The cell shows it.
            const auto& roles = recipient->heatmap()->roles();
            const int row =
                int(std::find(roles.begin(), roles.end(), classifyTensor(t.name).role) - roles.begin());
            QCOMPARE(
                recipient->heatmap()->shownThetaAt(recipient->heatmap()->columnOfLayer(2), row).value_or(-1),
                *expected);
        }
        settle(m_window.get());
        saveScreenshot(m_window.get(), QStringLiteral("purify-preview.png"));

        const QString output = m_dir.filePath(QStringLiteral("purified-chimera.gguf"));
        JobEnds assembled(m_window->jobs(), "assemble");
        QString error;
        QVERIFY2(m_window->surgery()->assembly()->start(output, &error), qPrintable(error));
        QVERIFY(waitForJobs(assembled, 1, 30000));
        const auto chimera = GgufModel::open(output.toStdString());
        QCOMPARE(chimera->find("organ.purify.method")->asString().value_or(""), std::string_view("haar"));
        QCOMPARE(chimera->find("organ.purify.tensors")->arraySize(), std::uint64_t(3));
        if (QMessageBox* box = visibleMessageBox()) {
            box->close();
        }
    }

    // The heatmap's context menu offers Purify… for the cell under the pointer on the recipient
    // only.
    void purifyFromTheHeatmap() {
        openBoth();
        widgets::ModelView* recipient = m_window->currentView();
        recipient->showPage(widgets::ModelView::Page::Heatmap);
        settle(m_window.get());
        widgets::ThetaHeatmap* heatmap = recipient->heatmap();
        const auto& roles = heatmap->roles();
        const int ffnUp = int(std::find(roles.begin(), roles.end(), std::string("ffn_up")) - roles.begin());
        const int tensor = heatmap->tensorAt(heatmap->columnOfLayer(1), ffnUp);
        QVERIFY(tensor >= 0);
        QStringList seen = contextMenuOf(heatmap, tensor);
        const QString name =
            QString::fromStdString(recipient->snapshot().model->tensors()[std::size_t(tensor)].name);
        QVERIFY2(seen.contains(QStringLiteral("Purify %1…").arg(name)), qPrintable(seen.join(u'|')));
        // The donor's heatmap has no Purify….
        widgets::ModelView* donor = m_window->pane(app::MainWindow::Side::Donor)->currentView();
        donor->showPage(widgets::ModelView::Page::Heatmap);
        settle(m_window.get());
        seen = contextMenuOf(donor->heatmap(), tensor);
        QVERIFY(!seen.isEmpty());
        QVERIFY(std::none_of(seen.begin(), seen.end(),
                             [](const QString& t) { return t.startsWith(QStringLiteral("Purify")); }));
    }
};

QTEST_MAIN(TestWindowOrgans)
#include "tst_window_organs.moc"
