// Quantize… on the recipient, as a user walks it: Graft → Quantize recipient… (or the tree's
// context menu) opens the dialog of organ quantize's options; "Quantize now…" adds the plan's
// quantize operation and goes on to the assembly, whose progress and Cancel are the status bar's;
// the file written is organ quantize's, tensor for tensor.
#include "assembly_controller.h"
#include "graft_document.h"
#include "job_ends.h"
#include "job_status.h"
#include "main_window.h"
#include "model_pane.h"
#include "model_view.h"
#include "quant/quantize_model.h"
#include "shared_models.h"
#include "surgery_controller.h"
#include "window_test_support.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QLabel>
#include <QMenuBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>

using namespace organ;
using namespace organ::testing;

class TestWindowQuantize : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<app::MainWindow> m_window;

    void openRecipient() {
        m_window = std::make_unique<app::MainWindow>();
        m_window->resize(1400, 900);
        m_window->show();
        JobEnds measured(m_window->jobs(), "measure");
        QCOMPARE(m_window->openFiles({familyModel("family-base-f16.gguf")}), 1);
        QVERIFY(waitForJobs(measured, 1, 60000));
    }

    QAction* quantizeMenuAction() const {
        return m_window->findChild<QAction*>(QStringLiteral("quantizeRecipientAction"));
    }

    // A step that fills the Quantize… dialog: Q4_K_M, the family's matrix, output.weight in Q8_0;
    // then presses `button` (posted: it opens the next dialog).
    static ModalSteps::Step fillDialog(const QString& imatrix, const char* button, QStringList* types) {
        return [imatrix, button, types](QWidget* active) {
            if (active->objectName() != QStringLiteral("quantizeDialog")) {
                return false;
            }
            auto* type = active->findChild<QComboBox*>(QStringLiteral("quantizeType"));
            for (int i = 0; i < type->count(); ++i) {
                types->append(type->itemData(i).toString());
            }
            type->setCurrentIndex(type->findData(QStringLiteral("Q4_K_M")));
            active->findChild<QLineEdit*>(QStringLiteral("quantizeImatrix"))->setText(imatrix);
            auto* output = active->findChild<QComboBox*>(QStringLiteral("quantizeOutputType"));
            output->setCurrentIndex(output->findData(QStringLiteral("Q8_0")));
            saveScreenshot(active, QStringLiteral("quantize-dialog.png"));
            auto* press = active->findChild<QPushButton*>(QString::fromLatin1(button));
            QMetaObject::invokeMethod(press, "click", Qt::QueuedConnection);
            return true;
        };
    }

    // A step that answers the assembly dialog with `output`, keeping what it proposed.
    static ModalSteps::Step assembleInto(const QString& output, QString* proposed) {
        return [output, proposed](QWidget* active) {
            if (active->objectName() != QStringLiteral("assembleDialog")) {
                return false;
            }
            auto* path = active->findChild<QLineEdit*>(QStringLiteral("chimeraPath"));
            *proposed = path->text();
            path->setText(output);
            QPushButton* ok = active->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
            QMetaObject::invokeMethod(ok, "click", Qt::QueuedConnection);
            return true;
        };
    }

