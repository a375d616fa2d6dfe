// Plans survive: an unsaved graft plan is autosaved after each change; when its window is
// killed, the next start offers it back. The killed window is a real process: this test's
// own binary, started again in "child" mode.
#include "graft_document.h"
#include "main_window.h"
#include "plan_autosave.h"
#include "shared_models.h"
#include "surgery_controller.h"
#include "tensor_drag.h"
#include "window_test_support.h"

#include <QAbstractButton>
#include <QDir>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>
#include <cstdio>
#include <nlohmann/json.hpp>

using namespace organ;
using namespace organ::testing;

namespace {

constexpr const char* kChildMode = "ORGAN_RECOVERY_CHILD";

// The child: a window with a plan on the damaged/healthy pair (organs of layers 1-3 from
// the healthy model, then layer 0 duplicated), never saved. It says where the autosave is
// and waits to be killed.
int runChild() {
    app::MainWindow window;
    window.show();
    const QString damaged = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
    const QString healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
    if (window.openFiles({damaged}) != 1 || window.openFiles({healthy}, app::MainWindow::Side::Donor) != 1) {
        return 2;
    }
    model::GraftDocument* plan = window.surgery()->document();
    const QString base = QFileInfo(damaged).absoluteFilePath();
    model::TensorDrag drag;
    drag.model = QFileInfo(healthy).absoluteFilePath();
    const auto snapshot = plan->model(drag.model);
    for (const char* name : {"blk.1.ffn_up.weight", "blk.2.ffn_up.weight"}) {
        drag.tensors.push_back(int(snapshot->model->findTensor(name) - snapshot->model->tensors().data()));
    }
    if (!plan->dropTensors(drag, base, DropTarget{})) {
        return 3;
    }
    plan->duplicateLayer(base, 0);
    std::printf("%s\n", qPrintable(window.surgery()->autosave()->path()));
    std::fflush(stdout);
    return QApplication::exec();
}

nlohmann::json planJson(const GraftPlan& plan) {
    return graftPlanToJson(plan);
}

} // namespace

class TestWindowRecovery : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    // Starts the child, waits for its autosave, kills it (SIGKILL: no clean exit).
    void killChild(QString* autosave) {
        QProcess child;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QString::fromLatin1(kChildMode), QStringLiteral("1"));
        child.setProcessEnvironment(env);
        child.start(QCoreApplication::applicationFilePath(), {});
        QVERIFY(child.waitForStarted(10000));
        QTRY_VERIFY_WITH_TIMEOUT(child.canReadLine() || child.state() != QProcess::Running, 30000);
        *autosave = QString::fromLocal8Bit(child.readLine()).trimmed();
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(*autosave), 10000);
        child.kill();
        QVERIFY(child.waitForFinished(10000));
    }

private slots:
    void initTestCase() {
        initWindowTests(m_dir);
        QDir(app::PlanAutosave::folder()).removeRecursively();
    }

    // Each change is autosaved; saving, clearing and a clean exit remove the autosave.
    void autosavesEachChange() {
        const QString damaged = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        ORGAN_REQUIRE_SHARED(damaged);
        QString autosave;
        {
            app::MainWindow window;
            QCOMPARE(window.openFiles({damaged}), 1);
            autosave = window.surgery()->autosave()->path();
            QVERIFY(autosave.startsWith(app::PlanAutosave::folder()));
            QVERIFY(!QFileInfo::exists(autosave));
            const QString base = QFileInfo(damaged).absoluteFilePath();
            window.surgery()->document()->duplicateLayer(base, 1);
            QVERIFY(QFileInfo::exists(autosave));
            QCOMPARE(loadGraftPlan(autosave.toStdString()).operations.size(), std::size_t(1));
            window.surgery()->document()->removeLayer(base, 3);
            QVERIFY(planJson(loadGraftPlan(autosave.toStdString())) ==
                    planJson(window.surgery()->document()->plan()));
            QString error;
            QVERIFY2(window.surgery()->savePlan(m_dir.filePath(QStringLiteral("saved.json")), &error),
                     qPrintable(error));
            QVERIFY(!QFileInfo::exists(autosave)); // saved: nothing to recover
            window.surgery()->document()->undoStack()->undo();
            QVERIFY(QFileInfo::exists(autosave)); // modified again
            // A live session's autosave is never offered to another window.
            QVERIFY(app::PlanAutosave::orphans().empty());
        }
        QVERIFY(!QFileInfo::exists(autosave)); // a clean exit
    }

    // The killed window's plan is offered at the next start: Later keeps it, Recover
    // restores it (unsaved, its models open), and it is not offered twice.
    void recoversAfterAKill() {
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-damaged-f32.gguf")));
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-f32.gguf")));
        QString autosave;
        killChild(&autosave);
        if (QTest::currentTestFailed()) {
            return;
        }
        const nlohmann::json killed = planJson(loadGraftPlan(autosave.toStdString()));
        QCOMPARE(killed.at("operations").size(), std::size_t(2));
        {
            app::MainWindow window;
            window.show();
            QString question;
            ModalSteps steps;
            steps.then([&question](QWidget* active) {
                auto* box = qobject_cast<QMessageBox*>(active);
                if (box == nullptr || box->objectName() != QStringLiteral("recoverPlan")) {
                    return false;
                }
                question = box->text();
                for (QAbstractButton* button : box->buttons()) {
                    if (button->text() == QStringLiteral("Later")) {
                        button->click();
                    }
                }
                return true;
            });
            window.surgery()->offerRecovery();
            QVERIFY(steps.done());
            QVERIFY2(question.contains(QStringLiteral("2 operations into stories260K-damaged-f32.gguf")),
                     qPrintable(question));
            QVERIFY(window.surgery()->document()->isEmpty());
        }
        QVERIFY(QFileInfo::exists(autosave)); // "Later" keeps it
        app::MainWindow window;
        window.show();
        ModalSteps steps;
        steps.then([](QWidget* active) {
            auto* box = qobject_cast<QMessageBox*>(active);
            if (box == nullptr) {
                return false;
            }
            saveScreenshot(box, QStringLiteral("recover-plan.png"));
            for (QAbstractButton* button : box->buttons()) {
                if (button->text() == QStringLiteral("Recover")) {
                    button->click();
                }
            }
            return true;
        });
        window.surgery()->offerRecovery();
        QVERIFY(steps.done());
        model::GraftDocument* plan = window.surgery()->document();
        QVERIFY(planJson(plan->plan()) == killed);
        QVERIFY(plan->isModified());
        QVERIFY(plan->fileName().isEmpty());
        QVERIFY(plan->unavailable().isEmpty()); // its models were opened
        QCOMPARE(window.pane(app::MainWindow::Side::Recipient)->tabs()->count(), 1);
        QCOMPARE(window.pane(app::MainWindow::Side::Donor)->tabs()->count(), 1);
        QVERIFY(window.statusBar()->currentMessage().startsWith(QStringLiteral("Recovered the graft plan")));
        QVERIFY(!QFileInfo::exists(autosave));                            // taken over …
        QVERIFY(QFileInfo::exists(window.surgery()->autosave()->path())); // … by this session's autosave
        QVERIFY(app::PlanAutosave::orphans().empty());
        answerNextQuestion(QMessageBox::Discard);
        QVERIFY(window.close());
    }
};

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("OrganWorkbenchTests"));
    if (qEnvironmentVariableIsSet(kChildMode)) {
        return runChild();
    }
    TestWindowRecovery test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "tst_window_recovery.moc"
