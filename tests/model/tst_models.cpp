// Item models under QAbstractItemModelTester, attached before any data is loaded.
#include "anatomy_filter_proxy.h"
#include "anatomy_tree_model.h"
#include "diff_table_model.h"
#include "display_names.h"
#include "fleet_table_model.h"
#include "gguf/specimen.h"
#include "metadata_table_model.h"
#include "model_roles.h"
#include "organs/organ_directory.h"
#include "shared_models.h"
#include "token_table_model.h"

#include <QAbstractItemModelTester>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>

using namespace organ;
using namespace organ::model;
using namespace organ::testing;

namespace {

int countTensors(const QAbstractItemModel& m, const QModelIndex& parent = {}) {
    int n = 0;
    for (int r = 0; r < m.rowCount(parent); ++r) {
        const QModelIndex i = m.index(r, 0, parent);
        n += i.data(NodeKindRole).toInt() == int(AnatomyNode::Kind::Tensor) ? 1 : countTensors(m, i);
    }
    return n;
}

} // namespace

class TestModels : public QObject {
    Q_OBJECT

    std::shared_ptr<const ModelSnapshot> stories() {
        return ModelSnapshot::of(
            openModel(sharedModel(QStringLiteral("stories260K-f32.gguf")).toStdString()));
    }

private slots:
    void finiteNumbers() {
        QCOMPARE(model::finiteNumber(4.41629, 3), QStringLiteral("4.416"));
        QCOMPARE(model::finiteNumber(std::nan(""), 3), QStringLiteral("—"));
        QCOMPARE(model::finiteNumber(INFINITY, 1), QStringLiteral("—"));
    }

    // A sample of byte escapes with no space wraps: a break at most every 32 characters, before
    // an escape where it can; the text itself unchanged.
    void samplesWrap() {
        const std::string bytes(200, '\xbd');
        const QString html = model::sampleHtml("Once", "word " + bytes);
        QString plain = html;
        plain.remove(QRegularExpression(QStringLiteral("<[^>]*>")));
        int run = 0;
        int longest = 0;
        for (const QChar c : plain) {
            run = c.isSpace() || c == QChar(0x200B) ? 0 : run + 1;
            longest = std::max(longest, run);
        }
        QVERIFY2(longest <= 32, qPrintable(plain));
        QVERIFY(plain.contains(QChar(0x200B) + QStringLiteral("\\xBD")));
        plain.remove(QChar(0x200B));
        QVERIFY2(plain.endsWith(QStringLiteral("word ") + QStringLiteral("\\xBD").repeated(200)),
                 qPrintable(plain));
        QCOMPARE(model::breakableText(QStringLiteral("short words stay as they are")),
                 QStringLiteral("short words stay as they are"));
    }

    // A reason put after "Not added to the plan:" starts in lower case unless it starts with a name.
    void afterColon() {
        QCOMPARE(model::afterColon(QStringLiteral("None of the dragged tensors belongs there")),
                 QStringLiteral("none of the dragged tensors belongs there"));
        QCOMPARE(model::afterColon(QStringLiteral("A merge combines tensors of one name")),
                 QStringLiteral("a merge combines tensors of one name"));
        for (const QString& kept :
             {QStringLiteral("blk.1.ffn_up.weight cannot be merged"), QStringLiteral("KL is undefined"),
              QStringLiteral("Farm.gguf has none"), QStringLiteral("I"), QString()}) {
            QCOMPARE(model::afterColon(kept), kept);
        }
    }

