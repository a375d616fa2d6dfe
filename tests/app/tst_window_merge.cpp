// Merges in the window, as a user makes them: a donor's layer dragged onto the recipient's heatmap
// with Shift held asks how (the Merge… dialog: the method, each model's parameters, a weight that
// varies over the layers drawn as a curve whose points are dragged), the plan gets one merge
// operation, the heatmap previews each merged tensor's θ — the θ of the tensor the assembly then
// writes — and its Δ from the recipient, and Check chimera gives the merge's vital signs against
// each parent: those of the written file, taken again here.
#include "anatomy_filter_proxy.h"
#include "gguf/specimen.h"
#include "graft/assembly.h"
#include "graft_document.h"
#include "graft_plan_model.h"
#include "graft_plan_panel.h"
#include "job_ends.h"
#include "main_window.h"
#include "measure/zmeasure.h"
#include "merge_controller.h"
#include "merge_dialog.h"
#include "model_pane.h"
#include "model_view.h"
#include "param_curve_editor.h"
#include "shared_models.h"
#include "surgery_controller.h"
#include "tensor_drag.h"
#include "theta_heatmap.h"
#include "vitals/model_weights.h"
#include "vitals/vitals_report.h"
#include "window_test_support.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QGroupBox>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>
#include <QMimeData>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QToolButton>
#include <QToolTip>
#include <QTreeView>
#include <QUndoStack>

using namespace organ;
using namespace organ::testing;

class TestWindowMerge : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<app::MainWindow> m_window;
    widgets::ModelView* m_base = nullptr;
    widgets::ModelView* m_farm = nullptr;
    model::GraftDocument* m_plan = nullptr;

    static QString nameOf(const QString& path) { return QFileInfo(path).fileName(); }

    // A Shift drop of the donor's layer `layer` (its heatmap column) on the recipient's label of
    // `onto`, through the events the heatmap gets from a real drag.
    bool shiftDropLayer(std::uint32_t layer, std::uint32_t onto, QString* message) {
        widgets::ThetaHeatmap* from = m_farm->heatmap();
        widgets::ThetaHeatmap* to = m_base->heatmap();
        std::unique_ptr<QMimeData> column(
            model::encodeTensorDrag(*from->dragForColumn(from->columnOfLayer(layer))));
        const QRect cells = to->plot()->axisRect()->rect();
        const QPointF label(to->plot()->xAxis->coordToPixel(to->columnOfLayer(onto)), cells.bottom() + 8);
        QDragEnterEvent enter(label.toPoint(), Qt::CopyAction, column.get(), Qt::LeftButton,
                              Qt::ShiftModifier);
        QApplication::sendEvent(to->plot(), &enter);
        QDragMoveEvent move(label.toPoint(), Qt::CopyAction, column.get(), Qt::LeftButton, Qt::ShiftModifier);
        QApplication::sendEvent(to->plot(), &move);
        to->canDropAt(column.get(), label.toPoint(), message, true);
        QDropEvent drop(label, Qt::CopyAction, column.get(), Qt::LeftButton, Qt::ShiftModifier);
        QApplication::sendEvent(to->plot(), &drop);
        return drop.isAccepted();
    }

    // task_arithmetic of the farm (weight 1) on the base, models by path.
    MergeSpec farmOnTheBase() const {
        MergeSpec spec;
        spec.method = MergeMethod::TaskArithmetic;
        spec.base = m_base->snapshot().model->path();
        spec.models = {{m_farm->snapshot().model->path(), {{"weight", ParamValue::number(1)}}}};
        return spec;
    }

    // The dialog alone, for a base and two donors of six blocks, the tensors from `donor`.
    static widgets::MergeDialog::Setup dialogSetup(const QString& donor) {
        widgets::MergeDialog::Setup setup;
        setup.recipient = QStringLiteral("/m/base.gguf");
        setup.donors = {QStringLiteral("/m/farm.gguf"), QStringLiteral("/m/sea.gguf")};
        setup.donor = donor;
        setup.what = QStringLiteral("9 tensors");
        setup.blocks = 6;
        return setup;
    }

    // The Merge… dialog answered: ties, the farm at density 0.6, its weight varying over the
    // layers (the curve's last point dragged up to 1.5 with the mouse), then Add to plan.
    static ModalSteps::Step answerTies(QString* title, std::vector<double>* curve) {
        return [title, curve](QWidget* active) {
            if (active->objectName() != QStringLiteral("mergeDialog")) {
                return false;
            }
            *title = active->windowTitle();
            auto* method = active->findChild<QComboBox*>(QStringLiteral("mergeMethod"));
            method->setCurrentIndex(method->findText(QStringLiteral("ties")));
            active->findChild<QDoubleSpinBox*>(QStringLiteral("mergeDensity_1"))->setValue(0.6);
            // The weight starts at 0.8, then varies: the curve starts flat there.
            active->findChild<QDoubleSpinBox*>(QStringLiteral("mergeWeight_1"))->setValue(0.8);
            auto* param = active->findChild<QComboBox*>(QStringLiteral("mergeCurveParam"));
            param->setCurrentIndex(param->findText(QStringLiteral("weight of family-farm-f16.gguf")));
            auto* editor = active->findChild<widgets::ParamCurveEditor*>(QStringLiteral("mergeCurve"));
            settle(active);
            const QPoint last = editor->pixelOfPoint(2).toPoint();
            QTest::mousePress(editor, Qt::LeftButton, {}, last);
            QMouseEvent drag(QEvent::MouseMove, QPointF(last.x(), editor->yAxis->coordToPixel(1.5)),
                             editor->mapToGlobal(QPointF(last.x(), editor->yAxis->coordToPixel(1.5))),
                             Qt::NoButton, Qt::LeftButton, {});
            QApplication::sendEvent(editor, &drag);
            QTest::mouseRelease(editor, Qt::LeftButton, {}, editor->pixelOfPoint(2).toPoint());
            *curve = editor->points();
            settle(active);
            // Nothing squeezed: every group has the room it asks for.
            for (const QGroupBox* group : active->findChildren<QGroupBox*>()) {
                if (group->height() < group->minimumSizeHint().height()) {
                    qWarning() << group->title() << group->size() << "<" << group->minimumSizeHint();
                    return false;
                }
            }
            saveScreenshot(active, QStringLiteral("merge-dialog.png"));
            QMetaObject::invokeMethod(active->findChild<QPushButton*>(QStringLiteral("mergeAdd")), "click",
                                      Qt::QueuedConnection);
            return true;
        };
    }

