// Layer surgery that llama.cpp accepts: every layer operation on every shared architecture
// gives a chimera that validates, with its layer-indexed metadata (per-layer arrays,
// leading_dense_block_count) rewritten to what is computed by hand here; plans that cannot
// be made consistent are refused before anything is written; organ validate follows
// llama.cpp's loader rules.
#include "anatomy/model_facts.h"
#include "anatomy/model_validation.h"
#include "fixtures.h"
#include "gguf/gguf_model.h"
#include "gguf/gguf_writer.h"
#include "graft/assembly.h"
#include "shared_models.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <numeric>

using namespace organ;
using namespace organ::testing;

namespace {

GraftOperation op(GraftOperation::Kind kind, std::uint32_t layer) {
    GraftOperation o;
    o.kind = kind;
    o.toLayer = layer;
    return o;
}

GraftOperation stack(std::vector<LayerRange> runs) {
    GraftOperation o;
    o.kind = GraftOperation::Kind::StackLayers;
    o.stack = std::move(runs);
    return o;
}

std::vector<std::uint64_t> numbers(const GgufModel& model, const std::string& key) {
    std::vector<std::uint64_t> out;
    const MetaValue* value = model.find(key);
    if (value == nullptr) {
        return out;
    }
    if (!value->isArray()) {
        return {value->asUInt().value_or(0)};
    }
    for (const MetaValue& e : value->elements(value->arraySize())) {
        out.push_back(e.asBool() ? std::uint64_t(*e.asBool()) : e.asUInt().value_or(0));
    }
    return out;
}

std::string messages(const std::vector<Finding>& findings) {
    std::string out;
    for (const Finding& f : findings) {
        out += std::string(severityName(f.severity)) + ": " + f.message + "\n";
    }
    return out;
}

bool hasError(const std::vector<Finding>& findings) {
    return std::any_of(findings.begin(), findings.end(),
                       [](const Finding& f) { return f.severity == Finding::Severity::Error; });
}

} // namespace

class TestLayerSurgery : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    std::string path(const QString& name) const { return m_dir.filePath(name).toStdString(); }

    // Runs a plan through check → assemble → validate; the output must validate.
    std::shared_ptr<const GgufModel> graft(GraftPlan plan, const QString& name,
                                           std::string* report = nullptr) {
        plan.output = path(name);
        const GraftModels models = GraftModels::open(plan);
        const GraftOutcome outcome = graftChimera(plan, models, plan.output);
        if (report != nullptr) {
            *report = messages(outcome.report.findings);
        }
        if (!outcome.written.isOk()) {
            qWarning("%s\n%s", outcome.written.message.c_str(), messages(outcome.report.findings).c_str());
            return nullptr;
        }
        if (hasError(outcome.validation)) {
            qWarning("%s", messages(outcome.validation).c_str());
            return nullptr;
        }
        return GgufModel::open(plan.output);
    }

