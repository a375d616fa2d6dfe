// The Qt-free core of the window's drops: what a drop adds, narrows or refuses, as data.
// Models are specimens written by the test (one quantized to Q4_K_M): no shared files needed.
#include "gguf/specimen.h"
#include "graft/drop_evaluation.h"
#include "quant/quantize_model.h"

#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <map>

using namespace organ;

namespace {

struct Open {
    std::shared_ptr<const GgufModel> model;
    ModelAnatomy anatomy;
    std::string path;
    DropModel side() const { return {*model, anatomy, path}; }
};

// Indices of the model's tensors in `layer` (of `system` when given).
std::vector<int> layerTensors(const Open& m, std::uint32_t layer, std::optional<System> system = {}) {
    std::vector<int> out;
    for (std::size_t i = 0; i < m.anatomy.tensors.size(); ++i) {
        const auto& a = m.anatomy.tensors[i];
        if (a.layer == layer && (!system || a.system == *system)) {
            out.push_back(int(i));
        }
    }
    return out;
}

int indexOf(const Open& m, const std::string& name) {
    const auto& t = m.model->tensors();
    for (std::size_t i = 0; i < t.size(); ++i) {
        if (t[i].name == name) {
            return int(i);
        }
    }
    return -1;
}

} // namespace

class TestDropEvaluation : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::map<std::string, Open> m_models;
    Open m_recipient;
    Open m_donor;
    Open m_narrow; // another feed-forward width

    Open write(const QString& name, std::uint64_t seed, SpecimenShape shape = {}) {
        Open m;
        m.path = m_dir.filePath(name).toStdString();
        const JobResult written = writeSpecimen(m.path, seed, shape);
        if (!written.isOk()) {
            qFatal("%s", written.message.c_str());
        }
        m.model = GgufModel::open(m.path);
        m.anatomy = analyzeAnatomy(*m.model);
        m_models[m.path] = m;
        return m;
    }

    OpenPlanModels opener() const {
        return [this](const GraftPlan& plan, std::string* missing) -> std::optional<NamedModels> {
            NamedModels named;
            auto add = [&](const std::string& id, const std::string& path) {
                const auto it = m_models.find(path);
                if (it == m_models.end()) {
                    *missing = path;
                    return false;
                }
                named.emplace_back(id, it->second.model);
                return true;
            };
            if (!add("base", plan.base)) {
                return std::nullopt;
            }
            for (const auto& [id, path] : plan.donors) {
                if (!add(id, path)) {
                    return std::nullopt;
                }
            }
            return named;
        };
    }

    DropEvaluation drop(const std::vector<int>& dragged, const DropTarget& target, const GraftPlan& plan = {},
                        const Open* donor = nullptr) const {
        return evaluateDrop(plan, m_recipient.side(), (donor ? *donor : m_donor).side(), dragged, target,
                            opener());
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_recipient = write(QStringLiteral("recipient.gguf"), 1);
        m_donor = write(QStringLiteral("donor-model.gguf"), 2);
        SpecimenShape narrow;
        narrow.feedForward = 128;
        m_narrow = write(QStringLiteral("narrow.gguf"), 3, narrow);
    }

    void layerOntoAnotherLayerMapsIt() {
        DropTarget target;
        target.kind = DropTarget::Kind::Layer;
        target.layer = 3;
        const DropEvaluation e = drop(layerTensors(m_donor, 1), target);
        QVERIFY(e.ok());
        QCOMPARE(e.operation.kind, GraftOperation::Kind::MapLayer);
        QCOMPARE(e.operation.fromLayer, 1u);
        QCOMPARE(e.operation.toLayer, 3u);
        QCOMPARE(e.tensors, layerTensors(m_recipient, 3).size());
        QVERIFY(std::all_of(e.operation.select.names.begin(), e.operation.select.names.end(),
                            [](const std::string& n) { return n.starts_with("blk.3."); }));
        QCOMPARE(e.plan.base, m_recipient.path);
        QCOMPARE(e.plan.donors.size(), std::size_t(1));
        QCOMPARE(e.plan.donors.front().first, std::string("donor-model"));
        QCOMPARE(e.operation.donor, std::string("donor-model"));
        QCOMPARE(e.plan.operations.size(), std::size_t(1));
        QVERIFY(e.leftOut.empty());
    }

    void sameLayerReplacesInPlace() {
        DropTarget target;
        target.kind = DropTarget::Kind::Layer;
        target.layer = 2;
        const DropEvaluation e = drop(layerTensors(m_donor, 2), target);
        QVERIFY(e.ok());
        QCOMPARE(e.operation.kind, GraftOperation::Kind::Replace);
        QCOMPARE(e.operation.select.names.front().substr(0, 6), std::string("blk.2."));
    }

    void aSystemTargetTakesItsTensorsOnly() {
        DropTarget target;
        target.kind = DropTarget::Kind::Layer;
        target.layer = 0;
        target.hasSystem = true;
        target.system = System::Organ;
        const DropEvaluation e = drop(layerTensors(m_donor, 1), target);
        QVERIFY(e.ok());
        QCOMPARE(e.tensors, layerTensors(m_donor, 1, System::Organ).size());
        QCOMPARE(e.operation.select.names,
                 (std::vector<std::string>{"blk.0.ffn_gate.weight", "blk.0.ffn_up.weight",
                                           "blk.0.ffn_down.weight"}));
        target.system = System::Adapter;
        const DropEvaluation none = drop(layerTensors(m_donor, 1), target);
        QCOMPARE(none.refusal, DropEvaluation::Refusal::NoneInSystem);
        QCOMPARE(none.system, System::Adapter);
    }

    void aTensorReplacesOnlyItsRole() {
        DropTarget onQ;
        onQ.kind = DropTarget::Kind::Tensor;
        onQ.tensor = indexOf(m_recipient, "blk.2.attn_q.weight");
        const DropEvaluation other = drop({indexOf(m_donor, "blk.1.attn_k.weight")}, onQ);
        QCOMPARE(other.refusal, DropEvaluation::Refusal::DifferentRole);
        QCOMPARE(other.source, std::string("blk.1.attn_k.weight"));
        QCOMPARE(other.wanted, std::string("blk.2.attn_q.weight"));
        const DropEvaluation same = drop({indexOf(m_donor, "blk.1.attn_q.weight")}, onQ);
        QVERIFY(same.ok());
        QCOMPARE(same.operation.kind, GraftOperation::Kind::MapLayer);
        QCOMPARE(same.operation.select.names, std::vector<std::string>{"blk.2.attn_q.weight"});
    }

    void severalLayersOnALayerAreRefused() {
        DropTarget target;
        target.kind = DropTarget::Kind::Layer;
        target.layer = 0;
        std::vector<int> two = layerTensors(m_donor, 1);
        const auto more = layerTensors(m_donor, 2);
        two.insert(two.end(), more.begin(), more.end());
        std::sort(two.begin(), two.end());
        QCOMPARE(drop(two, target).refusal, DropEvaluation::Refusal::SpansLayers);
        // The same tensors on the whole model graft in place.
        QVERIFY(drop(two, DropTarget{}).ok());
    }

    void refusalsBeforeAnyCheck() {
        DropTarget model;
        QCOMPARE(
            evaluateDrop({}, m_recipient.side(), m_recipient.side(), std::vector<int>{0}, model, opener())
                .refusal,
            DropEvaluation::Refusal::SameModel);
        QCOMPARE(drop({int(m_donor.model->tensors().size())}, model).refusal,
                 DropEvaluation::Refusal::UnknownTensors);
        QCOMPARE(drop({}, model).refusal, DropEvaluation::Refusal::UnknownTensors);
        DropTarget badTensor;
        badTensor.kind = DropTarget::Kind::Tensor;
        badTensor.tensor = 100000;
        QCOMPARE(drop({0}, badTensor).refusal, DropEvaluation::Refusal::UnknownTensors);
        GraftPlan other;
        other.base = m_donor.path;
        const DropEvaluation e = drop({0}, model, other);
        QCOMPARE(e.refusal, DropEvaluation::Refusal::OtherBase);
        QCOMPARE(e.otherBase, m_donor.path);
        GraftPlan closed;
        closed.base = m_recipient.path;
        closed.donors.emplace_back("gone", m_dir.filePath(QStringLiteral("gone.gguf")).toStdString());
        const DropEvaluation notOpen = drop({0}, model, closed);
        QCOMPARE(notOpen.refusal, DropEvaluation::Refusal::ModelNotOpen);
        QCOMPARE(notOpen.missing, closed.donors.front().second);
    }

    void incompatibleTensorsAreLeftOut() {
        DropTarget target;
        target.kind = DropTarget::Kind::Layer;
        target.layer = 1;
        const DropEvaluation e = drop(layerTensors(m_narrow, 1), target, {}, &m_narrow);
        QVERIFY(e.ok());
        QCOMPARE(e.leftOutTensors, std::size_t(3)); // ffn_gate, ffn_up, ffn_down: another width
        QVERIFY(!e.leftOut.empty());
        QCOMPARE(e.leftOut.front().why, DropEvaluation::LeftOut::Why::Finding);
        QVERIFY(e.leftOut.front().finding.find("shape") != std::string::npos);
        QCOMPARE(e.tensors, layerTensors(m_recipient, 1).size() - 3);
        for (const auto& name : e.operation.select.names) {
            QVERIFY2(name.find("ffn_up") == std::string::npos && name.find("ffn_gate") == std::string::npos &&
                         name.find("ffn_down") == std::string::npos,
                     name.c_str());
        }
        // Only the mismatched tensors: nothing fits.
        const DropEvaluation nothing = drop(layerTensors(m_narrow, 1, System::Organ), target, {}, &m_narrow);
        QCOMPARE(nothing.refusal, DropEvaluation::Refusal::NothingFits);
        QCOMPARE(nothing.leftOutTensors, std::size_t(3));
    }

    // A K-quant recipient (a Q4_K_M of a specimen whose rows fit 256) takes an F32 donor's layer:
    // every tensor is converted to the recipient's type, none left out.
    void aKQuantRecipientTakesTheLayer() {
        SpecimenShape wide;
        wide.embedding = 256;
        wide.feedForward = 512;
        const Open f32 = write(QStringLiteral("wide-recipient-f32.gguf"), 5, wide);
        const Open donor = write(QStringLiteral("wide-donor.gguf"), 6, wide);
        Open recipient;
        recipient.path = m_dir.filePath(QStringLiteral("wide-recipient-q4_k_m.gguf")).toStdString();
        QuantizeRecipe recipe;
        recipe.fileType = QuantFileType::Q4_K_M;
        QVERIFY(quantizeModel(*f32.model, recipe, nullptr, recipient.path).written.isOk());
        recipient.model = GgufModel::open(recipient.path);
        recipient.anatomy = analyzeAnatomy(*recipient.model);
        m_models[recipient.path] = recipient;
        QCOMPARE(recipient.model->findTensor("blk.1.ffn_up.weight")->type, TensorType::Q4_K);
        DropTarget target;
        target.kind = DropTarget::Kind::Layer;
        target.layer = 1;
        const DropEvaluation e =
            evaluateDrop({}, recipient.side(), donor.side(), layerTensors(donor, 1), target, opener());
        QVERIFY2(e.ok(), e.reason.c_str());
        QCOMPARE(e.leftOutTensors, std::size_t(0));
        QCOMPARE(e.tensors, layerTensors(recipient, 1).size());
    }

    void donorIds() {
        GraftPlan plan;
        QCOMPARE(plan.ensureDonor("/m/donor-model.gguf"), std::string("donor-model"));
        QCOMPARE(plan.ensureDonor("/m/donor-model.gguf"), std::string("donor-model")); // the same donor
        QCOMPARE(plan.ensureDonor("/other/donor-model.gguf"), std::string("donor-model-2"));
        QCOMPARE(plan.ensureDonor("/m/mod\xc3\xa8le v2.Q4_K.gguf"), std::string("mod-le-v2-Q4-K"));
        QCOMPARE(plan.ensureDonor("/m/base.gguf"), std::string("donor"));
        QCOMPARE(plan.ensureDonor("/m/.gguf"), std::string("donor-2"));
        QCOMPARE(plan.donors.size(), std::size_t(5));
    }
};

QTEST_GUILESS_MAIN(TestDropEvaluation)
#include "tst_drop_evaluation.moc"