private slots:
    void initTestCase() {
        initWindowTests(m_dir);
        ORGAN_REQUIRE_SHARED(familyModel("family-base-f16.gguf"));
        ORGAN_REQUIRE_SHARED(familyImatrix());
    }

    void cleanup() { m_window.reset(); }

    // Graft → Quantize recipient… → Quantize now… → Assemble: organ quantize's file.
    void quantizeNowFromTheMenu() {
        openRecipient();
        QAction* action = quantizeMenuAction();
        QVERIFY(action != nullptr);
        const QString output = m_dir.filePath(QStringLiteral("window-q4_k_m.gguf"));
        QStringList types;
        QString proposed;
        QSignalSpy ended(m_window->surgery()->assembly(), &app::AssemblyController::ended);
        ModalSteps steps;
        steps.then(fillDialog(familyImatrix(), "quantizeNow", &types)).then(assembleInto(output, &proposed));
        action->trigger();
        QTRY_VERIFY(steps.done());
        QCOMPARE(types.size(), 19);
        QVERIFY(types.contains(QStringLiteral("IQ4_XS")) && types.contains(QStringLiteral("Q3_K_L")));
        QVERIFY2(proposed.endsWith(QStringLiteral("/family-base-f16-q4_k_m.gguf")), qPrintable(proposed));
        // The plan holds it, and its progress is the status bar's while it runs.
        model::GraftDocument* plan = m_window->surgery()->document();
        QCOMPARE(plan->plan().operations.size(), std::size_t(1));
        QCOMPARE(plan->describe(0),
                 QStringLiteral("quantize to Q4_K_M with the importance matrix family-base-imatrix.gguf"));
        QVERIFY(m_window->surgery()->assembly()->isRunning());
        QVERIFY(m_window->jobStatus()->text().startsWith(QStringLiteral("Assembling window-q4_k_m.gguf")));
        QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 120000);
        QVERIFY2(ended.at(0).at(0).toBool(), qPrintable(ended.at(0).at(1).toString()));
        if (QMessageBox* box = visibleMessageBox()) {
            box->close();
        }

        // organ quantize with the same options writes the same tensors.
        QuantizeRecipe recipe;
        recipe.fileType = QuantFileType::Q4_K_M;
        recipe.imatrix = familyImatrix().toStdString();
        recipe.outputTensorType = TensorType::Q8_0;
        const ImatrixData matrix = readImatrix(recipe.imatrix);
        const QString expectedPath = m_dir.filePath(QStringLiteral("expected-q4_k_m.gguf"));
        const auto base = GgufModel::open(familyModel("family-base-f16.gguf").toStdString());
        QVERIFY(quantizeModel(*base, recipe, &matrix, expectedPath.toStdString()).written.isOk());
        const auto written = GgufModel::open(output.toStdString());
        const auto expected = GgufModel::open(expectedPath.toStdString());
        QCOMPARE(written->tensors().size(), expected->tensors().size());
        for (std::size_t i = 0; i < written->tensors().size(); ++i) {
            const TensorInfo& a = written->tensors()[i];
            const TensorInfo& b = expected->tensors()[i];
            QCOMPARE(a.name, b.name);
            QVERIFY2(a.type == b.type, a.name.c_str());
            QVERIFY2(std::ranges::equal(written->tensorData(a), expected->tensorData(b)), a.name.c_str());
        }
        QCOMPARE(written->findTensor("output.weight")->type, TensorType::Q8_0);
        // Only quantized, the model keeps its name.
        QCOMPARE(written->find("general.name")->asString(), base->find("general.name")->asString());
    }

    // The tree's "Quantize this model…": the dialog shows the plan's recipe, refuses what is not
    // one (and stays open), and a new recipe replaces the plan's quantize operation.
    void contextMenuReplacesThePlansRecipe() {
        openRecipient();
        model::GraftDocument* plan = m_window->surgery()->document();
        QuantizeRecipe first;
        first.fileType = QuantFileType::Q5_K_S;
        first.pure = true;
        plan->quantize(familyModel("family-base-f16.gguf"), first);
        widgets::ModelView* recipient = m_window->currentView();
        recipient->showPage(widgets::ModelView::Page::Anatomy);
        QString shownType;
        bool shownPure = false;
        QString problem;
        bool fits = false;
        QString sizes;
        ModalSteps steps;
        steps
            .then([](QWidget* active) {
                return chooseMenuAction(active, QStringLiteral("Quantize this model"));
            })
            .then([&](QWidget* active) {
                if (active->objectName() != QStringLiteral("quantizeDialog")) {
                    return false;
                }
                shownType =
                    active->findChild<QComboBox*>(QStringLiteral("quantizeType"))->currentData().toString();
                shownPure = active->findChild<QCheckBox*>(QStringLiteral("quantizePure"))->isChecked();
                active->findChild<QCheckBox*>(QStringLiteral("quantizePure"))->setChecked(false);
                auto* overrides = active->findChild<QLineEdit*>(QStringLiteral("quantizeTensorTypes"));
                QPushButton* add = active->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
                overrides->setText(QStringLiteral("ffn_down"));
                add->click();
                auto* label = active->findChild<QLabel*>(QStringLiteral("quantizeProblem"));
                problem = label->isVisible() && active->isVisible() ? label->text() : QString();
                // Grown by the problem's line: nothing above it squeezed.
                const int needed = active->layout()->totalHeightForWidth(active->width());
                fits = active->height() >= needed;
                sizes = QStringLiteral("%1 × %2, needs %3")
                            .arg(active->width())
                            .arg(active->height())
                            .arg(needed);
                overrides->setText(QStringLiteral("ffn_down=q6_k"));
                QMetaObject::invokeMethod(add, "click", Qt::QueuedConnection);
                return true;
            });
        emit recipient->anatomyView()->customContextMenuRequested(QPoint(5, 5));
        QTRY_VERIFY(steps.done());
        QCOMPARE(shownType, QStringLiteral("Q5_K_S"));
        QVERIFY(shownPure);
        QVERIFY2(problem.contains(QStringLiteral("REGEX=TYPE")), qPrintable(problem));
        QVERIFY2(fits, qPrintable(sizes));
        QTRY_VERIFY(!plan->plan().operations.front().quantize.pure);
        QCOMPARE(plan->plan().operations.size(), std::size_t(1));
        const QuantizeRecipe& now = plan->plan().operations.front().quantize;
        QCOMPARE(now.fileType, QuantFileType::Q5_K_S);
        QCOMPARE(now.tensorTypes.size(), std::size_t(1));
        QCOMPARE(now.tensorTypes.front().second, TensorType::Q6_K);
        QVERIFY(!plan->report().hasErrors());
        // Undo brings the first recipe back.
        plan->undoStack()->undo();
        QVERIFY(plan->plan().operations.front().quantize.pure);
    }

    // Cancelled from the status bar while it waits behind another job: no file, no partial one.
    void cancelFromTheStatusBar() {
        openRecipient();
        const QString output = m_dir.filePath(QStringLiteral("cancelled-q4_k_m.gguf"));
        QSignalSpy ended(m_window->surgery()->assembly(), &app::AssemblyController::ended);
        QStringList types;
        QString proposed;
        WorkerHold hold(m_window->jobs());
        ModalSteps steps;
        steps.then(fillDialog(familyImatrix(), "quantizeNow", &types)).then(assembleInto(output, &proposed));
        quantizeMenuAction()->trigger();
        QTRY_VERIFY(steps.done());
        QVERIFY(m_window->jobStatus()->text().startsWith(QStringLiteral("Assembling cancelled-q4_k_m.gguf")));
        m_window->jobStatus()->findChild<QPushButton*>()->click();
        hold.release();
        QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 60000);
        QCOMPARE(ended.at(0).at(0).toBool(), false);
        QVERIFY(m_window->statusBar()->currentMessage().contains(QStringLiteral("no file was written")));
        QVERIFY(!QFileInfo::exists(output));
        QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("*.partial*")}).size(), 0);
    }
};

QTEST_MAIN(TestWindowQuantize)
#include "tst_window_quantize.moc"
