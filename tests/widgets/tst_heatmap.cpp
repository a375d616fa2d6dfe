// The θ heatmap as a widget on its own, without the window: its grid follows the model's
// layers and roles, results fill cells, Δθ mode, drags from cells, rows and columns, the
// preview, and layer labels as drop targets.
#include "gguf/specimen.h"
#include "organs/organ_directory.h"
#include "theta_heatmap.h"

#include <QTemporaryDir>
#include <QTest>
#include <qcustomplot.h>

using namespace organ;

class TestHeatmap : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::shared_ptr<const ModelSnapshot> m_snapshot;

    int indexOf(const std::string& name) const {
        const auto& t = m_snapshot->model->tensors();
        for (std::size_t i = 0; i < t.size(); ++i) {
            if (t[i].name == name) {
                return int(i);
            }
        }
        return -1;
    }

private slots:
    void initTestCase() {
        const std::string path = m_dir.filePath(QStringLiteral("specimen.gguf")).toStdString();
        QVERIFY(writeSpecimen(path, 11).isOk());
        m_snapshot = ModelSnapshot::of(openModel(path));
    }

    void gridFollowsTheModel() {
        widgets::ThetaHeatmap heatmap(m_snapshot);
        // 4 layers and a "global" column for the embeddings, output and final norm.
        QVERIFY(heatmap.hasGlobalColumn());
        QCOMPARE(heatmap.columnCount(), 5);
        QCOMPARE(heatmap.columnOfLayer(0), 1);
        QCOMPARE(heatmap.layerOfColumn(4), std::optional<std::uint32_t>(3));
        QVERIFY(!heatmap.layerOfColumn(0));
        // Every tensor has exactly one cell; no cell holds two tensors.
        std::set<int> seen;
        for (int c = 0; c < heatmap.columnCount(); ++c) {
            for (int r = 0; r < heatmap.rowCount(); ++r) {
                const int t = heatmap.tensorAt(c, r);
                if (t >= 0) {
                    QVERIFY(seen.insert(t).second);
                }
            }
        }
        QCOMPARE(seen.size(), m_snapshot->model->tensors().size());
        const int q2 = indexOf("blk.2.attn_q.weight");
        const auto& roles = heatmap.roles();
        const int row = int(std::find(roles.begin(), roles.end(), "attn_q") - roles.begin());
        QVERIFY(row < heatmap.rowCount());
        QCOMPARE(heatmap.tensorAt(heatmap.columnOfLayer(2), row), q2);
    }

    void resultsFillCells() {
        widgets::ThetaHeatmap heatmap(m_snapshot);
        const int q2 = indexOf("blk.2.attn_q.weight");
        const auto& roles = heatmap.roles();
        const int row = int(std::find(roles.begin(), roles.end(), "attn_q") - roles.begin());
        const int column = heatmap.columnOfLayer(2);
        QVERIFY(!heatmap.thetaAt(column, row)); // not measured yet
        model::TensorResults results(m_snapshot->model->tensors().size());
        heatmap.setResults(&results);
        QVERIFY(!heatmap.thetaAt(column, row));
        ZResult result;
        result.theta = 42.5;
        results.set(q2, result);
        QCOMPARE(heatmap.thetaAt(column, row), std::optional<double>(42.5));
        QCOMPARE(heatmap.shownThetaAt(column, row), std::optional<double>(42.5));
        // The preview shows the donor's θ in the cells the plan replaces.
        heatmap.setPreview({{q2, 0, QStringLiteral("donor"), QStringLiteral("blk.2.attn_q.weight"), 12.0}});
        QCOMPARE(heatmap.shownThetaAt(column, row), std::optional<double>(12.0));
        QCOMPARE(heatmap.thetaAt(column, row), std::optional<double>(42.5));
        heatmap.setPreview({});
        QCOMPARE(heatmap.shownThetaAt(column, row), std::optional<double>(42.5));
    }

    void deltaMode() {
        widgets::ThetaHeatmap heatmap(m_snapshot, nullptr, widgets::ThetaHeatmap::Mode::Delta);
        const int k1 = indexOf("blk.1.attn_k.weight");
        const auto& roles = heatmap.roles();
        const int row = int(std::find(roles.begin(), roles.end(), "attn_k") - roles.begin());
        heatmap.setValue(k1, -7.25);
        QCOMPARE(heatmap.valueAt(heatmap.columnOfLayer(1), row), std::optional<double>(-7.25));
        heatmap.setValue(k1, std::nullopt);
        QVERIFY(!heatmap.valueAt(heatmap.columnOfLayer(1), row));
    }

    void dragsFromCellsRowsAndColumns() {
        widgets::ThetaHeatmap heatmap(m_snapshot);
        heatmap.setDragSource(true);
        const int column = heatmap.columnOfLayer(1);
        const auto layer = heatmap.dragForColumn(column);
        QVERIFY(layer);
        QCOMPARE(layer->pick, model::TensorDrag::Pick::Column);
        for (int t : layer->tensors) {
            QCOMPARE(m_snapshot->anatomy.tensors[std::size_t(t)].layer, std::optional<std::uint32_t>(1));
        }
        const auto& roles = heatmap.roles();
        const int row = int(std::find(roles.begin(), roles.end(), "ffn_up") - roles.begin());
        const auto across = heatmap.dragForRow(row);
        QVERIFY(across);
        QCOMPARE(across->tensors.size(), std::size_t(4)); // ffn_up of every layer
        const auto cell = heatmap.dragForCell(column, row);
        QVERIFY(cell);
        QCOMPARE(cell->tensors, std::vector<int>{indexOf("blk.1.ffn_up.weight")});
        // A Ctrl+click selection drags together.
        heatmap.toggleSelected(indexOf("blk.1.ffn_up.weight"));
        heatmap.toggleSelected(indexOf("blk.3.ffn_up.weight"));
        const auto selection = heatmap.dragForCell(column, row);
        QVERIFY(selection);
        QCOMPARE(selection->tensors.size(), std::size_t(2));
    }

    void dropTargetsAtPixels() {
        widgets::ThetaHeatmap heatmap(m_snapshot);
        heatmap.resize(900, 600);
        heatmap.show();
        QVERIFY(QTest::qWaitForWindowExposed(&heatmap));
        heatmap.plot()->replot();
        const int q2 = indexOf("blk.2.attn_q.weight");
        const QPoint pixel = heatmap.pixelOfTensor(q2);
        QCOMPARE(heatmap.tensorAtPixel(pixel), q2);
        const DropTarget onCell = heatmap.dropTargetAtPixel(pixel);
        QCOMPARE(onCell.kind, DropTarget::Kind::Tensor);
        QCOMPARE(onCell.tensor, q2);
        QCOMPARE(heatmap.dropTargetAtPixel(QPoint(2, 2)).kind, DropTarget::Kind::Model);
    }
};

QTEST_MAIN(TestHeatmap)
#include "tst_heatmap.moc"
