// Surgery through the item models: donor tensors dragged (mimeData), checked while over a
// recipient node (canDropMimeData) and dropped (dropMimeData) become graft plan operations;
// incompatible drops are refused with the reason, partly compatible ones narrowed; every
// edit undoes and redoes; plans save and load in the CLI's format.
#include "anatomy_tree_model.h"
#include "fixtures.h"
#include "graft_document.h"
#include "graft_plan_model.h"
#include "metadata_table_model.h"
#include "model_roles.h"
#include "organs/organ_directory.h"
#include "shared_models.h"
#include "tensor_drag.h"

#include <QAbstractItemModelTester>
#include <QMimeData>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>
#include <set>

using namespace organ;
using namespace organ::model;
using namespace organ::testing;

class TestGraftDocument : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_healthy;
    QString m_damaged;
    std::shared_ptr<const ModelSnapshot> m_donor;
    std::shared_ptr<const ModelSnapshot> m_recipient;

    // The node of `name` under the current grouping: a system (top level), a layer under it,
    // or a tensor.
    static QModelIndex find(const AnatomyTreeModel& tree, const QString& name,
                            const QModelIndex& parent = {}) {
        for (int r = 0; r < tree.rowCount(parent); ++r) {
            const QModelIndex child = tree.index(r, 0, parent);
            if (child.data().toString() == name) {
                return child;
            }
        }
        return {};
    }

    static QModelIndex tensorIndex(const AnatomyTreeModel& tree, const char* name) {
        const auto& model = *tree.snapshot()->model;
        return tree.indexOfTensor(int(model.findTensor(name) - model.tensors().data()));
    }

    struct Trees {
        OpenModels models;
        AnatomyTreeModel donor;
        AnatomyTreeModel recipient;
        GraftDocument document{&models};
    };

    std::unique_ptr<Trees> trees() {
        auto t = std::make_unique<Trees>();
        t->donor.setSnapshot(m_donor);
        t->donor.setDragSource(true);
        t->recipient.setSnapshot(m_recipient);
        t->recipient.setDropHandler(&t->document);
        t->models.take(m_donor);
        t->models.take(m_recipient);
        return t;
    }

    // mimeData → canDropMimeData → dropMimeData, as a view does it.
    static bool dragAndDrop(Trees& t, const QModelIndexList& from, const QModelIndex& onto,
                            QString* message = nullptr) {
        std::unique_ptr<QMimeData> data(t.donor.mimeData(from));
        if (data == nullptr) {
            return false;
        }
        const bool can = t.recipient.canDropMimeData(data.get(), Qt::CopyAction, -1, -1, onto);
        if (message != nullptr) {
            *message = t.recipient.dropMessage();
        }
        const bool dropped = t.recipient.dropMimeData(data.get(), Qt::CopyAction, -1, -1, onto);
        if (can != dropped) {
            qWarning("canDropMimeData and dropMimeData disagree");
            return false;
        }
        return dropped;
    }

    static std::string planJson(const GraftDocument& d) { return graftPlanToJson(d.plan()).dump(); }