private slots:
    void initTestCase() { initWindowTests(m_dir); }

    void init() {
        ORGAN_REQUIRE_SHARED(familyModel("family-base-f16.gguf"));
        ORGAN_REQUIRE_SHARED(familyModel("family-farm-f16.gguf"));
        ORGAN_REQUIRE_SHARED(familyModel("family-sea-f16.gguf"));
        m_window = std::make_unique<app::MainWindow>();
        m_window->resize(1500, 950);
        m_window->show();
        JobEnds measured(m_window->jobs(), "measure");
        QCOMPARE(m_window->openFiles({familyModel("family-base-f16.gguf")}), 1);
        QCOMPARE(
            m_window->openFiles({familyModel("family-sea-f16.gguf"), familyModel("family-farm-f16.gguf")},
                                app::MainWindow::Side::Donor),
            2);
        QVERIFY(waitForJobs(measured, 3, 60000));
        m_base = m_window->currentView();
        m_farm = m_window->pane(app::MainWindow::Side::Donor)->currentView();
        QCOMPARE(nameOf(QString::fromStdString(m_farm->snapshot().model->path())),
                 QStringLiteral("family-farm-f16.gguf"));
        m_plan = m_window->surgery()->document();
        m_base->showPage(widgets::ModelView::Page::Heatmap);
        m_farm->showPage(widgets::ModelView::Page::Heatmap);
        settle(m_window.get());
    }

    void cleanup() {
        m_window.reset();
        m_base = m_farm = nullptr;
        m_plan = nullptr;
    }

    // A role across layers (the donor heatmap's row label) merged on any cell merges that role in
    // every layer, as a plain drop replaces it in every layer.
    void roleRowMergesAcrossLayers() {
        widgets::ThetaHeatmap* from = m_farm->heatmap();
        widgets::ThetaHeatmap* to = m_base->heatmap();
        const auto& roles = from->roles();
        const auto role = std::find(roles.begin(), roles.end(), std::string("ffn_up"));
        QVERIFY(role != roles.end());
        std::unique_ptr<QMimeData> row(model::encodeTensorDrag(*from->dragForRow(int(role - roles.begin()))));
        const int cell =
            to->tensorAt(to->columnOfLayer(3),
                         int(std::find(to->roles().begin(), to->roles().end(), std::string("ffn_up")) -
                             to->roles().begin()));
        QVERIFY(cell >= 0);
        QString merged;
        QVERIFY2(to->canDropAt(row.get(), to->pixelOfTensor(cell), &merged, true), qPrintable(merged));
        QString replaced;
        QVERIFY2(to->canDropAt(row.get(), to->pixelOfTensor(cell), &replaced, false), qPrintable(replaced));
        QVERIFY2(merged.startsWith(QStringLiteral("Merges 6 tensors")), qPrintable(merged));
        QVERIFY2(replaced.contains(QStringLiteral("6 tensors")), qPrintable(replaced));
    }

    // A layer (its heatmap column) dropped with Shift on one cell of the same layer merges the
    // whole layer, as it replaces it there; the donor's tree's whole system on a cell merges that
    // cell's layer of it and says what it leaves out.
    void layerOnACellMergesTheLayer() {
        widgets::ThetaHeatmap* from = m_farm->heatmap();
        widgets::ThetaHeatmap* to = m_base->heatmap();
        std::unique_ptr<QMimeData> column(
            model::encodeTensorDrag(*from->dragForColumn(from->columnOfLayer(2))));
        const auto ffnUp = int(std::find(to->roles().begin(), to->roles().end(), std::string("ffn_up")) -
                               to->roles().begin());
        const int cell = to->tensorAt(to->columnOfLayer(2), ffnUp);
        QVERIFY(cell >= 0);
        QString merged;
        QVERIFY2(to->canDropAt(column.get(), to->pixelOfTensor(cell), &merged, true), qPrintable(merged));
        QVERIFY2(merged.startsWith(QStringLiteral("Merges 9 tensors")), qPrintable(merged));
        QString replaced;
        QVERIFY2(to->canDropAt(column.get(), to->pixelOfTensor(cell), &replaced, false),
                 qPrintable(replaced));
        QVERIFY2(replaced.contains(QStringLiteral("9 tensors")), qPrintable(replaced));
        // While dragging, a replacement that fits says how to merge instead, where a merge fits too.
        QCOMPARE(model::dragTooltip(replaced, true, false, true),
                 replaced + QStringLiteral("\nHold Shift to merge them instead of replacing"));
        QCOMPARE(model::dragTooltip(replaced, true, false, false), replaced);
        QCOMPARE(model::dragTooltip(merged, true, true, true), merged);
        QCOMPARE(model::dragTooltip(QStringLiteral("No"), false, false, false), QStringLiteral("No"));
        // Every organ of the farm (all layers) on layer 2's cell: layer 2's merge, the rest left out.
        model::TensorDrag organs;
        organs.model = QString::fromStdString(m_farm->snapshot().model->path());
        organs.pick = model::TensorDrag::Pick::Tensors;
        const auto& anatomy = m_farm->snapshot().anatomy.tensors;
        for (std::size_t t = 0; t < anatomy.size(); ++t) {
            if (anatomy[t].system == System::Organ) {
                organs.tensors.push_back(int(t));
            }
        }
        QString message;
        QVERIFY(m_plan->canMergeTensors(organs, QString::fromStdString(m_base->snapshot().model->path()),
                                        DropTarget{DropTarget::Kind::Tensor, System::Other, false, 2u, cell},
                                        &message));
        QVERIFY2(
            message.startsWith(QStringLiteral("Merges 3 tensors")) &&
                message.contains(QStringLiteral("; leaves out 15: blk.0.ffn_")) &&
                message.contains(QStringLiteral("not in layer 2 (a merge combines tensors of one name)")),
            qPrintable(message));
    }

    // Double-clicking the plan's merge opens its dialog on it: accepted as it is, nothing changes;
    // another method changes the merge, one undoable step.
    void doubleClickChangesTheMerge() {
        const QString base = QString::fromStdString(m_base->snapshot().model->path());
        const MergeSpec spec = farmOnTheBase();
        QVERIFY(m_plan->merge(base, spec, {"blk.1.ffn_up.weight", "blk.1.ffn_down.weight"}));
        QTableView* operations = m_window->surgery()->panel()->operationsView();
        const QModelIndex row = operations->model()->index(0, model::GraftPlanModel::Operation);
        QVERIFY2(row.data(Qt::ToolTipRole)
                     .toString()
                     .endsWith(QStringLiteral("Double-click to change the merge's method or parameters")),
                 qPrintable(row.data(Qt::ToolTipRole).toString()));
        const auto answer = [](const QString& method) {
            return [method](QWidget* active) {
                if (active->objectName() != QStringLiteral("mergeDialog")) {
                    return false;
                }
                auto* box = active->findChild<QComboBox*>(QStringLiteral("mergeMethod"));
                if (!method.isEmpty()) {
                    box->setCurrentIndex(box->findText(method));
                }
                QMetaObject::invokeMethod(active->findChild<QPushButton*>(QStringLiteral("mergeAdd")),
                                          "click", Qt::QueuedConnection);
                return true;
            };
        };
        const auto doubleClick = [&] {
            operations->scrollTo(row);
            const QPoint at = operations->visualRect(row).center();
            QTest::mousePress(operations->viewport(), Qt::LeftButton, {}, at);
            QTest::mouseRelease(operations->viewport(), Qt::LeftButton, {}, at);
            QTest::mouseDClick(operations->viewport(), Qt::LeftButton, {}, at);
        };
        ModalSteps same;
        same.then(answer(QString()));
        doubleClick();
        QTRY_VERIFY(same.done());
        QTRY_COMPARE(m_window->statusBar()->currentMessage(),
                     QStringLiteral("The plan merges these 2 tensors so already: nothing changed"));
        QCOMPARE(m_plan->undoStack()->count(), 1);
        ModalSteps linear;
        linear.then(answer(QStringLiteral("linear")));
        doubleClick();
        QTRY_VERIFY(linear.done());
        QTRY_COMPARE(m_plan->undoStack()->count(), 2);
        QCOMPARE(m_plan->undoStack()->undoText(), QStringLiteral("Change the merge of 2 tensors (linear)"));
        QCOMPARE(m_plan->plan().operations.front().merge.method, MergeMethod::Linear);
        QCOMPARE(m_plan->plan().operations.front().select.names.size(), std::size_t(2));
    }

    // The Shift hint shows only where a merge would fit: over the same layer, not over a map of one
    // layer onto another (a merge combines tensors of one name), in the tree and on the heatmap.
    void shiftHintOnlyWhereAMergeFits() {
        model::AnatomyTreeModel* tree = m_base->anatomyModel();
        std::unique_ptr<QMimeData> organs(m_farm->anatomyModel()->mimeData(
            {layerNode(m_farm, QStringLiteral("organ"), QStringLiteral("layer 2"))}));
        tree->setMergeDrop(false);
        QVERIFY(tree->canDropMimeData(organs.get(), Qt::CopyAction, -1, -1,
                                      layerNode(m_base, QStringLiteral("organ"), QStringLiteral("layer 2"))));
        QVERIFY(tree->mergeWouldFit());
        QVERIFY(tree->canDropMimeData(organs.get(), Qt::CopyAction, -1, -1,
                                      layerNode(m_base, QStringLiteral("organ"), QStringLiteral("layer 4"))));
        QVERIFY2(tree->dropMessage().contains(QStringLiteral("layer 2 → 4")),
                 qPrintable(tree->dropMessage()));
        QVERIFY(!tree->mergeWouldFit());

        m_base->showPage(widgets::ModelView::Page::Heatmap); // tooltips show over a visible heatmap
        settle(m_window.get());
        widgets::ThetaHeatmap* from = m_farm->heatmap();
        widgets::ThetaHeatmap* to = m_base->heatmap();
        std::unique_ptr<QMimeData> column(
            model::encodeTensorDrag(*from->dragForColumn(from->columnOfLayer(2))));
        const QRect cells = to->plot()->axisRect()->rect();
        const auto dragOver = [&](std::uint32_t layer) {
            const QPointF label(to->plot()->xAxis->coordToPixel(to->columnOfLayer(layer)),
                                cells.bottom() + 8);
            QDragEnterEvent enter(label.toPoint(), Qt::CopyAction, column.get(), Qt::LeftButton,
                                  Qt::NoModifier);
            QApplication::sendEvent(to->plot(), &enter);
            QDragMoveEvent move(label.toPoint(), Qt::CopyAction, column.get(), Qt::LeftButton,
                                Qt::NoModifier);
            QApplication::sendEvent(to->plot(), &move);
        };
        dragOver(2);
        QTRY_VERIFY2(
            QToolTip::text().endsWith(QStringLiteral("\nHold Shift to merge them instead of replacing")),
            qPrintable(QToolTip::text()));
        dragOver(4);
        QTRY_VERIFY2(QToolTip::text().contains(QStringLiteral("2 → 4")), qPrintable(QToolTip::text()));
        QVERIFY2(!QToolTip::text().contains(QStringLiteral("Hold Shift")), qPrintable(QToolTip::text()));
        QToolTip::hideText();
    }

    // Closing one donor of a merge of two keeps the merge with the other; closing the last one
    // removes it.
    void closingADonorKeepsTheOthersMerge() {
        const QString base = QString::fromStdString(m_base->snapshot().model->path());
        const std::string farm = m_farm->snapshot().model->path();
        const std::string sea = familyModel("family-sea-f16.gguf").toStdString();
        MergeSpec spec;
        spec.method = MergeMethod::TaskArithmetic;
        spec.base = base.toStdString();
        spec.models = {{farm, {{"weight", ParamValue::number(1)}}},
                       {sea, {{"weight", ParamValue::number(0.5)}}}};
        m_plan->merge(base, spec, {"blk.1.ffn_up.weight", "blk.1.ffn_down.weight"});
        QCOMPARE(m_plan->plan().operations.size(), std::size_t(1));
        QCOMPARE(m_plan->plan().operations.front().merge.models.size(), std::size_t(2));
        m_plan->removeOperationsUsing(QString::fromStdString(farm));
        QCOMPARE(m_plan->plan().operations.size(), std::size_t(1));
        const MergeSpec& left = m_plan->plan().operations.front().merge;
        QCOMPARE(left.models.size(), std::size_t(1));
        QCOMPARE(*m_plan->plan().donorPath(left.models.front().model), sea);
        QVERIFY2(!m_plan->report().hasErrors(),
                 qPrintable(QString::fromStdString(m_plan->report().findings.front().message)));
        m_plan->removeOperationsUsing(QString::fromStdString(sea));
        QVERIFY(m_plan->plan().operations.empty());
        m_plan->undoStack()->undo();
        m_plan->undoStack()->undo();
        QCOMPARE(m_plan->plan().operations.front().merge.models.size(), std::size_t(2));
    }

    // Each merge step says what it did, in the undo stack and in the status when undone; a merge
    // that changes nothing (Add to plan with the plan's own merge) is no step at all.
    void mergeStepsSayWhatTheyDid() {
        const QString base = QString::fromStdString(m_base->snapshot().model->path());
        MergeSpec spec = farmOnTheBase();
        QUndoStack* stack = m_plan->undoStack();
        QVERIFY(m_plan->merge(base, spec, {"blk.1.ffn_up.weight", "blk.1.ffn_down.weight"}));
        QCOMPARE(stack->undoText(), QStringLiteral("Merge 2 tensors (task_arithmetic)"));
        QVERIFY(!m_plan->merge(base, spec, {"blk.1.ffn_down.weight"}));
        QCOMPARE(stack->count(), 1);
        QCOMPARE(m_plan->lastDropMessage(),
                 QStringLiteral("The plan merges these 2 tensors so already: nothing changed"));
        QVERIFY(m_plan->merge(base, spec, {"blk.1.ffn_gate.weight"}));
        QCOMPARE(stack->undoText(),
                 QStringLiteral("Merge 1 tensor more (task_arithmetic, 3 tensors in all)"));
        spec.models.front().parameters["weight"] = ParamValue::number(0.5);
        QVERIFY(m_plan->merge(base, spec, {"blk.1.ffn_gate.weight"}));
        QCOMPARE(stack->undoText(), QStringLiteral("Change the merge of 3 tensors (task_arithmetic)"));
        spec.method = MergeMethod::Linear;
        QVERIFY(m_plan->merge(base, spec, {"blk.2.ffn_up.weight"}));
        QCOMPARE(stack->undoText(),
                 QStringLiteral("Merge 1 tensor more and change the merge (linear, 4 tensors in all)"));
        QCOMPARE(stack->count(), 4);
        // Replacing what the plan merges takes it out of the merge: said before the drop.
        model::TensorDrag organs;
        organs.model = QString::fromStdString(m_farm->snapshot().model->path());
        const auto& farmTensors = m_farm->snapshot().model->tensors();
        for (int t = 0; t < int(farmTensors.size()); ++t) {
            if (farmTensors[std::size_t(t)].name.starts_with("blk.1.ffn_")) {
                organs.tensors.push_back(t);
            }
        }
        QString replacing;
        const DropTarget layer1{DropTarget::Kind::Layer, System::Organ, true, 1u, -1};
        QVERIFY(m_plan->canDropTensors(organs, base, layer1, &replacing));
        QCOMPARE(replacing,
                 QStringLiteral("Replaces 3 tensors; all of them merged now, so taken out of the merge"));
        const DropTarget layer2{DropTarget::Kind::Layer, System::Organ, true, 2u, -1};
        QVERIFY(m_plan->canDropTensors(organs, base, layer2, &replacing));
        QCOMPARE(
            replacing,
            QStringLiteral("Maps layer 1 → 2: 3 tensors; 1 of them merged now, so taken out of the merge"));
        // Another system of that layer, none of it merged: nothing is taken out.
        model::TensorDrag attention;
        attention.model = organs.model;
        for (int t = 0; t < int(farmTensors.size()); ++t) {
            if (farmTensors[std::size_t(t)].name.starts_with("blk.1.attn_")) {
                attention.tensors.push_back(t);
            }
        }
        const DropTarget skeleton2{DropTarget::Kind::Layer, System::Skeleton, true, 2u, -1};
        QVERIFY(m_plan->canDropTensors(attention, base, skeleton2, &replacing));
        QCOMPARE(replacing, QStringLiteral("Maps layer 1 → 2: 4 tensors"));
        // The recipient itself (open as a donor too) is said to be it, merged or grafted.
        model::TensorDrag self;
        self.model = base;
        self.tensors = {0};
        QString why;
        QVERIFY(!m_plan->canMergeTensors(self, base, DropTarget{}, &why));
        QCOMPARE(why,
                 QStringLiteral("family-base-f16.gguf is the recipient itself: a merge needs another model"));
        QVERIFY(!m_plan->canDropTensors(self, base, DropTarget{}, &why));
        QCOMPARE(why,
                 QStringLiteral("family-base-f16.gguf is the recipient itself: drag from another model"));
        stack->undo();
        QCOMPARE(
            m_window->statusBar()->currentMessage(),
            QStringLiteral("Undone: Merge 1 tensor more and change the merge (linear, 4 tensors in all)"));
        stack->undo();
        QCOMPARE(m_window->statusBar()->currentMessage(),
                 QStringLiteral("Undone: Change the merge of 3 tensors (task_arithmetic)"));
    }

    // Shift + drop of layer 2 on layer 2 → the dialog → one merge operation; the preview's θ are
    // those of the written file, and Check chimera's vital signs those of the written file.
    void shiftDropMergesALayer() {
        QString message;
        // Onto another layer it is refused: a merge combines tensors of one name.
        QVERIFY(!shiftDropLayer(2, 3, &message));
        QVERIFY2(message.contains(QStringLiteral("None of the dragged tensors is in layer 3")),
                 qPrintable(message));
        QVERIFY(m_plan->isEmpty());

        QString title;
        std::vector<double> curve;
        ModalSteps steps;
        steps.then(answerTies(&title, &curve));
        QVERIFY2(shiftDropLayer(2, 2, &message), qPrintable(message));
        QCOMPARE(message,
                 QStringLiteral("Merges 9 tensors with family-farm-f16.gguf (Shift held: merge instead "
                                "of replace)"));
        QTRY_VERIFY(steps.done());
        QCOMPARE(title, QStringLiteral("Merge into family-base-f16.gguf"));
        QCOMPARE(curve.size(), std::size_t(3));
        QCOMPARE(curve[0], 0.8);
        QVERIFY2(std::abs(curve[2] - 1.5) < 0.02, qPrintable(QString::number(curve[2])));
        // A dragged point lands on hundredths.
        QVERIFY2(std::abs(curve[2] * 100 - std::round(curve[2] * 100)) < 1e-9,
                 qPrintable(QString::number(curve[2], 'g', 17)));

        // The plan: one merge of layer 2's 9 tensors, ties with the farm's weight as a gradient.
        QTRY_COMPARE(m_plan->plan().operations.size(), std::size_t(1));
        const GraftOperation& op = m_plan->plan().operations.front();
        QCOMPARE(op.kind, GraftOperation::Kind::Merge);
        QCOMPARE(op.merge.method, MergeMethod::Ties);
        QCOMPARE(op.merge.base, std::string("base"));
        QCOMPARE(op.select.names.size(), std::size_t(9));
        for (const std::string& name : op.select.names) {
            QVERIFY2(name.rfind("blk.2.", 0) == 0, name.c_str());
        }
        QCOMPARE(op.merge.models.size(), std::size_t(1));
        const MergeModel& farm = op.merge.models.front();
        QCOMPARE(farm.model, m_plan->plan().donors.front().first);
        QCOMPARE(farm.parameters.at("weight").rules.front().points, curve);
        QCOMPARE(farm.parameters.at("density"), ParamValue::number(0.6));
        QVERIFY(!m_plan->report().hasErrors());
        QCOMPARE(m_plan->report().layout.tensorsMerged, std::uint64_t(9));
        QCOMPARE(m_plan->describe(0),
                 QStringLiteral(
                     "merge skeleton, organ and norm of layer 2 (9 tensors) with family-farm-f16 (ties)"));

        // The plan panel counts them and names the models merged from.
        widgets::GraftPlanPanel* panel = m_window->surgery()->panel();
        QVERIFY2(panel->summaryLabel()->text().contains(QStringLiteral("9 tensors merged")),
                 qPrintable(panel->summaryLabel()->text()));
        const QAbstractItemModel* operations = panel->operationsView()->model();
        QCOMPARE(operations->index(0, 2).data().toString(), QStringLiteral("family-farm-f16"));
        QCOMPARE(operations->index(0, 3).data().toInt(), 9);

        // The preview: each merged cell outlined, its θ computed on the engine thread.
        widgets::ThetaHeatmap* heatmap = m_base->heatmap();
        QTRY_VERIFY_WITH_TIMEOUT(
            !m_window->surgery()->merges()->pending() && heatmap->preview().size() == 9 &&
                std::all_of(heatmap->preview().begin(), heatmap->preview().end(),
                            [](const auto& c) { return c.merged && c.theta.has_value(); }),
            60000);
        const QString legend = m_base->planPreviewLabel()->text();
        QVERIFY2(legend.contains(QStringLiteral("merged: ties of the recipient and family-farm-f16 (9")) &&
                     legend.contains(QStringLiteral("Δθ mean")),
                 qPrintable(legend));
        // A plan that only merges has no dashed outlines to speak of.
        QVERIFY2(legend.startsWith(QStringLiteral("<b>Plan preview</b>: ")), qPrintable(legend));
        // The recipient's tree marks what the plan merges, in the merge's colour.
        model::AnatomyTreeModel* tree = m_base->anatomyModel();
        const QModelIndex upRow = tree->indexOfTensor(tensorOf(m_base, "blk.2.ffn_up.weight"));
        QVERIFY2(
            upRow.data(Qt::ToolTipRole)
                .toString()
                .endsWith(QStringLiteral("\nThe plan merges it (ties of the recipient and family-farm-f16)")),
            qPrintable(upRow.data(Qt::ToolTipRole).toString()));
        QCOMPARE(layerNode(m_base, QStringLiteral("organ"), QStringLiteral("layer 2"))
                     .data(Qt::ToolTipRole)
                     .toString(),
                 QStringLiteral("The plan merges 3 of its 3 tensors"));
        QVERIFY(!layerNode(m_base, QStringLiteral("organ"), QStringLiteral("layer 1"))
                     .data(Qt::ToolTipRole)
                     .isValid());
        settle(m_window.get());
        saveScreenshot(m_window.get(), QStringLiteral("merge-preview.png"));

        // Written, the chimera's tensors have exactly the θ the preview showed.
        const QString output = m_dir.filePath(QStringLiteral("merged.gguf"));
        std::string missing;
        const auto models = m_plan->openModels(m_plan->plan(), &missing);
        QVERIFY(models.has_value());
        const GraftModels graftModels = GraftModels::fromModels(*models);
        const JobResult written =
            assembleChimera(m_plan->plan(), graftModels, m_plan->report(), RootedPath(output.toStdString()));
        QVERIFY2(written.isOk(), written.message.c_str());
        const auto chimera = GgufModel::open(RootedPath(output.toStdString()));
        for (const auto& cell : heatmap->preview()) {
            const TensorInfo& mine = m_base->snapshot().model->tensors()[std::size_t(cell.tensor)];
            const TensorInfo* made = chimera->findTensor(mine.name);
            QVERIFY(made != nullptr);
            const auto measured =
                measureTensor(made->type, chimera->tensorData(*made), made->elements, ZParams{});
            QVERIFY(measured && measured->theta);
            QCOMPARE(*cell.theta, *measured->theta);
        }
        // A merge that changed nothing would show the recipient's θ: these differ.
        const TensorInfo* up = m_base->snapshot().model->findTensor("blk.2.ffn_up.weight");
        const auto& own =
            m_base->measurement()->tensors[std::size_t(up - m_base->snapshot().model->tensors().data())];
        QVERIFY(std::any_of(heatmap->preview().begin(), heatmap->preview().end(),
                            [&](const auto& c) { return *c.theta != *own.theta; }));

        // Check chimera: the planned merge against the recipient and each donor, nothing written;
        // the written file's vital signs are the same numbers.
        JobEnds checked(m_window->jobs(), "vitals");
        panel->findChild<QToolButton*>(QStringLiteral("plan-checkchimera"))->click();
        QVERIFY(waitForJobs(checked, 1, 120000));
        const QString text = panel->vitalsLabel()->text();
        std::vector<const ModelWeights*> parents;
        const ModelWeights base = ModelWeights::ofModel(models->at(0).second);
        const ModelWeights donor = ModelWeights::ofModel(models->at(1).second);
        parents = {&base, &donor};
        const auto report = takeVitals(ModelWeights::ofModel(chimera), parents, VitalsRequest{});
        QVERIFY(report.has_value());
        const QString expected = QString::number(report->perplexity.perplexity, 'f', 4);
        QVERIFY2(text.contains(QStringLiteral("%1 (the recipient) → <b>%2</b>")
                                   .arg(QString::number(report->parents.at(0).perplexity.perplexity, 'f', 4),
                                        expected)),
                 qPrintable(text + QStringLiteral(" / ") + expected));
        for (const auto& p : report->parents) {
            const QString kl = QStringLiteral("KL to <b>%1</b> %2 (its perplexity %3, ")
                                   .arg(QString::fromStdString(p.label).toHtmlEscaped(),
                                        QString::number(p.divergence.meanKl, 'f', 4),
                                        QString::number(p.perplexity.perplexity, 'f', 4));
            QVERIFY2(text.contains(kl), qPrintable(text + QStringLiteral(" / ") + kl));
        }
        QVERIFY(report->parents.at(1).divergence.meanKl > 0);
        settle(m_window.get());
        saveScreenshot(m_window.get(), QStringLiteral("merge-check-chimera.png"));
    }

    // A second merge joins the plan's one (a plan merges once): the dialog opens with the plan's
    // method and curve, the tensors add up; undo takes the step back. A donor's context menu
    // merges the whole model; the tree's Shift drop is a merge too.
    void mergesJoinAndUndo() {
        QString title;
        std::vector<double> curve;
        ModalSteps first;
        first.then(answerTies(&title, &curve));
        QString message;
        QVERIFY(shiftDropLayer(1, 1, &message));
        QTRY_VERIFY(first.done());
        QTRY_COMPARE(m_plan->plan().operations.size(), std::size_t(1));

        // The tree: layer 3 of the farm's skeleton dropped with Shift on the recipient's tree.
        QString method;
        int points = 0;
        QString note;
        ModalSteps second;
        second.then([&](QWidget* active) {
            if (active->objectName() != QStringLiteral("mergeDialog")) {
                return false;
            }
            method = active->findChild<QComboBox*>(QStringLiteral("mergeMethod"))->currentText();
            points = active->findChild<QSpinBox*>(QStringLiteral("mergeCurvePoints"))->value();
            for (QLabel* label : active->findChildren<QLabel*>()) {
                note += label->text();
            }
            QMetaObject::invokeMethod(active->findChild<QPushButton*>(QStringLiteral("mergeAdd")), "click",
                                      Qt::QueuedConnection);
            return true;
        });
        std::unique_ptr<QMimeData> skeleton(m_farm->anatomyModel()->mimeData(
            {layerNode(m_farm, QStringLiteral("skeleton"), QStringLiteral("layer 3"))}));
        QTreeView* tree = m_base->anatomyView();
        m_base->showPage(widgets::ModelView::Page::Anatomy);
        settle(m_window.get());
        const QModelIndex target = m_base->anatomyProxy()->mapFromSource(
            layerNode(m_base, QStringLiteral("skeleton"), QStringLiteral("layer 3")));
        tree->scrollTo(target);
        const QPoint at = tree->visualRect(target).center();
        QDragEnterEvent enter(at, Qt::CopyAction, skeleton.get(), Qt::LeftButton, Qt::ShiftModifier);
        QApplication::sendEvent(tree->viewport(), &enter);
        QDragMoveEvent move(at, Qt::CopyAction, skeleton.get(), Qt::LeftButton, Qt::ShiftModifier);
        QApplication::sendEvent(tree->viewport(), &move);
        QVERIFY2(m_base->anatomyModel()->dropMessage().startsWith(QStringLiteral("Merges 4 tensors")),
                 qPrintable(m_base->anatomyModel()->dropMessage()));
        QDropEvent drop(at, Qt::CopyAction, skeleton.get(), Qt::LeftButton, Qt::ShiftModifier);
        QApplication::sendEvent(tree->viewport(), &drop);
        QTRY_VERIFY(second.done());
        QCOMPARE(method, QStringLiteral("ties"));
        QCOMPARE(points, 3);
        QVERIFY2(note.contains(QStringLiteral("a plan merges once")), qPrintable(note));
        QTRY_COMPARE(m_plan->report().layout.tensorsMerged, std::uint64_t(13));
        QCOMPARE(m_plan->plan().operations.size(), std::size_t(1));
        QCOMPARE(m_plan->plan()
                     .operations.front()
                     .merge.models.front()
                     .parameters.at("weight")
                     .rules.front()
                     .points,
                 curve);
        m_plan->undoStack()->undo();
        QCOMPARE(m_plan->report().layout.tensorsMerged, std::uint64_t(9));

        // The donor's menu: the whole sea model, linear with the recipient, into the plan's merge.
        widgets::ModelView* sea = m_window->pane(app::MainWindow::Side::Donor)->views().front();
        ModalSteps third;
        third.then([](QWidget* active) {
            if (active->objectName() != QStringLiteral("mergeDialog")) {
                return false;
            }
            auto* method = active->findChild<QComboBox*>(QStringLiteral("mergeMethod"));
            method->setCurrentIndex(method->findText(QStringLiteral("linear")));
            // The recipient is one of the models of a linear merge; the farm is dropped.
            if (!active->findChild<QCheckBox*>(QStringLiteral("mergeUse_0"))->isEnabled()) {
                return false;
            }
            active->findChild<QCheckBox*>(QStringLiteral("mergeUse_2"))->setChecked(false);
            QMetaObject::invokeMethod(active->findChild<QPushButton*>(QStringLiteral("mergeAdd")), "click",
                                      Qt::QueuedConnection);
            return true;
        });
        // From the menu of one of its layers: that layer's tensors, or the whole model.
        sea->showPage(widgets::ModelView::Page::Anatomy);
        QStringList offered;
        QTimer::singleShot(0, [&offered] {
            auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
            QVERIFY(menu != nullptr);
            for (QAction* action : menu->actions()) {
                offered << action->text();
                if (action->objectName() == QStringLiteral("mergeModelAction")) {
                    action->trigger();
                }
            }
            menu->close();
        });
        const QModelIndex layer = sea->anatomyProxy()->mapFromSource(
            layerNode(sea, QStringLiteral("organ"), QStringLiteral("layer 1")));
        emit sea->anatomyView()->customContextMenuRequested(sea->anatomyView()->visualRect(layer).center());
        QVERIFY2(offered.contains(QStringLiteral("Merge 3 tensors into the recipient…")) &&
                     offered.contains(QStringLiteral("Merge the whole model into the recipient…")),
                 qPrintable(offered.join(QStringLiteral(" | "))));
        QTRY_VERIFY(third.done());
        QTRY_VERIFY(m_plan->plan().operations.front().merge.method == MergeMethod::Linear);
        const MergeSpec& linear = m_plan->plan().operations.front().merge;
        QVERIFY(linear.base.empty());
        QCOMPARE(linear.models.size(), std::size_t(2));
        QCOMPARE(linear.models[0].model, std::string("base"));
        // The window names the plan's base the recipient, as its panes do.
        QVERIFY2(m_plan->describe(0).contains(QStringLiteral(" with the recipient and ")),
                 qPrintable(m_plan->describe(0)));
        QVERIFY2(
            m_window->surgery()->panel()->operationsView()->model()->index(0, 2).data().toString().startsWith(
                QStringLiteral("the recipient, ")),
            qPrintable(
                m_window->surgery()->panel()->operationsView()->model()->index(0, 2).data().toString()));
        QVERIFY(!m_plan->report().hasErrors());
        QCOMPARE(m_plan->report().layout.tensorsMerged,
                 std::uint64_t(m_base->snapshot().model->tensors().size()));
    }

    // An open donor whose tensors have other shapes cannot take part: its box is off, disabled and
    // says why (it could be checked and added, the plan then in error).
    void unfitDonorCannotTakePart() {
        const QString narrow = m_dir.filePath(QStringLiteral("narrow.gguf"));
        QVERIFY(writeSpecimen(narrow.toStdString(), 5).isOk());
        QCOMPARE(m_window->openFiles({narrow}, app::MainWindow::Side::Donor), 1);
        QString text;
        QString tip;
        bool enabled = true;
        bool checked = true;
        ModalSteps steps;
        steps.then([&](QWidget* active) {
            if (active->objectName() != QStringLiteral("mergeDialog")) {
                return false;
            }
            for (QCheckBox* use : active->findChildren<QCheckBox*>()) {
                if (use->objectName().startsWith(QStringLiteral("mergeUse_")) &&
                    use->text().startsWith(QStringLiteral("narrow.gguf"))) {
                    text = use->text();
                    tip = use->toolTip();
                    enabled = use->isEnabled();
                    checked = use->isChecked();
                }
            }
            qobject_cast<QDialog*>(active)->reject();
            return true;
        });
        emit m_farm->mergeRequested({});
        QTRY_VERIFY(steps.done());
        QCOMPARE(text, QStringLiteral("narrow.gguf (cannot take part)"));
        QVERIFY(!enabled && !checked);
        QVERIFY2(tip.startsWith(
                     QStringLiteral("None of these tensors has the recipient's shape in narrow.gguf (")),
                 qPrintable(tip));
    }

    // The dialog on its own: what each method takes, and the merges it refuses before the plan
    // sees them (the merge spec's own words).
    void dialogRefusesWhatCannotMerge() {
        widgets::MergeDialog dialog(dialogSetup(QStringLiteral("/m/farm.gguf")));
        auto* method = dialog.findChild<QComboBox*>(QStringLiteral("mergeMethod"));
        auto* ok = dialog.findChild<QPushButton*>(QStringLiteral("mergeAdd"));
        auto pick = [&](const char* name) {
            method->setCurrentIndex(method->findText(QString::fromLatin1(name)));
        };
        pick("model_stock");
        QVERIFY2(dialog.problem().contains(QStringLiteral("model_stock needs at least two models")),
                 qPrintable(dialog.problem()));
        QVERIFY(!ok->isEnabled());
        dialog.findChild<QCheckBox*>(QStringLiteral("mergeUse_2"))->setChecked(true);
        QVERIFY2(dialog.problem().isEmpty(), qPrintable(dialog.problem()));
        QVERIFY(ok->isEnabled());
        pick("slerp");
        QVERIFY2(dialog.problem().contains(QStringLiteral("slerp merges two models")),
                 qPrintable(dialog.problem()));
        dialog.findChild<QCheckBox*>(QStringLiteral("mergeUse_2"))->setChecked(false);
        QVERIFY(dialog.problem().isEmpty());
        QCOMPARE(dialog.spec().parameters.at("t"), ParamValue::number(0.5));
        QVERIFY(!dialog.findChild<QDoubleSpinBox*>(QStringLiteral("mergeWeight_1"))->isEnabled());
        // Unchecking the donor the tensors come from is refused by name.
        pick("task_arithmetic");
        dialog.findChild<QCheckBox*>(QStringLiteral("mergeUse_1"))->setChecked(false);
        dialog.findChild<QCheckBox*>(QStringLiteral("mergeUse_2"))->setChecked(true);
        QCOMPARE(dialog.problem(), QStringLiteral("Check farm.gguf: the tensors come from it"));
        dialog.findChild<QCheckBox*>(QStringLiteral("mergeUse_1"))->setChecked(true);
        // dare_ties: density, rescale and the seed; the spec says them.
        pick("dare_ties");
        dialog.findChild<QSpinBox*>(QStringLiteral("mergeSeed"))->setValue(42);
        dialog.findChild<QCheckBox*>(QStringLiteral("mergeRescale"))->setChecked(false);
        const MergeSpec spec = dialog.spec();
        QCOMPARE(spec.base, std::string("/m/base.gguf"));
        QCOMPARE(spec.seed, std::uint64_t(42));
        QCOMPARE(spec.rescale, std::optional<bool>(false));
        QCOMPARE(spec.models.size(), std::size_t(2));
        QCOMPARE(spec.models[1].parameters.at("density"), ParamValue::number(0.5));
        QVERIFY(dialog.findChild<QDoubleSpinBox*>(QStringLiteral("mergeGamma_1"))->isEnabled() == false);
        // linear with normalize, weights that sum to 0: refused here, as the plan would refuse it.
        pick("linear");
        dialog.findChild<QCheckBox*>(QStringLiteral("mergeUse_0"))->setChecked(true);
        dialog.findChild<QCheckBox*>(QStringLiteral("mergeUse_2"))->setChecked(false);
        dialog.findChild<QCheckBox*>(QStringLiteral("mergeNormalize"))->setChecked(true);
        dialog.findChild<QDoubleSpinBox*>(QStringLiteral("mergeWeight_0"))->setValue(0.5);
        dialog.findChild<QDoubleSpinBox*>(QStringLiteral("mergeWeight_1"))->setValue(-0.5);
        QVERIFY2(
            dialog.problem().contains(QStringLiteral("sum to 0, and linear's normalize divides by the sum")),
            qPrintable(dialog.problem()));
        QVERIFY(!ok->isEnabled());
        dialog.findChild<QDoubleSpinBox*>(QStringLiteral("mergeWeight_1"))->setValue(0.5);
        QVERIFY2(dialog.problem().isEmpty(), qPrintable(dialog.problem()));
    }

    // A method tried and left keeps what the user set: normalize as chosen, and the parameter that
    // varies over the layers with its curve.
    void methodSwitchKeepsTheSettings() {
        widgets::MergeDialog dialog(dialogSetup(QStringLiteral("/m/sea.gguf")));
        auto* method = dialog.findChild<QComboBox*>(QStringLiteral("mergeMethod"));
        auto pick = [&](const char* name) {
            method->setCurrentIndex(method->findText(QString::fromLatin1(name)));
        };
        pick("ties");
        auto* normalize = dialog.findChild<QCheckBox*>(QStringLiteral("mergeNormalize"));
        normalize->setChecked(!normalize->isChecked());
        const bool chosen = normalize->isChecked();
        auto* target = dialog.findChild<QComboBox*>(QStringLiteral("mergeCurveParam"));
        target->setCurrentIndex(target->findText(QStringLiteral("weight of sea.gguf")));
        QVERIFY(target->currentIndex() > 0);
        dialog.curve()->setPoints({0.1, 0.5, 0.9});
        const MergeSpec before = dialog.spec();
        pick("slerp");
        QCOMPARE(target->currentIndex(), 0); // slerp takes no weight
        pick("ties");
        QCOMPARE(target->currentText(), QStringLiteral("weight of sea.gguf"));
        QCOMPARE(normalize->isChecked(), chosen);
        const MergeSpec after = dialog.spec();
        QCOMPARE(after.normalize, before.normalize);
        QCOMPARE(after.models.size(), before.models.size());
        for (std::size_t i = 0; i < after.models.size(); ++i) {
            QVERIFY(after.models[i].parameters == before.models[i].parameters);
        }
    }

    // A planned merge's values that no field shows (a filtered weight, a second gradient) are kept
    // as they are, their fields disabled and said why; t beyond 1 and a weight beyond 2 are shown
    // as they are, the curve widened. The dialog rewrote them all (t 5 → 1, weight 9 → 2, the
    // filter lost).
    void dialogKeepsWhatItCannotShow() {
        ParamValue filtered;
        filtered.rules = {{"self_attn", {0.1}}, {"", {0.9}}};
        ParamValue density;
        density.rules = {{"", {0.2, 0.8}}};
        ParamValue weight;
        weight.rules = {{"", {0.3, 0.6, 0.9}}};
        MergeSpec ties;
        ties.method = MergeMethod::Ties;
        ties.base = "/m/base.gguf";
        ties.models = {{"/m/farm.gguf", {{"weight", filtered}, {"density", density}}},
                       {"/m/sea.gguf", {{"weight", weight}, {"density", ParamValue::number(0.5)}}}};
        widgets::MergeDialog::Setup setup = dialogSetup(QStringLiteral("/m/farm.gguf"));
        setup.planned = ties;
        widgets::MergeDialog dialog(setup);
        dialog.show();
        settle(&dialog);
        // What a drop leaves out of the merge is said.
        setup.leftOut = {QStringLiteral("blk.0.ffn_up.weight: not in layer 2"),
                         QStringLiteral("blk.1.ffn_up.weight: not in layer 2")};
        const widgets::MergeDialog leaving(setup);
        QCOMPARE(
            leaving.findChild<QLabel*>(QStringLiteral("mergeLeftOut"))->text(),
            QStringLiteral("Left out: 2 of the dragged tensors (blk.0.ffn_up.weight: not in layer 2; and so "
                           "on)."));
        // The first gradient is the curve (farm's density); the sea's weight gradient and the
        // farm's filtered weight are kept.
        QCOMPARE(dialog.findChild<QComboBox*>(QStringLiteral("mergeCurveParam"))->currentText(),
                 QStringLiteral("density of farm.gguf"));
        // Its field shows the curve's mean, as while the curve is shaped, not its first point.
        QCOMPARE(dialog.findChild<QDoubleSpinBox*>(QStringLiteral("mergeDensity_1"))->value(), 0.5);
        QVERIFY(dialog.findChild<QLabel*>(QStringLiteral("mergeLeftOut")) == nullptr);
        const MergeSpec got = dialog.spec();
        QVERIFY(got.models.at(0).parameters.at("weight") == filtered);
        QVERIFY(got.models.at(0).parameters.at("density") == density);
        QVERIFY(got.models.at(1).parameters.at("weight") == weight);
        auto* farmWeight = dialog.findChild<QDoubleSpinBox*>(QStringLiteral("mergeWeight_1"));
        QVERIFY(!farmWeight->isEnabled());
        QCOMPARE(farmWeight->toolTip(),
                 QStringLiteral("Kept as the plan gives it: self_attn: 0.1; otherwise 0.9"));
        auto* note = dialog.findChild<QLabel*>(QStringLiteral("mergeKept"));
        QVERIFY(note->isVisible());
        QVERIFY2(
            note->text().contains(QStringLiteral("weight of farm.gguf (self_attn: 0.1; otherwise 0.9)")) &&
                note->text().contains(QStringLiteral("weight of sea.gguf (0.3 → 0.6 → 0.9)")),
            qPrintable(note->text()));
        saveScreenshot(&dialog, QStringLiteral("merge-dialog-kept.png"));
        // Drawn instead: the curve replaces the kept value.
        auto* target = dialog.findChild<QComboBox*>(QStringLiteral("mergeCurveParam"));
        target->setCurrentIndex(target->findText(QStringLiteral("weight of sea.gguf")));
        dialog.curve()->setPoints({0.25, 0.75});
        QVERIFY(dialog.spec().models.at(1).parameters.at("weight") == (ParamValue{{{"", {0.25, 0.75}}}}));
        QVERIFY(!note->text().contains(QStringLiteral("sea.gguf")));

        // slerp at t = 5 (the spec extrapolates): shown and kept.
        MergeSpec slerp;
        slerp.method = MergeMethod::Slerp;
        slerp.base = "/m/base.gguf";
        slerp.models = {{"/m/farm.gguf", {}}};
        slerp.parameters["t"] = ParamValue::number(5);
        setup.planned = slerp;
        widgets::MergeDialog far(setup);
        QCOMPARE(far.findChild<QDoubleSpinBox*>(QStringLiteral("mergeT"))->value(), 5.0);
        QVERIFY(far.spec().parameters.at("t") == ParamValue::number(5));

        // A weight of 9 made to vary: the curve starts at 9, drawn past its usual −1 … 2, and
        // takes a typed 7.
        widgets::MergeDialog heavy(dialogSetup(QStringLiteral("/m/farm.gguf")));
        heavy.findChild<QDoubleSpinBox*>(QStringLiteral("mergeWeight_1"))->setValue(9);
        auto* heavyTarget = heavy.findChild<QComboBox*>(QStringLiteral("mergeCurveParam"));
        heavyTarget->setCurrentIndex(heavyTarget->findText(QStringLiteral("weight of farm.gguf")));
        QCOMPARE(heavy.curve()->points().front(), 9.0);
        QVERIFY(heavy.curve()->yAxis->range().upper > 9);
        heavy.show();
        settle(&heavy);
        QTimer::singleShot(0, &heavy, [] {
            auto* input = qobject_cast<QInputDialog*>(QApplication::activeModalWidget());
            QVERIFY(input != nullptr);
            input->setDoubleValue(7);
            input->accept();
        });
        QTest::mouseDClick(heavy.curve(), Qt::LeftButton, {}, heavy.curve()->pixelOfPoint(0).toPoint());
        QCOMPARE(heavy.curve()->points().front(), 7.0);
    }

    // A curve left keeps its shape for when its parameter varies again, and the parameter's field
    // takes the curve's mean meanwhile (it took the first point: a t curve 0 → 1 left slerp at 0,
    // the recipient unchanged). A model unchecked and checked again brings its curve back, its
    // field disabled (it was enabled beside the curve).
    void curveSwitchesKeepTheirShape() {
        widgets::MergeDialog dialog(dialogSetup(QStringLiteral("/m/sea.gguf")));
        auto* method = dialog.findChild<QComboBox*>(QStringLiteral("mergeMethod"));
        auto* target = dialog.findChild<QComboBox*>(QStringLiteral("mergeCurveParam"));
        method->setCurrentIndex(method->findText(QStringLiteral("slerp")));
        target->setCurrentIndex(target->findText(QStringLiteral("t")));
        dialog.curve()->setPoints({0.2, 1});
        // The varied parameter's field shows the curve's mean while it varies, and after.
        QCOMPARE(dialog.findChild<QDoubleSpinBox*>(QStringLiteral("mergeT"))->value(), 0.6);
        target->setCurrentIndex(0);
        QCOMPARE(dialog.findChild<QDoubleSpinBox*>(QStringLiteral("mergeT"))->value(), 0.6);
        QVERIFY(dialog.spec().parameters.at("t") == ParamValue::number(0.6));
        target->setCurrentIndex(target->findText(QStringLiteral("t")));
        QCOMPARE(dialog.curve()->points(), (std::vector<double>{0.2, 1}));
        QCOMPARE(dialog.findChild<QSpinBox*>(QStringLiteral("mergeCurvePoints"))->value(), 2);

        method->setCurrentIndex(method->findText(QStringLiteral("ties")));
        auto* farm = dialog.findChild<QCheckBox*>(QStringLiteral("mergeUse_1"));
        farm->setChecked(true);
        target->setCurrentIndex(target->findText(QStringLiteral("density of farm.gguf")));
        dialog.curve()->setPoints({0.2, 0.8});
        farm->setChecked(false);
        QCOMPARE(target->currentIndex(), 0);
        farm->setChecked(true);
        QCOMPARE(target->currentText(), QStringLiteral("density of farm.gguf"));
        QVERIFY(!dialog.findChild<QDoubleSpinBox*>(QStringLiteral("mergeDensity_1"))->isEnabled());
        QCOMPARE(dialog.curve()->points(), (std::vector<double>{0.2, 0.8}));
    }

    // The curve: points are clamped to the parameter's range, a new count resamples the shape, and
    // the arrow keys move the point clicked.
    void curveEditor() {
        widgets::ParamCurveEditor editor;
        editor.resize(400, 220);
        editor.setBlocks(6);
        editor.setValueRange(0, 1);
        editor.setPoints({0, 2, -1});
        QCOMPARE(editor.points(), (std::vector<double>{0, 1, 0}));
        editor.setPointCount(5);
        QCOMPARE(editor.points(), (std::vector<double>{0, 0.5, 1, 0.5, 0}));
        editor.setPointCount(2);
        QCOMPARE(editor.points(), (std::vector<double>{0, 0}));
        // The shape set stays the source: as many points again give its middle point back.
        editor.setPointCount(3);
        QCOMPARE(editor.points(), (std::vector<double>{0, 1, 0}));
        editor.setPointCount(2);
        editor.setPointCount(5);
        QCOMPARE(editor.points(), (std::vector<double>{0, 0.5, 1, 0.5, 0}));
        editor.setPointCount(4);
        editor.setPointCount(3);
        QCOMPARE(editor.points(), (std::vector<double>{0, 1, 0}));
        editor.setPoints({0.2, 0.4});
        editor.show();
        settle(&editor);
        QTest::mouseClick(&editor, Qt::LeftButton, {}, editor.pixelOfPoint(1).toPoint());
        QTest::keyClick(&editor, Qt::Key_Up);
        QCOMPARE(editor.points()[1], 0.42);
        QCOMPARE(editor.points()[0], 0.2);
        // A point moved by hand makes the curve shown the source.
        editor.setPointCount(3);
        QCOMPARE(editor.points().size(), std::size_t(3));
        QVERIFY(std::abs(editor.points()[1] - 0.31) < 1e-12 && std::abs(editor.points()[2] - 0.42) < 1e-12);
        editor.setPointCount(2);
        QCOMPARE(editor.points().size(), std::size_t(2));
        QCOMPARE(editor.points()[1], 0.42);

        // No more points than layers: each then shapes a layer.
        QCOMPARE(editor.maxPointCount(), 6);
        editor.setPointCount(10);
        QCOMPARE(editor.points().size(), std::size_t(6));

        // A double-click types a value, exactly.
        QTimer::singleShot(0, &editor, [] {
            auto* input = qobject_cast<QInputDialog*>(QApplication::activeModalWidget());
            QVERIFY(input != nullptr);
            input->setDoubleValue(0.375);
            input->accept();
        });
        QTest::mouseDClick(&editor, Qt::LeftButton, {}, editor.pixelOfPoint(2).toPoint());
        QCOMPARE(editor.points()[2], 0.375);

        // Disabled (nothing varies), the points to drag are gone and a click moves nothing.
        auto handlePixels = [&] {
            const QImage image = editor.grab().toImage();
            int count = 0;
            for (int y = 0; y < image.height(); ++y) {
                for (int x = 0; x < image.width(); ++x) {
                    count += image.pixelColor(x, y) == QColor(0xe0, 0x7b, 0x1a);
                }
            }
            return count;
        };
        QVERIFY(handlePixels() > 0);
        editor.setEnabled(false);
        settle(&editor);
        QCOMPARE(handlePixels(), 0);
        const std::vector<double> before = editor.points();
        QTest::mouseClick(&editor, Qt::LeftButton, {}, editor.pixelOfPoint(1).toPoint());
        QTest::keyClick(&editor, Qt::Key_Up);
        QCOMPARE(editor.points(), before);
        // Its notice is on the plot's background: the flat grey line does not run through it.
        editor.setPoints({0.5, 0.5});
        settle(&editor);
        const QImage image = editor.grab().toImage();
        const double ratio = image.devicePixelRatio(); // the image's pixels per the widget's
        const int lineY = int(std::lround(editor.yAxis->coordToPixel(0.5) * ratio));
        const QRect plot = editor.axisRect()->rect();
        const QColor grey = editor.palette().color(QPalette::Disabled, QPalette::Text);
        auto lineAt = [&](int x) {
            for (int y = lineY - int(ratio); y <= lineY + int(ratio); ++y) {
                const QColor c = image.pixelColor(int(x * ratio), y);
                if (std::abs(c.red() - grey.red()) + std::abs(c.green() - grey.green()) +
                        std::abs(c.blue() - grey.blue()) <
                    40) {
                    return true;
                }
            }
            return false;
        };
        int besideNotice = 0;
        int underNotice = 0;
        for (int x = plot.left() + 2; x < plot.left() + plot.width() / 8; ++x) {
            besideNotice += lineAt(x);
        }
        for (int x = plot.center().x() - plot.width() / 8; x < plot.center().x() + plot.width() / 8; ++x) {
            underNotice += lineAt(x);
        }
        QVERIFY2(besideNotice > 5 && underNotice == 0,
                 qPrintable(QStringLiteral("%1 %2").arg(besideNotice).arg(underNotice)));
    }
};

QTEST_MAIN(TestWindowMerge)
#include "tst_window_merge.moc"