    void anatomyTreeBySystem() {
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-f32.gguf")));
        AnatomyTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setSnapshot(stories());
        QCOMPARE(model.rowCount(), 4); // embed, skeleton, organ, norm
        QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("embed"));
        QCOMPARE(model.index(2, 0).data().toString(), QStringLiteral("organ"));
        const QModelIndex organ = model.index(2, 0);
        QCOMPARE(model.rowCount(organ), 5);
        const QModelIndex layer3 = model.index(3, 0, organ);
        QCOMPARE(layer3.data().toString(), QStringLiteral("layer 3"));
        QCOMPARE(model.rowCount(layer3), 3);
        QCOMPARE(model.index(0, 0, layer3).data().toString(), QStringLiteral("blk.3.ffn_gate.weight"));
        QCOMPARE(model.index(0, AnatomyTreeModel::DType, layer3).data().toString(), QStringLiteral("F32"));
        QCOMPARE(model.index(0, AnatomyTreeModel::Shape, layer3).data().toString(),
                 QStringLiteral("64 × 172"));
        QCOMPARE(model.index(0, AnatomyTreeModel::Parameters, layer3).data(SortRole).toULongLong(), 11008ull);
        QCOMPARE(model.index(2, AnatomyTreeModel::Parameters).data(SortRole).toULongLong(), 15ull * 11008);
        QCOMPARE(model.index(2, AnatomyTreeModel::Bytes).data(SortRole).toULongLong(), 15ull * 44032);
        // Outside-layer tensors sit directly under their system.
        QCOMPARE(model.index(0, 0, model.index(0, 0)).data().toString(), QStringLiteral("token_embd.weight"));
        QCOMPARE(countTensors(model), 48);
        const QModelIndex found =
            model.indexOfTensor(int(model.snapshot()->model->findTensor("blk.3.ffn_down.weight") -
                                    model.snapshot()->model->tensors().data()));
        QCOMPARE(found.data().toString(), QStringLiteral("blk.3.ffn_down.weight"));
    }

    void anatomyTreeByLayer() {
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-f32.gguf")));
        AnatomyTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setSnapshot(stories());
        model.setGrouping(TreeGrouping::LayerSystem);
        QCOMPARE(model.rowCount(), 6); // outside layers + 5 layers
        QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("outside layers"));
        QCOMPARE(model.index(1, 0).data().toString(), QStringLiteral("layer 0"));
        const QModelIndex layer0 = model.index(1, 0);
        QCOMPARE(model.rowCount(layer0), 3); // skeleton, organ, norm
        QCOMPARE(model.index(1, 0, layer0).data().toString(), QStringLiteral("organ"));
        QCOMPARE(model.index(1, AnatomyTreeModel::Role, layer0).data().toString(),
                 QStringLiteral("3 tensors"));
        QCOMPARE(countTensors(model), 48);
    }

    void filterProxy() {
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-f32.gguf")));
        AnatomyTreeModel model;
        AnatomyFilterProxy proxy;
        QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        proxy.setSourceModel(&model);
        model.setSnapshot(stories());
        QCOMPARE(countTensors(proxy), 48);
        proxy.setFilterFixedString(QStringLiteral("ffn_down"));
        QCOMPARE(countTensors(proxy), 5);
        QCOMPARE(proxy.rowCount(), 1); // only the organ system keeps a match
        proxy.setFilterFixedString(QStringLiteral("BLK.2."));
        QCOMPARE(countTensors(proxy), 9);
        proxy.setFilterFixedString(QString());
        proxy.setSystemVisible(System::Norm, false);
        proxy.setSystemVisible(System::Embed, false);
        QCOMPARE(countTensors(proxy), 35);
        QCOMPARE(proxy.rowCount(), 2);
        proxy.setSystemVisible(System::Norm, true);
        QCOMPARE(countTensors(proxy), 46);
        // Sorting by bytes puts the largest system first.
        proxy.sort(AnatomyTreeModel::Bytes, Qt::DescendingOrder);
        QCOMPARE(proxy.index(0, 0).data().toString(), QStringLiteral("organ"));
    }

    void metadataTable() {
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-f32.gguf")));
        MetadataTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setModel(stories()->model);
        QCOMPARE(model.rowCount(), 19);
        QCOMPARE(model.columnCount(), 3);
        bool found = false;
        for (int r = 0; r < model.rowCount(); ++r) {
            if (model.index(r, 0).data().toString() == QStringLiteral("tokenizer.ggml.tokens")) {
                QCOMPARE(model.index(r, 1).data().toString(), QStringLiteral("array[string]"));
                QVERIFY(model.index(r, 2).data().toString().startsWith(
                    QStringLiteral("[512 × string] <unk>, <s>, </s>")));
                found = true;
            }
        }
        QVERIFY(found);
        model.setModel(nullptr);
        QCOMPARE(model.rowCount(), 0);
    }

    // θ arrives per tensor in the model's TensorResults: the tensor's cell and every group
    // above it change; group means are the means of the measured tensors below; results survive
    // regrouping.
    void thetaColumn() {
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-f32.gguf")));
        AnatomyTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setSnapshot(stories());
        const auto& tensors = model.snapshot()->model->tensors();
        TensorResults results(tensors.size());
        model.setResults(&results);
        auto indexOf = [&](const char* name) {
            return int(model.snapshot()->model->findTensor(name) - tensors.data());
        };
        const QModelIndex up = model.indexOfTensor(indexOf("blk.3.ffn_up.weight"));
        const QModelIndex upTheta = up.siblingAtColumn(AnatomyTreeModel::Theta);
        QVERIFY(!upTheta.data(ThetaRole).isValid());
        QCOMPARE(upTheta.data().toString(), QString());
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        ZResult z;
        z.n = z.N = 100;
        z.H = 0.5;
        z.K = 2.0;
        z.C = 3.0;
        scoreResult(z);
        results.set(indexOf("blk.3.ffn_up.weight"), z);
        QCOMPARE(changed.count(), 3); // the tensor, layer 3, the organ system
        QCOMPARE(upTheta.data(ThetaRole).toDouble(), *z.theta);
        QCOMPARE(upTheta.data().toString(), QString::number(*z.theta, 'f', 1) + QStringLiteral("°"));
        ZResult other = z;
        other.theta = 10.0;
        results.set(indexOf("blk.3.ffn_down.weight"), other);
        const QModelIndex organTheta = model.index(2, AnatomyTreeModel::Theta);
        QCOMPARE(organTheta.data(ThetaRole).toDouble(), (*z.theta + 10.0) / 2);
        ZResult constant;
        constant.constant = true;
        results.set(indexOf("blk.3.ffn_gate.weight"), constant);
        QCOMPARE(model.indexOfTensor(indexOf("blk.3.ffn_gate.weight"))
                     .siblingAtColumn(AnatomyTreeModel::Theta)
                     .data()
                     .toString(),
                 QStringLiteral("const"));
        QCOMPARE(organTheta.data(ThetaRole).toDouble(), (*z.theta + 10.0) / 2); // constants have no θ
        // Replacing a result replaces its share of the means.
        results.set(indexOf("blk.3.ffn_down.weight"), z);
        QCOMPARE(organTheta.data(ThetaRole).toDouble(), *z.theta);
        model.setGrouping(TreeGrouping::LayerSystem);
        QCOMPARE(model.indexOfTensor(indexOf("blk.3.ffn_up.weight"))
                     .siblingAtColumn(AnatomyTreeModel::Theta)
                     .data(ThetaRole)
                     .toDouble(),
                 *z.theta);
        const QModelIndex layer3 = model.index(4, AnatomyTreeModel::Theta);
        QCOMPARE(model.index(4, 0).data().toString(), QStringLiteral("layer 3"));
        QCOMPARE(layer3.data(ThetaRole).toDouble(), *z.theta);
        model.setResults(nullptr);
        QVERIFY(!model.index(4, AnatomyTreeModel::Theta).data(ThetaRole).isValid());

        // All results at once (from the cache): the same means, one signal per sibling group.
        std::vector<ZResult> all(tensors.size(), z);
        all[std::size_t(indexOf("blk.3.ffn_down.weight"))] = other;
        all[std::size_t(indexOf("blk.3.ffn_gate.weight"))] = constant;
        AnatomyTreeModel oneByOne;
        oneByOne.setSnapshot(stories());
        oneByOne.setGrouping(TreeGrouping::LayerSystem);
        TensorResults perTensor(tensors.size());
        oneByOne.setResults(&perTensor);
        for (std::size_t t = 0; t < all.size(); ++t) {
            perTensor.set(int(t), all[t]);
        }
        TensorResults atOnce(tensors.size());
        model.setResults(&atOnce);
        auto measurement = std::make_shared<ModelMeasurement>();
        measurement->tensors = all;
        changed.clear();
        atOnce.setMeasurement(measurement);
        QVERIFY(changed.count() < int(tensors.size())); // one per tensor and group would be 3 × 48
        for (int t = 0; t < int(tensors.size()); ++t) {
            for (QModelIndex a = model.indexOfTensor(t), b = oneByOne.indexOfTensor(t); a.isValid();
                 a = a.parent(), b = b.parent()) {
                QCOMPARE(a.siblingAtColumn(AnatomyTreeModel::Theta).data(ThetaRole),
                         b.siblingAtColumn(AnatomyTreeModel::Theta).data(ThetaRole));
            }
        }
    }

    // One entry per file however many views take it: the same snapshot and the same results;
    // the model closes with the last view that gives it back, and a bad file is refused.
    void openModelsOncePerFile() {
        QTemporaryDir dir;
        const QString a = dir.filePath(QStringLiteral("a.gguf"));
        QVERIFY(writeSpecimen(a.toStdString(), 3).isOk());
        OpenModels models;
        QSignalSpy opened(&models, &OpenModels::opened);
        QSignalSpy closed(&models, &OpenModels::closed);
        bool fresh = false;
        const OpenModels::Entry first = models.take(a, &fresh);
        QVERIFY(fresh);
        const OpenModels::Entry second = models.take(a, &fresh);
        QVERIFY(!fresh);
        QCOMPARE(second.snapshot, first.snapshot);
        QCOMPARE(second.results, first.results);
        QCOMPARE(first.results->size(), first.snapshot->model->tensors().size());
        QCOMPARE(opened.count(), 1);
        QCOMPARE(models.paths(), std::vector<QString>{a});
        // A result stored once is what both views read.
        QSignalSpy changed(first.results, &TensorResults::changed);
        ZResult z;
        z.theta = 12.5;
        first.results->set(2, z);
        QCOMPARE(second.results->theta(2), std::optional<double>(12.5));
        z.theta = 20.0;
        first.results->set(2, z);
        QCOMPARE(changed.count(), 2);
        QCOMPARE(changed.at(1).at(1).value<std::optional<double>>(), std::optional<double>(12.5));
        QVERIFY(!first.results->at(-1) && !first.results->at(int(first.results->size())));
        models.giveBack(a);
        QVERIFY(models.find(a).has_value());
        QCOMPARE(closed.count(), 0);
        models.giveBack(a);
        QVERIFY(!models.find(a).has_value());
        QCOMPARE(closed.count(), 1);
        QVERIFY_THROWS_EXCEPTION(std::exception, models.take(dir.filePath(QStringLiteral("missing.gguf"))));
        QVERIFY(models.paths().empty());
    }

    // Column titles: the horizontal header's display role only, one per column in the Column enum's
    // order; the fleet table's rows keep their numbers in the vertical header.
    void columnTitles() {
        const auto titles = [](const QAbstractItemModel& m, int count) {
            QStringList list;
            for (int c = 0; c < count; ++c) {
                list << m.headerData(c, Qt::Horizontal).toString();
            }
            return list.join(u'|');
        };
        AnatomyTreeModel anatomy;
        QCOMPARE(titles(anatomy, AnatomyTreeModel::ColumnCount),
                 QStringLiteral("Name|Role|Type|Shape|Parameters|Bytes|θ"));
        QVERIFY(!anatomy.headerData(AnatomyTreeModel::ColumnCount, Qt::Horizontal).isValid());
        QVERIFY(!anatomy.headerData(-1, Qt::Horizontal).isValid());
        QVERIFY(!anatomy.headerData(0, Qt::Vertical).isValid());
        QVERIFY(!anatomy.headerData(0, Qt::Horizontal, Qt::ToolTipRole).isValid());
        DiffTableModel diff;
        QCOMPARE(titles(diff, DiffTableModel::ColumnCount),
                 QStringLiteral("Tensor|Types|Relative error|Cosine|SQNR (dB)|Max |Δ||Changed|Identical"));
        MetadataTableModel metadata;
        QCOMPARE(titles(metadata, MetadataTableModel::ColumnCount), QStringLiteral("Key|Type|Value"));
        TokenTableModel tokens;
        QCOMPARE(titles(tokens, TokenTableModel::ColumnCount),
                 QStringLiteral("#|Id|Type|Vocabulary|Text|Score"));
        FleetTableModel fleet;
        QCOMPARE(titles(fleet, FleetTableModel::ColumnCount),
                 QStringLiteral("#|Model|File|Architecture|Parameters|Size|Bits/weight|θ mean|Signal|Embed θ|"
                                "Skeleton θ|Organ θ|Norm θ|Dtypes|Error"));
        QCOMPARE(fleet.headerData(2, Qt::Vertical).toInt(), 3);
        QVERIFY(!fleet.headerData(FleetTableModel::ColumnCount, Qt::Horizontal).isValid());
    }

    void resetBetweenModels() {
        QTemporaryDir dir;
        const std::string a = dir.filePath(QStringLiteral("a.gguf")).toStdString();
        QVERIFY(writeSpecimen(a, 3).isOk());
        AnatomyTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setSnapshot(ModelSnapshot::of(openModel(a)));
        QCOMPARE(countTensors(model), 39);
        model.setGrouping(TreeGrouping::LayerSystem);
        QCOMPARE(countTensors(model), 39);
        model.setSnapshot(nullptr);
        QCOMPARE(model.rowCount(), 0);
    }
};

QTEST_GUILESS_MAIN(TestModels)
#include "tst_models.moc"