private slots:
    void initTestCase() {
        m_healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        m_damaged = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        ORGAN_REQUIRE_SHARED(m_healthy);
        ORGAN_REQUIRE_SHARED(m_damaged);
        m_donor = ModelSnapshot::of(openModel(QFileInfo(m_healthy).absoluteFilePath().toStdString()));
        m_recipient = ModelSnapshot::of(openModel(QFileInfo(m_damaged).absoluteFilePath().toStdString()));
    }

    // Metadata edits: one operation per key, the model's value again drops it, a key the plan adds
    // gets a row, removals and refusals; the table follows every change (and undo) as the tester
    // checks it.
    void metadataEdits() {
        auto t = trees();
        GraftDocument& d = t->document;
        const QString recipient = QString::fromStdString(m_recipient->model->path());
        MetadataTableModel table;
        QAbstractItemModelTester tester(&table, QAbstractItemModelTester::FailureReportingMode::QtTest);
        table.setModel(m_recipient->model);
        table.setDocument(&d, recipient);
        const int rows = table.rowCount();
        QCOMPARE(rows, int(m_recipient->model->metadata().size()));
        QVERIFY(d.setMetadata(recipient, "llama.context_length", MetaValue::fromU32(512)).isEmpty());
        QVERIFY(d.setMetadata(recipient, "llama.context_length", MetaValue::fromU32(1024)).isEmpty());
        QCOMPARE(d.plan().operations.size(), std::size_t(1));
        QCOMPARE(*d.plan().operations[0].value.asUInt(), std::uint64_t(1024));
        QVERIFY(d.setMetadata(recipient, "my.ratio", MetaValue::fromF64(0.5)).isEmpty());
        QCOMPARE(table.rowCount(), rows + 1);
        QCOMPARE(table.key(rows), std::string("my.ratio"));
        QCOMPARE(table.editState(rows), MetadataTableModel::EditState::Added);
        QVERIFY(d.removeMetadata(recipient, "general.name").isEmpty());
        QCOMPARE(d.plan().operations.size(), std::size_t(3));
        // The model's own value again: the key's edit goes.
        const MetaValue original = *m_recipient->model->find("llama.context_length");
        QVERIFY(d.setMetadata(recipient, "llama.context_length", original).isEmpty());
        QCOMPARE(d.plan().operations.size(), std::size_t(2));
        // What would stop llama.cpp loading the model is refused, with the reason, and not added.
        const QString refusal = d.setMetadata(recipient, "llama.block_count", MetaValue::fromU32(9));
        QVERIFY2(refusal.contains(QStringLiteral("block")), qPrintable(refusal));
        QVERIFY(!d.removeMetadata(recipient, "general.architecture").isEmpty());
        QCOMPARE(d.plan().operations.size(), std::size_t(2));
        // Typed text through the table: a u32 out of range is not one.
        int row = 0;
        while (table.key(row) != "llama.embedding_length") {
            ++row;
        }
        QSignalSpy refused(&table, &MetadataTableModel::editRefused);
        QVERIFY(!table.setData(table.index(row, MetadataTableModel::Value), QStringLiteral("4294967296")));
        QCOMPARE(refused.count(), 1);
        QCOMPARE(d.plan().operations.size(), std::size_t(2));
        // Undo, all the way: the table shows the model as it is.
        while (d.undoStack()->canUndo()) {
            d.undoStack()->undo();
        }
        QCOMPARE(table.rowCount(), rows);
        for (int r = 0; r < rows; ++r) {
            QCOMPARE(table.editState(r), MetadataTableModel::EditState::Unchanged);
        }
    }

    // Operations are labelled with what was dragged, in the words of the anatomy.
    void operationLabels_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QStringList>("names");
        QTest::addColumn<QString>("label");
        const int replace = int(GraftOperation::Kind::Replace);
        const int map = int(GraftOperation::Kind::MapLayer);
        QTest::newRow("one tensor") << replace << QStringList{QStringLiteral("blk.2.ffn_up.weight")}
                                    << QStringLiteral("replace blk.2.ffn_up.weight from healthy");
        QStringList ffnUp;
        for (int layer = 0; layer < 5; ++layer) {
            ffnUp << QStringLiteral("blk.%1.ffn_up.weight").arg(layer);
        }
        QTest::newRow("a role across layers")
            << replace << ffnUp << QStringLiteral("replace ffn_up of layers 0–4 from healthy");
        QTest::newRow("two roles, layers apart")
            << replace
            << QStringList{QStringLiteral("blk.0.ffn_down.weight"), QStringLiteral("blk.0.ffn_up.weight"),
                           QStringLiteral("blk.2.ffn_up.weight"), QStringLiteral("blk.3.ffn_up.weight")}
            << QStringLiteral("replace ffn_up and ffn_down of layers 0 and 2–3 from healthy");
        QTest::newRow("outside layers")
            << replace << QStringList{QStringLiteral("output.weight"), QStringLiteral("token_embd.weight")}
            << QStringLiteral("replace output and token_embd from healthy");
        QTest::newRow("systems")
            << replace
            << QStringList{QStringLiteral("blk.1.attn_q.weight"), QStringLiteral("blk.1.attn_k.weight"),
                           QStringLiteral("blk.1.ffn_up.weight"), QStringLiteral("token_embd.weight")}
            << QStringLiteral(
                   "replace skeleton and organ of layer 1 (3 tensors) and token_embd from healthy");
        // Each system with its layers where they differ: "skeleton and organ of layers 0–3" said
        // all 16 skeleton tensors of those layers were taken where only layer 2's were.
        QStringList mixed{QStringLiteral("blk.2.attn_q.weight"), QStringLiteral("blk.2.attn_k.weight"),
                          QStringLiteral("blk.2.attn_v.weight"), QStringLiteral("blk.2.attn_output.weight")};
        for (int layer = 0; layer < 4; ++layer) {
            for (const char* role : {"ffn_gate", "ffn_up", "ffn_down"}) {
                mixed << QStringLiteral("blk.%1.%2.weight").arg(layer).arg(QLatin1String(role));
            }
        }
        QTest::newRow("systems, layers apart")
            << replace << mixed
            << QStringLiteral(
                   "replace skeleton of layer 2 and organ of layers 0–3 (16 tensors) from healthy");
        QTest::newRow("map a role") << map << QStringList{QStringLiteral("blk.3.ffn_up.weight")}
                                    << QStringLiteral("map blk.1.ffn_up.weight from healthy onto layer 3");
        QTest::newRow("map a layer's organs")
            << map
            << QStringList{QStringLiteral("blk.3.ffn_gate.weight"), QStringLiteral("blk.3.ffn_up.weight"),
                           QStringLiteral("blk.3.ffn_down.weight")}
            << QStringLiteral("map organ of layer 1 (3 tensors) from healthy onto layer 3");
    }
    void operationLabels() {
        QFETCH(int, kind);
        QFETCH(QStringList, names);
        QFETCH(QString, label);
        GraftOperation op;
        op.kind = GraftOperation::Kind(kind);
        op.donor = "healthy";
        op.fromLayer = 1;
        op.toLayer = 3;
        for (const QString& name : names) {
            op.select.names.push_back(name.toStdString());
        }
        const OpenModels none;
        GraftDocument document(&none);
        QCOMPARE(document.describe(op), label);
    }

    void mimeRoundTripAndRefusals() {
        TensorDrag drag;
        drag.pick = TensorDrag::Pick::Role;
        drag.model = QStringLiteral("/models/a.gguf");
        drag.tensors = {1, 5, 9};
        std::unique_ptr<QMimeData> data(encodeTensorDrag(drag));
        const auto back = decodeTensorDrag(data.get());
        QVERIFY(back.has_value());
        QCOMPARE(back->model, drag.model);
        QCOMPARE(back->tensors, drag.tensors);
        QVERIFY(back->pick == TensorDrag::Pick::Role);
        // Another version, a truncated payload, unsorted indices, other formats: refused.
        QByteArray bytes = data->data(QString::fromLatin1(kTensorMimeType));
        QMimeData other;
        bytes[0] = char(kTensorMimeVersion + 1);
        other.setData(QString::fromLatin1(kTensorMimeType), bytes);
        QVERIFY(!decodeTensorDrag(&other));
        bytes[0] = char(kTensorMimeVersion);
        other.setData(QString::fromLatin1(kTensorMimeType), bytes.left(bytes.size() - 2));
        QVERIFY(!decodeTensorDrag(&other));
        drag.tensors = {5, 1};
        std::unique_ptr<QMimeData> unsorted(encodeTensorDrag(drag));
        QVERIFY(!decodeTensorDrag(unsorted.get()));
        other.clear();
        other.setText(QStringLiteral("blk.1.ffn_up.weight"));
        QVERIFY(!decodeTensorDrag(&other));
        QVERIFY(!decodeTensorDrag(nullptr));
    }

    // A tensor onto the same tensor: replace it.
    void dropTensor() {
        auto t = trees();
        QAbstractItemModelTester tester(&t->recipient);
        QVERIFY(!(t->recipient.flags(t->recipient.index(0, 0)) & Qt::ItemIsDragEnabled));
        QVERIFY(t->donor.flags(t->donor.index(0, 0)) & Qt::ItemIsDragEnabled);
        QString message;
        QVERIFY(dragAndDrop(*t, {tensorIndex(t->donor, "blk.1.ffn_up.weight")},
                            tensorIndex(t->recipient, "blk.1.ffn_up.weight"), &message));
        QCOMPARE(message, QStringLiteral("Replaces 1 tensor"));
        const GraftPlan& plan = t->document.plan();
        QCOMPARE(QString::fromStdString(plan.base), QString::fromStdString(m_recipient->model->path()));
        QCOMPARE(plan.donors.size(), std::size_t(1));
        QCOMPARE(plan.donors[0].first, std::string("stories260K-f32"));
        QCOMPARE(plan.operations.size(), std::size_t(1));
        QVERIFY(plan.operations[0].kind == GraftOperation::Kind::Replace);
        QCOMPARE(plan.operations[0].select.names, std::vector<std::string>{"blk.1.ffn_up.weight"});
        QVERIFY(!t->document.report().hasErrors());
        QCOMPARE(t->document.summary(0).tensors, 1);
        QCOMPARE(t->document.summary(0).bytes, std::uint64_t(172 * 64 * 4));
        const auto replaced = t->document.replacements();
        QCOMPARE(replaced.size(), std::size_t(1));
        QCOMPARE(replaced[0].recipientTensor, int(m_recipient->model->findTensor("blk.1.ffn_up.weight") -
                                                  m_recipient->model->tensors().data()));
        // The same role from another layer maps the layer; another role is refused.
        QVERIFY(dragAndDrop(*t, {tensorIndex(t->donor, "blk.1.ffn_up.weight")},
                            tensorIndex(t->recipient, "blk.3.ffn_up.weight"), &message));
        QVERIFY(t->document.plan().operations[1].kind == GraftOperation::Kind::MapLayer);
        QCOMPARE(t->document.plan().operations[1].fromLayer, 1u);
        QCOMPARE(t->document.plan().operations[1].toLayer, 3u);
        QVERIFY(!dragAndDrop(*t, {tensorIndex(t->donor, "blk.1.ffn_up.weight")},
                             tensorIndex(t->recipient, "blk.1.attn_q.weight"), &message));
        QVERIFY2(message.contains(QStringLiteral("a tensor replaces one of the same role")),
                 qPrintable(message));
        QCOMPARE(t->document.plan().operations.size(), std::size_t(2));
    }

    // A donor layer (the organ system's part of it) onto another recipient layer: map i → j.
    void dropLayer() {
        auto t = trees();
        const QModelIndex donorLayer =
            find(t->donor, QStringLiteral("layer 1"), find(t->donor, QStringLiteral("organ")));
        const QModelIndex recipientLayer =
            find(t->recipient, QStringLiteral("layer 2"), find(t->recipient, QStringLiteral("organ")));
        QVERIFY(donorLayer.isValid() && recipientLayer.isValid());
        QString message;
        QVERIFY(dragAndDrop(*t, {donorLayer}, recipientLayer, &message));
        QCOMPARE(message, QStringLiteral("Maps layer 1 → 2: 3 tensors"));
        const GraftOperation& op = t->document.plan().operations.at(0);
        QVERIFY(op.kind == GraftOperation::Kind::MapLayer);
        QCOMPARE(op.select.names, (std::vector<std::string>{"blk.2.ffn_gate.weight", "blk.2.ffn_down.weight",
                                                            "blk.2.ffn_up.weight"}));
        QCOMPARE(t->document.summary(0).tensors, 3);
        // A layer dropped on the same layer replaces in place; a whole system onto one layer is refused.
        QVERIFY(dragAndDrop(
            *t, {donorLayer},
            find(t->recipient, QStringLiteral("layer 1"), find(t->recipient, QStringLiteral("organ")))));
        QVERIFY(t->document.plan().operations.at(1).kind == GraftOperation::Kind::Replace);
        QVERIFY(!dragAndDrop(*t, {find(t->donor, QStringLiteral("organ"))}, recipientLayer, &message));
        QVERIFY2(message.contains(QStringLiteral("span several layers")), qPrintable(message));
        // Layer → system grouping: a layer node carries every system.
        t->donor.setGrouping(TreeGrouping::LayerSystem);
        t->recipient.setGrouping(TreeGrouping::LayerSystem);
        QVERIFY(dragAndDrop(*t, {find(t->donor, QStringLiteral("layer 4"))},
                            find(t->recipient, QStringLiteral("layer 0")), &message));
        QCOMPARE(t->document.plan().operations.at(2).select.names.size(), std::size_t(9));
    }

    // A whole system onto the recipient (its root): every tensor of the system, in place.
    void dropSystem() {
        auto t = trees();
        QString message;
        QVERIFY(dragAndDrop(*t, {find(t->donor, QStringLiteral("organ"))}, QModelIndex(), &message));
        QCOMPARE(message, QStringLiteral("Replaces 15 tensors"));
        QCOMPARE(t->document.summary(0).tensors, 15);
        QCOMPARE(t->document.describe(0),
                 QStringLiteral("replace organ of layers 0–4 (15 tensors) from stories260K-f32"));
        QCOMPARE(t->document.undoStack()->undoText(),
                 QStringLiteral("graft: replace organ of layers 0–4 (15 tensors) from stories260K-f32"));
        // Onto the recipient's norm system: none of the organs is a norm.
        QVERIFY(!dragAndDrop(*t, {find(t->donor, QStringLiteral("organ"))},
                             find(t->recipient, QStringLiteral("norm")), &message));
        QVERIFY2(message.contains(QStringLiteral("None of the dragged tensors belongs to norm")),
                 qPrintable(message));
        // A multi-selection of two tensors of different layers onto the model.
        QVERIFY(dragAndDrop(
            *t, {tensorIndex(t->donor, "blk.0.attn_q.weight"), tensorIndex(t->donor, "blk.4.attn_k.weight")},
            QModelIndex()));
        QCOMPARE(t->document.plan().operations.at(1).select.names.size(), std::size_t(2));
    }

    // Shapes that differ are refused with both shapes named; a drop that fits partly adds
    // the part that fits and says what it left out.
    void incompatibleAndPartialDrops() {
        auto t = trees();
        const QString tinyPath = sharedModel(QStringLiteral("llama-2-tiny-random-f16.gguf"));
        ORGAN_REQUIRE_SHARED(tinyPath);
        const auto tiny = ModelSnapshot::of(openModel(tinyPath.toStdString()));
        t->models.take(tiny);
        AnatomyTreeModel tinyTree;
        tinyTree.setSnapshot(tiny);
        tinyTree.setDragSource(true);
        std::unique_ptr<QMimeData> data(tinyTree.mimeData({tensorIndex(tinyTree, "blk.0.ffn_up.weight")}));
        const QModelIndex target = tensorIndex(t->recipient, "blk.0.ffn_up.weight");
        QVERIFY(!t->recipient.canDropMimeData(data.get(), Qt::CopyAction, -1, -1, target));
        QVERIFY2(t->recipient.dropMessage().contains(QStringLiteral("shape")) &&
                     t->recipient.dropMessage().contains(QStringLiteral("≠")),
                 qPrintable(t->recipient.dropMessage()));
        QVERIFY(!t->recipient.dropMimeData(data.get(), Qt::CopyAction, -1, -1, target));
        QVERIFY(t->document.isEmpty());

        // stories260K-f32 with one organ of another shape: layer 2's organs fit but one.
        const auto source = GgufFile::open(m_healthy.toStdString());
        GgufWriteSpec spec = specFromFile(*source);
        for (auto& tensor : spec.tensors) {
            if (tensor.name == "blk.2.ffn_up.weight") {
                tensor = patternTensor(tensor.name, TensorType::F32, {32, 64}, 7);
            }
        }
        const QString oddPath = m_dir.filePath(QStringLiteral("odd.gguf"));
        QVERIFY(writeFixture(oddPath, spec));
        const auto odd = ModelSnapshot::of(openModel(oddPath.toStdString()));
        t->models.take(odd);
        AnatomyTreeModel oddTree;
        oddTree.setSnapshot(odd);
        oddTree.setDragSource(true);
        std::unique_ptr<QMimeData> layer(oddTree.mimeData(
            {find(oddTree, QStringLiteral("layer 2"), find(oddTree, QStringLiteral("organ")))}));
        const QModelIndex organ2 =
            find(t->recipient, QStringLiteral("layer 2"), find(t->recipient, QStringLiteral("organ")));
        QVERIFY(t->recipient.canDropMimeData(layer.get(), Qt::CopyAction, -1, -1, organ2));
        QVERIFY2(t->recipient.dropMessage().contains(
                     QStringLiteral("Replaces 2 tensors; leaves out 1: blk.2.ffn_up.weight: shape 32 × 64")),
                 qPrintable(t->recipient.dropMessage()));
        QVERIFY(t->recipient.dropMimeData(layer.get(), Qt::CopyAction, -1, -1, organ2));
        QCOMPARE(t->document.plan().operations.at(0).select.names,
                 (std::vector<std::string>{"blk.2.ffn_gate.weight", "blk.2.ffn_down.weight"}));
        QVERIFY(!t->document.report().hasErrors());
        QVERIFY(t->document.lastDropMessage().contains(QStringLiteral("leaves out 1")));
        // The plan now grafts into the damaged model: another recipient is refused.
        AnatomyTreeModel other;
        other.setSnapshot(m_donor);
        other.setDropHandler(&t->document);
        std::unique_ptr<QMimeData> fromOdd(oddTree.mimeData({tensorIndex(oddTree, "blk.0.ffn_up.weight")}));
        QVERIFY(!other.canDropMimeData(fromOdd.get(), Qt::CopyAction, -1, -1, QModelIndex()));
        QVERIFY2(
            other.dropMessage().contains(QStringLiteral("The plan grafts into stories260K-damaged-f32.gguf")),
            qPrintable(other.dropMessage()));
    }

    // Two donors in one plan: the skeleton from one, organs from the other (converted from
    // F16 to the recipient's F32); each donor keeps its own id and preview colour index.
    void severalDonors() {
        auto t = trees();
        const QString f16Path = sharedModel(QStringLiteral("stories260K-f16.gguf"));
        ORGAN_REQUIRE_SHARED(f16Path);
        const auto f16 = ModelSnapshot::of(openModel(QFileInfo(f16Path).absoluteFilePath().toStdString()));
        t->models.take(f16);
        AnatomyTreeModel f16Tree;
        f16Tree.setSnapshot(f16);
        f16Tree.setDragSource(true);
        std::unique_ptr<QMimeData> skeleton(f16Tree.mimeData({find(f16Tree, QStringLiteral("skeleton"))}));
        QVERIFY(t->recipient.dropMimeData(skeleton.get(), Qt::CopyAction, -1, -1, QModelIndex()));
        QVERIFY(dragAndDrop(*t, {find(t->donor, QStringLiteral("organ"))}, QModelIndex()));
        const GraftPlan& plan = t->document.plan();
        QCOMPARE(plan.donors.size(), std::size_t(2));
        QCOMPARE(plan.donors[0].first, std::string("stories260K-f16"));
        QCOMPARE(plan.donors[1].first, std::string("stories260K-f32"));
        QVERIFY(!t->document.report().hasErrors());
        QCOMPARE(t->document.report().layout.tensorsFromDonors, std::uint64_t(20 + 15));
        int converted = 0;
        for (const ChimeraTensor& c : t->document.report().layout.tensors) {
            converted += c.converted;
        }
        QCOMPARE(converted, 20); // F16 → F32
        std::set<int> colours;
        for (const auto& r : t->document.replacements()) {
            colours.insert(r.donorIndex);
        }
        QCOMPARE(colours, (std::set<int>{0, 1}));
        // Removing the skeleton's operation drops its donor from the plan.
        t->document.removeOperation(0);
        QCOMPARE(t->document.plan().donors.size(), std::size_t(1));
        QCOMPARE(t->document.plan().operations.at(0).donor, std::string("stories260K-f32"));
    }

    // Every kind of edit undoes and redoes to the exact plan.
    void undoRedo() {
        auto t = trees();
        GraftPlanModel table(&t->document);
        QAbstractItemModelTester tester(&table);
        QCOMPARE(table.headerData(GraftPlanModel::Donor, Qt::Horizontal).toString(), QStringLiteral("from"));
        QCOMPARE(table.headerData(GraftPlanModel::Status, Qt::Horizontal).toString(),
                 QStringLiteral("status"));
        QUndoStack* undo = t->document.undoStack();
        std::vector<std::string> states{planJson(t->document)};
        auto step = [&] { states.push_back(planJson(t->document)); };
        const QString recipient = QString::fromStdString(m_recipient->model->path());
        QVERIFY(dragAndDrop(*t, {tensorIndex(t->donor, "blk.1.ffn_up.weight")},
                            tensorIndex(t->recipient, "blk.1.ffn_up.weight")));
        step();
        QVERIFY(dragAndDrop(
            *t, {find(t->donor, QStringLiteral("layer 1"), find(t->donor, QStringLiteral("organ")))},
            find(t->recipient, QStringLiteral("layer 3"), find(t->recipient, QStringLiteral("organ")))));
        step();
        t->document.duplicateLayer(recipient, 2);
        step();
        t->document.removeLayer(recipient, 0);
        step();
        t->document.repeatLayers(recipient, 1, 2);
        step();
        t->document.moveOperation(0, 1);
        step();
        t->document.removeOperation(2);
        step();
        t->document.clear();
        step();
        QCOMPARE(undo->count(), 8);
        QCOMPARE(table.rowCount(), 0);
        QVERIFY(t->document.isEmpty());
        for (int k = int(states.size()) - 2; k >= 0; --k) {
            undo->undo();
            QCOMPARE(planJson(t->document), states[std::size_t(k)]);
        }
        for (std::size_t k = 1; k < states.size(); ++k) {
            undo->redo();
            QCOMPARE(planJson(t->document), states[k]);
        }
        undo->undo();
        QCOMPARE(table.rowCount(), 4);
        QCOMPARE(table.index(0, GraftPlanModel::Operation).data().toString(),
                 QStringLiteral("map organ of layer 1 (3 tensors) from stories260K-f32 onto layer 3"));
        QCOMPARE(table.index(1, GraftPlanModel::Operation).data().toString(),
                 QStringLiteral("replace blk.1.ffn_up.weight from stories260K-f32"));
        QCOMPARE(table.index(2, GraftPlanModel::Operation).data().toString(),
                 QStringLiteral("remove layer 0"));
        QCOMPARE(table.index(2, GraftPlanModel::Donor).data().toString(), QStringLiteral("the recipient"));
        QCOMPARE(table.index(3, GraftPlanModel::Operation).data().toString(),
                 QStringLiteral("stack layers: the recipient 0–2, the recipient 1–2, the recipient 3–4"));
        QCOMPARE(table.index(3, GraftPlanModel::Status).data().toString(), QStringLiteral("ok"));
        QCOMPARE(table.index(0, GraftPlanModel::Operation).data(Qt::ToolTipRole).toString(),
                 QStringLiteral("map organ of layer 1 (3 tensors) from stories260K-f32 onto layer 3"));
        QVERIFY(table.index(3, GraftPlanModel::Status).data(Qt::ToolTipRole).isNull());
        QVERIFY(!t->document.report().hasErrors());
        // An operation that cannot apply shows its error in its row.
        t->document.removeLayer(recipient, 9);
        QVERIFY(t->document.report().hasErrors());
        QCOMPARE(table.index(4, GraftPlanModel::Status).data().toString(), QStringLiteral("1 error"));
        QVERIFY2(table.index(4, GraftPlanModel::Status)
                     .data(Qt::ToolTipRole)
                     .toString()
                     .startsWith(QStringLiteral("error: ")),
                 qPrintable(table.index(4, GraftPlanModel::Status).data(Qt::ToolTipRole).toString()));
        undo->undo();
        // The stack rebuilds the layers from the base: the grafts before it are overridden.
        QCOMPARE(table.index(0, GraftPlanModel::Tensors).data().toInt(), 0);
        QCOMPARE(table.index(0, GraftPlanModel::Status).data().toString(), QStringLiteral("no effect"));
    }

    // Naming the chimera (as Assemble chimera… does) is a change of the plan but not of what the
    // chimera computes: its vital signs stay current; any other edit, and undoing one, does not.
    void namingKeepsTheChimeraRevision() {
        auto t = trees();
        QVERIFY(dragAndDrop(*t, {tensorIndex(t->donor, "blk.1.ffn_up.weight")},
                            tensorIndex(t->recipient, "blk.1.ffn_up.weight")));
        const quint64 grafted = t->document.chimeraRevision();
        const quint64 revision = t->document.revision();
        t->document.setChimeraName(QStringLiteral("renamed chimera"));
        QCOMPARE(t->document.chimeraName(), QStringLiteral("renamed chimera"));
        QVERIFY(t->document.revision() > revision);
        QCOMPARE(t->document.chimeraRevision(), grafted);
        t->document.undoStack()->undo(); // the name goes: still the same tensors
        QCOMPARE(t->document.chimeraRevision(), grafted);
        t->document.undoStack()->undo(); // the graft goes
        QVERIFY(t->document.chimeraRevision() > grafted);
    }

    // Save → load gives the same plan; a plan saved by `organ graft` opens too. Closing a
    // donor removes its operations (one undoable step).
    void saveLoadAndModels() {
        auto t = trees();
        QVERIFY(dragAndDrop(*t, {find(t->donor, QStringLiteral("organ"))}, QModelIndex()));
        QVERIFY(t->document.isModified());
        const QString path = m_dir.filePath(QStringLiteral("plan.json"));
        t->document.save(path);
        QVERIFY(!t->document.isModified());
        OpenModels both;
        both.take(m_donor);
        both.take(m_recipient);
        GraftDocument again(&both);
        again.load(path);
        QCOMPARE(planJson(again), planJson(t->document));
        QVERIFY(!again.isModified());
        QCOMPARE(again.report().layout.tensorsFromDonors, std::uint64_t(15));
        // Without its donor open the plan cannot be checked, and says which file is missing.
        OpenModels recipientOnly;
        recipientOnly.take(m_recipient);
        GraftDocument missing(&recipientOnly);
        missing.load(path);
        QVERIFY2(missing.unavailable().contains(QStringLiteral("stories260K-f32.gguf is not open")),
                 qPrintable(missing.unavailable()));
        QVERIFY(t->document.uses(QString::fromStdString(m_donor->model->path())));
        t->document.removeOperationsUsing(QString::fromStdString(m_donor->model->path()));
        QVERIFY(t->document.isEmpty());
        QVERIFY(t->document.base().isEmpty());
        t->document.undoStack()->undo();
        QCOMPARE(planJson(t->document), planJson(again));
    }
};

QTEST_GUILESS_MAIN(TestGraftDocument)
#include "tst_graft_document.moc"