private slots:
    void initTestCase() {
        QVERIFY(writeFixture(m_dir.filePath(QStringLiteral("per-layer.gguf")), perLayerLlama(1)));
        QVERIFY(writeFixture(m_dir.filePath(QStringLiteral("per-layer-donor.gguf")),
                             perLayerLlama(2, {false, false, false, false, false})));
        QVERIFY(writeFixture(m_dir.filePath(QStringLiteral("per-layer-wide.gguf")),
                             perLayerLlama(3, {true, false, true, false, true}, 32)));
    }

    // Per-layer arrays follow every layer operation, value for value.
    void perLayerArraysFollowTheLayers_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<QList<quint64>>("flags");
        QTest::newRow("remove the first") << 0 << QList<quint64>{0, 1, 0, 1};
        QTest::newRow("remove a middle one") << 1 << QList<quint64>{1, 0, 0, 1};
        QTest::newRow("remove the last") << 2 << QList<quint64>{1, 0, 1, 0};
        QTest::newRow("duplicate one") << 3 << QList<quint64>{1, 0, 0, 1, 0, 1};
        QTest::newRow("stack a run twice") << 4 << QList<quint64>{1, 0, 1, 0, 0, 1, 0, 1};
    }
    void perLayerArraysFollowTheLayers() {
        QFETCH(int, which);
        QFETCH(QList<quint64>, flags);
        GraftPlan plan;
        plan.base = path(QStringLiteral("per-layer.gguf"));
        using K = GraftOperation::Kind;
        const GraftOperation ops[] = {op(K::RemoveLayer, 0), op(K::RemoveLayer, 2), op(K::RemoveLayer, 4),
                                      op(K::DuplicateLayer, 1), stack({{"base", 0, 3}, {"base", 1, 4}})};
        plan.operations.push_back(ops[which]);
        std::string report;
        const auto chimera = graft(plan, QStringLiteral("per-layer-%1.gguf").arg(which), &report);
        QVERIFY(chimera != nullptr);
        const auto layers = std::size_t(flags.size());
        QCOMPARE(numbers(*chimera, "llama.feed_forward_length"), std::vector<std::uint64_t>(layers, 16));
        QCOMPARE(numbers(*chimera, "llama.attention.head_count"), std::vector<std::uint64_t>(layers, 4));
        QCOMPARE(numbers(*chimera, "llama.attention.head_count_kv"), std::vector<std::uint64_t>(layers, 4));
        QCOMPARE(numbers(*chimera, "llama.attention.sliding_window_pattern"),
                 std::vector<std::uint64_t>(flags.begin(), flags.end()));
        QCOMPARE(numbers(*chimera, "llama.block_count"), std::vector<std::uint64_t>{std::uint64_t(layers)});
        QVERIFY2(report.find("info: llama.feed_forward_length: array of 5 → " + std::to_string(layers) +
                             " entries") != std::string::npos,
                 report.c_str());
    }

    // A donor's layer brings its per-layer values for the systems it brings; the rest of the
    // layer keeps the recipient's, and the report says so.
    void mappedLayersCarryTheirValues() {
        GraftPlan plan;
        plan.base = path(QStringLiteral("per-layer.gguf"));
        plan.donors.emplace_back("d", path(QStringLiteral("per-layer-donor.gguf")));
        GraftOperation map;
        map.kind = GraftOperation::Kind::MapLayer;
        map.donor = "d";
        map.fromLayer = 2;
        map.toLayer = 2;
        map.select.system = System::Skeleton;
        plan.operations.push_back(map);
        std::string report;
        const auto chimera = graft(plan, QStringLiteral("mapped.gguf"), &report);
        QVERIFY(chimera != nullptr);
        // The skeleton's flag comes with the donor's attention (false); the feed-forward length
        // stays the recipient's.
        QCOMPARE(numbers(*chimera, "llama.attention.sliding_window_pattern"),
                 (std::vector<std::uint64_t>{1, 0, 0, 0, 1}));
        QCOMPARE(numbers(*chimera, "llama.feed_forward_length"), (std::vector<std::uint64_t>(5, 16)));
        QVERIFY2(
            report.find("info: llama.attention.sliding_window_pattern: layer 2 take the donor's value") !=
                std::string::npos,
            report.c_str());
    }

    // A donor layer of another width cannot go into a llama model, which sizes every block by
    // block 0's numbers: refused with the shapes before anything is written, whole or in part.
    void otherWidthsAreRefused_data() {
        QTest::addColumn<bool>("whole");
        QTest::newRow("the donor's feed-forward") << true;
        QTest::newRow("one tensor of it") << false;
    }
    void otherWidthsAreRefused() {
        QFETCH(bool, whole);
        GraftPlan plan;
        plan.base = path(QStringLiteral("per-layer.gguf"));
        plan.donors.emplace_back("w", path(QStringLiteral("per-layer-wide.gguf")));
        plan.output = path(QStringLiteral("wider.gguf"));
        GraftOperation map;
        map.kind = GraftOperation::Kind::MapLayer;
        map.donor = "w";
        map.fromLayer = 4;
        map.toLayer = 1;
        if (whole) {
            map.select.system = System::Organ;
        } else {
            map.select.names = {"blk.1.ffn_up.weight"};
        }
        plan.operations.push_back(map);
        const GraftModels models = GraftModels::open(plan);
        const std::string found = messages(checkGraft(plan, models).findings);
        QVERIFY2(found.find("error: blk.1.ffn_up.weight: shape 16 × 32 (w) ≠ 16 × 16 (base)") !=
                     std::string::npos,
                 found.c_str());
        QVERIFY(!graftChimera(plan, models, plan.output).written.isOk());
        QVERIFY(!QFileInfo::exists(QString::fromStdString(plan.output)));
    }

    // DeepSeek-2's dense leading blocks: recounted from the layers the chimera has; refused,
    // before anything is written, when dense layers would follow MoE layers.
    void leadingDenseBlocks_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<int>("dense"); // -1: refused
        QTest::newRow("remove the dense layer") << 0 << 0;
        QTest::newRow("remove a MoE layer") << 1 << 1;
        QTest::newRow("duplicate the dense layer") << 2 << 2;
        QTest::newRow("duplicate a MoE layer") << 3 << 1;
        QTest::newRow("stack dense after MoE") << 4 << -1;
    }
    void leadingDenseBlocks() {
        QFETCH(int, which);
        QFETCH(int, dense);
        const QString model = sharedModel(QStringLiteral("zoo/tiny-deepseek2-f32.gguf"));
        ORGAN_REQUIRE_SHARED(model);
        GraftPlan plan;
        plan.base = model.toStdString();
        using K = GraftOperation::Kind;
        const GraftOperation ops[] = {op(K::RemoveLayer, 0), op(K::RemoveLayer, 1), op(K::DuplicateLayer, 0),
                                      op(K::DuplicateLayer, 2), stack({{"base", 0, 2}, {"base", 0, 0}})};
        plan.operations.push_back(ops[which]);
        const QString name = QStringLiteral("deepseek-%1.gguf").arg(which);
        if (dense < 0) {
            plan.output = path(name);
            const CompatibilityReport report = checkGraft(plan, GraftModels::open(plan));
            QVERIFY(report.hasErrors());
            QVERIFY2(messages(report.findings)
                             .find("deepseek2.leading_dense_block_count: dense layers (layer 3) would follow "
                                   "mixture-of-experts layers") != std::string::npos,
                     messages(report.findings).c_str());
            QVERIFY(!graftChimera(plan, GraftModels::open(plan), plan.output).written.isOk());
            QVERIFY(!QFileInfo::exists(QString::fromStdString(plan.output)));
            return;
        }
        const auto chimera = graft(plan, name);
        QVERIFY(chimera != nullptr);
        QCOMPARE(numbers(*chimera, "deepseek2.leading_dense_block_count"),
                 std::vector<std::uint64_t>{std::uint64_t(dense)});
    }

    // Every shared architecture through every layer operation: the chimera validates (as
    // llama.cpp would load it) and its block count and per-layer keys follow.
    void everyArchitecture_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("which");
        const QStringList models = {
            QStringLiteral("stories260K-f32.gguf"),       QStringLiteral("zoo/tiny-qwen2-f32.gguf"),
            QStringLiteral("zoo/tiny-qwen2moe-f32.gguf"), QStringLiteral("zoo/tiny-deepseek2-f32.gguf"),
            QStringLiteral("zoo/tiny-gemma2-f32.gguf"),   QStringLiteral("zoo/tiny-gemma3-f32.gguf"),
            QStringLiteral("zoo/tiny-phi3-f32.gguf"),     QStringLiteral("zoo/tiny-gpt2-f32.gguf"),
            QStringLiteral("zoo/tiny-mamba-f32.gguf"),    QStringLiteral("zoo/tiny-bert-f32.gguf")};
        const char* names[] = {"remove first", "remove middle", "remove last",
                               "duplicate",    "stack twice",   "map donor"};
        for (const QString& m : models) {
            for (int k = 0; k < 6; ++k) {
                QTest::newRow(qPrintable(QFileInfo(m).baseName() + u' ' + QString::fromLatin1(names[k])))
                    << m << k;
            }
        }
    }
    void everyArchitecture() {
        QFETCH(QString, model);
        QFETCH(int, which);
        const QString file = sharedModel(model);
        ORGAN_REQUIRE_SHARED(file);
        const auto base = GgufModel::open(file.toStdString());
        const auto blocks = static_cast<std::uint32_t>(*base->archValue("block_count"));
        const std::string arch = base->architecture();
        const QString donorCopy = m_dir.filePath(QStringLiteral("donor-") + QFileInfo(model).fileName());
        QFile::remove(donorCopy);
        QVERIFY(QFile::copy(file, donorCopy));
        GraftPlan plan;
        plan.base = file.toStdString();
        plan.donors.emplace_back("d", donorCopy.toStdString());
        using K = GraftOperation::Kind;
        // By hand: which base layer each chimera layer is made from.
        std::vector<std::uint32_t> from(blocks);
        std::iota(from.begin(), from.end(), 0U);
        switch (which) {
        case 0:
        case 1:
        case 2: {
            const std::uint32_t removed = which == 0 ? 0 : (which == 1 ? blocks / 2 : blocks - 1);
            plan.operations.push_back(op(K::RemoveLayer, removed));
            from.erase(from.begin() + removed);
            break;
        }
        case 3:
            plan.operations.push_back(op(K::DuplicateLayer, blocks - 1));
            from.push_back(blocks - 1);
            break;
        case 4: // the last layer's run again: the dense/MoE split of deepseek2 holds
            plan.operations.push_back(stack({{"base", 0, blocks - 1}, {"base", blocks - 1, blocks - 1}}));
            from.push_back(blocks - 1);
            break;
        default: { // the donor is a copy: its last layer's tensors land in the one before
            GraftOperation map;
            map.kind = K::MapLayer;
            map.donor = "d";
            map.fromLayer = blocks - 1;
            map.toLayer = blocks - 2;
            plan.operations.push_back(map);
            from[blocks - 2] = blocks - 1;
            break;
        }
        }
        const auto chimera = graft(plan, QStringLiteral("every.gguf"));
        QVERIFY(chimera != nullptr);
        const auto layers = std::uint64_t(from.size());

        // Metadata: the base's, with the block count, per-layer arrays and the dense-layer
        // count following the layers.
        for (const MetaEntry& entry : base->metadata()) {
            const MetaValue* got = chimera->find(entry.key);
            QVERIFY2(got != nullptr, entry.key.c_str());
            MetaValue expected = entry.value;
            if (entry.key == arch + ".block_count") {
                expected = MetaValue::fromU32(std::uint32_t(layers));
            } else if (entry.key == arch + ".leading_dense_block_count") {
                std::uint32_t dense = 0;
                while (dense < from.size() && from[dense] < *entry.value.asUInt()) {
                    ++dense;
                }
                expected = MetaValue::fromU32(dense);
            } else if (entry.key.starts_with(arch + ".") && entry.value.isArray() &&
                       entry.value.arraySize() == blocks) {
                const auto values = entry.value.elements(blocks);
                std::vector<MetaValue> follow;
                for (std::uint32_t layer : from) {
                    follow.push_back(values[layer]);
                }
                expected = MetaValue::fromArray(entry.value.elementType(), follow);
            }
            QVERIFY2(*got == expected, entry.key.c_str());
        }
        // …and nothing else but the provenance.
        const auto added = std::count_if(chimera->metadata().begin(), chimera->metadata().end(),
                                         [&](const MetaEntry& e) { return base->find(e.key) == nullptr; });
        const auto provenance =
            std::count_if(chimera->metadata().begin(), chimera->metadata().end(),
                          [](const MetaEntry& e) { return e.key.starts_with("organ.graft."); });
        QCOMPARE(added, provenance);

        // Tensors: the base's outside layers; layer j holds base layer from[j]'s, byte for byte.
        std::size_t expectedTensors = 0;
        for (const TensorInfo& tensor : base->tensors()) {
            const auto layer = parseLayerName(tensor.name);
            expectedTensors += layer ? std::size_t(std::count(from.begin(), from.end(), layer->layer)) : 1;
        }
        QCOMPARE(chimera->tensors().size(), expectedTensors);
        for (const TensorInfo& tensor : chimera->tensors()) {
            std::string source = tensor.name;
            if (const auto layer = parseLayerName(tensor.name)) {
                QVERIFY2(layer->layer < from.size(), tensor.name.c_str());
                source = "blk." + std::to_string(from[layer->layer]) + "." + std::string(layer->rest);
            }
            const TensorInfo* original = base->findTensor(source);
            QVERIFY2(original != nullptr, tensor.name.c_str());
            QCOMPARE(tensor.type, original->type);
            QCOMPARE(tensor.nDims, original->nDims);
            QVERIFY(tensor.ne == original->ne);
            const auto a = chimera->tensorData(tensor);
            const auto b = base->tensorData(*original);
            QVERIFY2(std::equal(a.begin(), a.end(), b.begin(), b.end()), tensor.name.c_str());
        }
    }

    // A plan whose chimera would not load is refused before anything is written, unless
    // --keep-invalid asks for the file (then it is written and named invalid).
    void invalidChimerasAreNotKept() {
        GraftPlan plan;
        plan.base = path(QStringLiteral("per-layer.gguf"));
        GraftOperation wrongType;
        wrongType.kind = GraftOperation::Kind::SetMetadata;
        wrongType.key = "llama.block_count";
        wrongType.value = MetaValue::fromU64(5);
        plan.operations.push_back(wrongType);
        plan.output = path(QStringLiteral("invalid.gguf"));
        const GraftModels models = GraftModels::open(plan);
        const GraftOutcome refused = graftChimera(plan, models, plan.output);
        QVERIFY(!refused.written.isOk());
        QVERIFY2(messages(refused.report.findings)
                         .find("error: the chimera would not load: the key llama.block_count is u64; "
                               "llama.cpp reads it as "
                               "u32") != std::string::npos,
                 messages(refused.report.findings).c_str());
        QVERIFY(!QFileInfo::exists(QString::fromStdString(plan.output)));
        QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("invalid.gguf*")}).size(), 0);
        const GraftOutcome kept = graftChimera(plan, models, plan.output, AssemblyOptions{true, {}});
        QVERIFY2(kept.written.isOk(), kept.written.message.c_str());
        QVERIFY(hasError(kept.validation));
        QVERIFY(QFileInfo::exists(QString::fromStdString(plan.output)));
    }

    // organ validate says what llama.cpp's loader says, in its words where it has them.
    void loaderRules_data() {
        QTest::addColumn<QString>("change");
        QTest::addColumn<QString>("expected");
        QTest::newRow("array of the wrong length")
            << QStringLiteral("ff-array-4")
            << QStringLiteral(
                   "error: the key llama.feed_forward_length has wrong array length; expected 5, got 4");
        QTest::newRow("block_count as u64")
            << QStringLiteral("blocks-u64")
            << QStringLiteral("error: the key llama.block_count is u64; llama.cpp reads it as u32");
        QTest::newRow("more than 512 blocks")
            << QStringLiteral("blocks-600")
            << QStringLiteral("error: llama.block_count is 600; llama.cpp allows at most 512");
        QTest::newRow("no epsilon") << QStringLiteral("no-eps")
                                    << QStringLiteral("error: the key llama.attention.layer_norm_rms_epsilon "
                                                      "is missing (llama.cpp requires it)");
        QTest::newRow("no tokenizer") << QStringLiteral("no-tokenizer")
                                      << QStringLiteral("error: the key tokenizer.ggml.model is missing");
        QTest::newRow("a tensor llama does not load")
            << QStringLiteral("extra-tensor")
            << QStringLiteral("error: llama.cpp does not load blk.0.attn_sinks.weight");
        QTest::newRow("block 0's numbers size every block")
            << QStringLiteral("ff-array-99-first")
            << QStringLiteral(
                   "error: blk.1.ffn_up.weight: shape 16 × 16, expected 16 × 99 from embedding_length 16 and "
                   "feed_forward_length 99 (block 0's values: llama sizes every block by them)");
        QTest::newRow("other numbers for later blocks") << QStringLiteral("ff-array-99-second") << QString();
    }
    void loaderRules() {
        QFETCH(QString, change);
        QFETCH(QString, expected);
        GgufWriteSpec spec = perLayerLlama(1);
        if (change.startsWith(QStringLiteral("ff-array"))) {
            std::vector<MetaValue> ff(change == QStringLiteral("ff-array-4") ? 4 : 5, MetaValue::fromU32(16));
            if (change == QStringLiteral("ff-array-99-first")) {
                ff[0] = MetaValue::fromU32(99);
            } else if (change == QStringLiteral("ff-array-99-second")) {
                ff[1] = MetaValue::fromU32(99);
            }
            spec.set("llama.feed_forward_length", MetaValue::fromArray(ValueType::U32, ff));
        } else if (change == QStringLiteral("blocks-u64")) {
            spec.set("llama.block_count", MetaValue::fromU64(5));
        } else if (change == QStringLiteral("blocks-600")) {
            spec.set("llama.block_count", MetaValue::fromU32(600));
        } else if (change == QStringLiteral("no-eps") || change == QStringLiteral("no-tokenizer")) {
            const std::string key = change == QStringLiteral("no-eps")
                                        ? "llama.attention.layer_norm_rms_epsilon"
                                        : "tokenizer.ggml.model";
            std::erase_if(spec.metadata, [&](const auto& kv) { return kv.first == key; });
        } else if (change == QStringLiteral("extra-tensor")) {
            spec.tensors.push_back(patternTensor("blk.0.attn_sinks.weight", TensorType::F32, {4}, 1));
        }
        const auto findings = validateFacts(ModelFacts::of(spec, "changed.gguf"));
        if (expected.isEmpty()) {
            QVERIFY2(!hasError(findings), messages(findings).c_str());
        } else {
            QVERIFY2(QString::fromStdString(messages(findings)).contains(expected),
                     messages(findings).c_str());
        }
    }

    // Every tensor's shape follows from the hyperparameters as llama.cpp's create_tensor
    // computes it: latent attention (MLA), shared experts, biases; a shape off by one head is
    // an error naming the numbers it follows from.
    void shapesFromHyperparameters_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("tensor"); // or "=KEY" (set it to the shape's number), "-KEY" (remove it)
        QTest::addColumn<QList<quint64>>("shape");
        QTest::addColumn<QString>("expected");
        QTest::newRow("MLA key heads")
            << QStringLiteral("zoo/tiny-deepseek2-f32.gguf") << QStringLiteral("blk.1.attn_k_b.weight")
            << QList<quint64>{16, 32, 2}
            << QStringLiteral("error: blk.1.attn_k_b.weight: shape 16 × 32 × 2, expected 16 × 32 × 4 from "
                              "embedding_length 64, head_count 4, q_lora_rank 32, kv_lora_rank 32, "
                              "key/value head size 24/16, rope 8");
        QTest::newRow("MLA compressed keys and values")
            << QStringLiteral("zoo/tiny-deepseek2-f32.gguf") << QStringLiteral("blk.2.attn_kv_a_mqa.weight")
            << QList<quint64>{64, 32}
            << QStringLiteral("error: blk.2.attn_kv_a_mqa.weight: shape 64 × 32, expected 64 × 40");
        QTest::newRow("MLA head size within the rope")
            << QStringLiteral("zoo/tiny-deepseek2-f32.gguf")
            << QStringLiteral("=deepseek2.rope.dimension_count") << QList<quint64>{24}
            << QStringLiteral(
                   "error: the query-key head size 24 is not above deepseek2.rope.dimension_count 24");
        QTest::newRow("MLA without its query rank")
            << QStringLiteral("zoo/tiny-deepseek2-f32.gguf")
            << QStringLiteral("-deepseek2.attention.q_lora_rank") << QList<quint64>{}
            << QStringLiteral(
                   "error: the key deepseek2.attention.q_lora_rank is missing (llama.cpp requires it unless");
        QTest::newRow("deepseek2 shared experts")
            << QStringLiteral("zoo/tiny-deepseek2-f32.gguf") << QStringLiteral("blk.1.ffn_up_shexp.weight")
            << QList<quint64>{64, 64}
            << QStringLiteral("error: blk.1.ffn_up_shexp.weight: shape 64 × 64, expected 64 × 32 from "
                              "embedding_length 64, "
                              "expert_count 4, expert_feed_forward_length 32, expert_shared_count 1");
        QTest::newRow("qwen2moe shared experts")
            << QStringLiteral("zoo/tiny-qwen2moe-f32.gguf") << QStringLiteral("blk.0.ffn_gate_shexp.weight")
            << QList<quint64>{64, 64}
            << QStringLiteral("error: blk.0.ffn_gate_shexp.weight: shape 64 × 64, expected 64 × 128 from "
                              "embedding_length 64, "
                              "expert_shared_feed_forward_length 128");
        QTest::newRow("key bias of the KV heads")
            << QStringLiteral("zoo/tiny-qwen2moe-f32.gguf") << QStringLiteral("blk.1.attn_k.bias")
            << QList<quint64>{64}
            << QStringLiteral(
                   "error: blk.1.attn_k.bias: shape 64, expected 32 from embedding_length 64, head_count 4, "
                   "head_count_kv 2, head size 16");
        QTest::newRow("fused bias") << QStringLiteral("zoo/tiny-gpt2-f32.gguf")
                                    << QStringLiteral("blk.0.attn_qkv.bias") << QList<quint64>{48}
                                    << QStringLiteral("error: blk.0.attn_qkv.bias: shape 48, expected 72");
        QTest::newRow("router") << QStringLiteral("zoo/tiny-deepseek2-f32.gguf")
                                << QStringLiteral("blk.1.exp_probs_b.bias") << QList<quint64>{8}
                                << QStringLiteral("error: blk.1.exp_probs_b.bias: shape 8, expected 4");
    }
    void shapesFromHyperparameters() {
        QFETCH(QString, model);
        QFETCH(QString, tensor);
        QFETCH(QList<quint64>, shape);
        QFETCH(QString, expected);
        const QString file = sharedModel(model);
        ORGAN_REQUIRE_SHARED(file);
        ModelFacts facts = ModelFacts::of(*GgufModel::open(file.toStdString()));
        QVERIFY2(!hasError(validateFacts(facts)), messages(validateFacts(facts)).c_str());
        const auto entry =
            std::find_if(facts.metadata.begin(), facts.metadata.end(),
                         [&](const MetaEntry& e) { return e.key == tensor.mid(1).toStdString(); });
        if (tensor.startsWith(u'=')) {
            entry->value = MetaValue::fromU32(std::uint32_t(shape.front()));
        } else if (tensor.startsWith(u'-')) {
            facts.metadata.erase(entry);
        } else {
            const auto t = std::find_if(facts.tensors.begin(), facts.tensors.end(),
                                        [&](const TensorInfo& i) { return i.name == tensor.toStdString(); });
            QVERIFY(t != facts.tensors.end());
            t->nDims = std::uint32_t(shape.size());
            t->ne = {1, 1, 1, 1};
            std::copy(shape.begin(), shape.end(), t->ne.begin());
        }
        const std::string found = messages(validateFacts(facts));
        QVERIFY2(QString::fromStdString(found).contains(expected), found.c_str());
    }

    // A LoRA adapter is checked as llama.cpp's adapter loader checks it: its type, alpha,
    // tensor suffixes, pairs and ranks; it is never a model of its own.
    void adapterRules_data() {
        QTest::addColumn<QString>("change");
        QTest::addColumn<QString>("expected");
        QTest::newRow("as written") << QString() << QString();
        QTest::newRow("another adapter type")
            << QStringLiteral("type")
            << QStringLiteral("error: adapter.type is 'ia3'; llama.cpp loads only 'lora' adapters");
        QTest::newRow("alpha as u32")
            << QStringLiteral("alpha")
            << QStringLiteral("error: the key adapter.lora.alpha is u32; llama.cpp reads it as f32");
        QTest::newRow("half a pair")
            << QStringLiteral("pair")
            << QStringLiteral("error: LoRA tensor pair for 'blk.0.attn_q.weight' is missing one component");
        QTest::newRow("a tensor of another kind")
            << QStringLiteral("suffix")
            << QStringLiteral("error: LoRA tensor 'blk.0.attn_q.weight.lora_c' has unexpected suffix");
        QTest::newRow("ranks that differ")
            << QStringLiteral("rank")
            << QStringLiteral(
                   "error: blk.0.attn_q.weight: lora_a is 64 × 4, lora_b 8 × 64: their ranks differ");
    }
    void adapterRules() {
        QFETCH(QString, change);
        QFETCH(QString, expected);
        const QString file = sharedModel(QStringLiteral("zoo/stories260K-lora-r8-f32.gguf"));
        ORGAN_REQUIRE_SHARED(file);
        ModelFacts facts = ModelFacts::of(*GgufModel::open(file.toStdString()));
        auto tensor = [&](const std::string& name) {
            return std::find_if(facts.tensors.begin(), facts.tensors.end(),
                                [&](const TensorInfo& t) { return t.name == name; });
        };
        auto set = [&](const std::string& key, MetaValue value) {
            std::find_if(facts.metadata.begin(), facts.metadata.end(), [&](const MetaEntry& e) {
                return e.key == key;
            })->value = std::move(value);
        };
        if (change == QStringLiteral("type")) {
            set("adapter.type", MetaValue::fromString("ia3"));
        } else if (change == QStringLiteral("alpha")) {
            set("adapter.lora.alpha", MetaValue::fromU32(16));
        } else if (change == QStringLiteral("pair")) {
            facts.tensors.erase(tensor("blk.0.attn_q.weight.lora_b"));
        } else if (change == QStringLiteral("suffix")) {
            tensor("blk.0.attn_q.weight.lora_b")->name = "blk.0.attn_q.weight.lora_c";
        } else if (change == QStringLiteral("rank")) {
            tensor("blk.0.attn_q.weight.lora_a")->ne[1] = 4;
        }
        const auto findings = validateFacts(facts);
        const std::string found = messages(findings);
        QVERIFY2(found.find("warning: a LoRA adapter: llama.cpp applies it to a llama base model (--lora)") !=
                     std::string::npos,
                 found.c_str());
        if (expected.isEmpty()) {
            QVERIFY2(!hasError(findings), found.c_str());
        } else {
            QVERIFY2(QString::fromStdString(found).contains(expected), found.c_str());
        }
    }

    // ggml reads tensor data in order without gaps; a file laid out otherwise is refused.
    void dataLayout() {
        ModelFacts facts = ModelFacts::of(perLayerLlama(1), "gap.gguf");
        QVERIFY(!hasError(validateFacts(facts)));
        facts.tensors[3].relativeOffset += 64;
        const std::string found = messages(validateFacts(facts));
        QVERIFY2(found.find("error: tensor " + facts.tensors[3].name + " has data offset") !=
                     std::string::npos,
                 found.c_str());
        QVERIFY(found.find("refuse data that is not laid out in tensor order") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestLayerSurgery)
#include "tst_layer_surgery.moc"
