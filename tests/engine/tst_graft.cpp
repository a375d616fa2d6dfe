// Grafts: the healing graft of the damaged stories model, conversion into a Q8_0 and into a
// Q4_K_M recipient, refusals with clear reports, stacking, plans as JSON, cancel, failed writes.
#include "anatomy/model_validation.h"
#include "fixtures.h"
#include "gguf/specimen.h"
#include "graft/assembly.h"
#include "quant/quantize.h"
#include "quant/quantize_model.h"
#include "shared_models.h"
#include "support/errors.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <csignal>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sys/resource.h>

using namespace organ;
using namespace organ::testing;

namespace {

bool sameBytes(std::span<const std::byte> a, std::span<const std::byte> b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

bool hasFinding(const CompatibilityReport& report, Finding::Severity severity, const QString& text) {
    for (const auto& f : report.findings) {
        if (f.severity == severity && QString::fromStdString(f.message).contains(text)) {
            return true;
        }
    }
    return false;
}

QString allFindings(const CompatibilityReport& report) {
    QString text;
    for (const auto& f : report.findings) {
        text += QString::fromStdString(f.message) + u'\n';
    }
    return text;
}

} // namespace

class TestGraft : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }
    QString damaged() const { return sharedModel(QStringLiteral("stories260K-damaged-f32.gguf")); }
    QString healthy() const { return sharedModel(QStringLiteral("stories260K-f32.gguf")); }
    // Specimens the test writes: the graft engine's own cases need no shared file. Five layers
    // of nine tensors and three outside layers, like the stories models; `m_twin` has other
    // weights, `m_short` two layers, `m_smallVocab` 256 tokens.
    QString m_specimen;
    QString m_twin;
    QString m_short;
    QString m_smallVocab;

    QString writeSpecimenFile(const QString& name, std::uint64_t seed, SpecimenShape shape) {
        shape.blocks = shape.blocks == SpecimenShape{}.blocks ? 5 : shape.blocks;
        const QString file = path(name);
        const JobResult written = writeSpecimen(file.toStdString(), seed, shape);
        if (!written.isOk()) {
            qFatal("%s", written.message.c_str());
        }
        return file;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_specimen = writeSpecimenFile(QStringLiteral("specimen.gguf"), 1, {});
        m_twin = writeSpecimenFile(QStringLiteral("twin.gguf"), 2, {});
        SpecimenShape twoLayers;
        twoLayers.blocks = 2;
        m_short = writeSpecimenFile(QStringLiteral("short.gguf"), 3, twoLayers);
        SpecimenShape vocab;
        vocab.vocabulary = 256;
        m_smallVocab = writeSpecimenFile(QStringLiteral("small-vocab.gguf"), 4, vocab);
    }

    // The real case: the organs of layers 1-3 from the healthy model heal the damaged one.
    void healingGraft() {
        ORGAN_REQUIRE_SHARED(damaged());
        ORGAN_REQUIRE_SHARED(healthy());
        const GraftPlan plan = replacePlan(damaged(), healthy(), organsOfLayers(1, 3));
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY2(!report.hasErrors(), qPrintable(allFindings(report)));
        QCOMPARE(report.layout.tensorsFromDonors, std::uint64_t(9));
        const QString out = path(QStringLiteral("healed.gguf"));
        const JobResult result = assembleChimera(plan, models, report, out.toStdString());
        QVERIFY2(result.isOk(), result.message.c_str());
        const auto chimera = GgufModel::open(out.toStdString());
        const auto h = GgufModel::open(healthy().toStdString());
        const auto d = GgufModel::open(damaged().toStdString());
        QCOMPARE(chimera->tensors().size(), std::size_t(48));
        int fromHealthy = 0;
        for (const auto& t : chimera->tensors()) {
            const bool grafted =
                classifyTensor(t.name).system == System::Organ && t.name >= "blk.1" && t.name < "blk.4";
            const GgufModel& expected = grafted ? *h : *d;
            QVERIFY2(sameBytes(chimera->tensorData(t), expected.tensorData(*expected.findTensor(t.name))),
                     t.name.c_str());
            fromHealthy += grafted;
        }
        QCOMPARE(fromHealthy, 9);
        // Every healthy tensor is now in the chimera, byte for byte.
        for (const auto& t : h->tensors()) {
            QVERIFY2(sameBytes(chimera->tensorData(*chimera->findTensor(t.name)), h->tensorData(t)),
                     t.name.c_str());
        }
        QVERIFY(validateModel(*chimera).empty());
        // Metadata: the damaged model's, plus provenance under organ.graft.
        for (const auto& entry : d->metadata()) {
            QVERIFY2(chimera->find(entry.key) != nullptr && *chimera->find(entry.key) == entry.value,
                     entry.key.c_str());
        }
        QCOMPARE(*chimera->find("organ.graft.version")->asUInt(), std::uint64_t(1));
        const auto parents = chimera->find("organ.graft.parents")->elements(4);
        QCOMPARE(parents.size(), std::size_t(2));
        QCOMPARE(std::string(*parents[0].asString()), std::string("base: stories260K-damaged"));
        const auto hashes = chimera->find("organ.graft.parents_header_sha256")->elements(4);
        QCOMPARE(std::string(*hashes[1].asString()).size(), std::size_t(64));
        QVERIFY(
            std::string(*chimera->find("organ.graft.operations")->asString()).find("\"system\":\"organ\"") !=
            std::string::npos);
    }

    // An F32 donor into a Q8_0 recipient: the grafted tensors are converted to the
    // recipient's types, exactly as llama-quantize would have written them.
    void convertsIntoQuantizedRecipient() {
        const QString q8 = sharedModel(QStringLiteral("stories260K-q8_0.gguf"));
        ORGAN_REQUIRE_SHARED(q8);
        ORGAN_REQUIRE_SHARED(healthy());
        const GraftPlan plan = replacePlan(q8, healthy(), organsOfLayers(1, 3));
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY2(!report.hasErrors(), qPrintable(allFindings(report)));
        QVERIFY(hasFinding(report, Finding::Severity::Info,
                           QStringLiteral("6 tensors converted from F32 to Q8_0")));
        QVERIFY(hasFinding(report, Finding::Severity::Info,
                           QStringLiteral("3 tensors converted from F32 to F16")));
        const QString out = path(QStringLiteral("q8-chimera.gguf"));
        QVERIFY(assembleChimera(plan, models, report, out.toStdString()).isOk());
        const auto chimera = GgufModel::open(out.toStdString());
        const auto reference = GgufModel::open(q8.toStdString());
        for (const auto& t : chimera->tensors()) {
            const TensorInfo& r = *reference->findTensor(t.name);
            QCOMPARE(t.type, r.type);
            QVERIFY2(sameBytes(chimera->tensorData(t), reference->tensorData(r)), t.name.c_str());
        }
        QVERIFY(validateModel(*chimera).empty());
    }

    // The healing graft into a K-quant recipient: a Q4_K_M of the sea model takes every layer
    // tensor of the F16 family base, converted to the recipient's Q4_K and Q6_K as organ quantize
    // converts them; what comes back is the base's own Q4_K_M (family-base-q4_k_m.gguf, made by
    // llama-quantize) byte for byte in every layer, and the recipient's bytes outside them.
    void healsAKQuantRecipient() {
        const QString baseF16 = sharedModel(QStringLiteral("family/family-base-f16.gguf"));
        const QString baseQ4 = sharedModel(QStringLiteral("family/family-base-q4_k_m.gguf"));
        const QString seaF16 = sharedModel(QStringLiteral("family/family-sea-f16.gguf"));
        for (const QString& file : {baseF16, baseQ4, seaF16}) {
            ORGAN_REQUIRE_SHARED(file);
        }
        const QString seaQ4 = path(QStringLiteral("sea-q4_k_m.gguf"));
        QuantizeRecipe recipe;
        recipe.fileType = QuantFileType::Q4_K_M;
        QVERIFY(quantizeModel(*GgufModel::open(seaF16.toStdString()), recipe, nullptr, seaQ4.toStdString())
                    .written.isOk());
        TensorSelector everyLayer;
        everyLayer.firstLayer = 0;
        everyLayer.lastLayer = 5;
        const GraftPlan plan = replacePlan(seaQ4, baseF16, everyLayer);
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY2(!report.hasErrors(), qPrintable(allFindings(report)));
        QVERIFY2(hasFinding(report, Finding::Severity::Info,
                            QStringLiteral("38 tensors converted from F16 to Q4_K")),
                 qPrintable(allFindings(report)));
        QVERIFY(hasFinding(report, Finding::Severity::Info,
                           QStringLiteral("4 tensors converted from F16 to Q6_K")));
        const QString out = path(QStringLiteral("healed-q4_k_m.gguf"));
        const JobResult result = assembleChimera(plan, models, report, out.toStdString());
        QVERIFY2(result.isOk(), result.message.c_str());
        const auto chimera = GgufModel::open(out.toStdString());
        const auto base = GgufModel::open(baseQ4.toStdString());
        const auto sea = GgufModel::open(seaQ4.toStdString());
        int fromBase = 0;
        for (const auto& t : chimera->tensors()) {
            const bool grafted = t.name.starts_with("blk.");
            const GgufModel& expected = grafted ? *base : *sea;
            const TensorInfo& e = *expected.findTensor(t.name);
            QCOMPARE(t.type, e.type);
            QVERIFY2(sameBytes(chimera->tensorData(t), expected.tensorData(e)), t.name.c_str());
            fromBase += grafted;
        }
        QCOMPARE(fromBase, 54);
        QVERIFY(validateModel(*chimera).empty());
    }

    void refusesOtherShapes() {
        const QString other = sharedModel(QStringLiteral("llama-2-tiny-random-f16.gguf"));
        ORGAN_REQUIRE_SHARED(other);
        ORGAN_REQUIRE_SHARED(healthy());
        const GraftPlan plan = replacePlan(healthy(), other, organsOfLayers(0, 0));
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY(report.hasErrors());
        QVERIFY2(
            hasFinding(report, Finding::Severity::Error,
                       QStringLiteral("blk.0.ffn_gate.weight: shape 8 × 32 (healthy) ≠ 64 × 172 (base)")),
            qPrintable(allFindings(report)));
        QVERIFY(hasFinding(report, Finding::Severity::Warning,
                           QStringLiteral("embedding widths differ: 64 (base) and 8")));
        const QString out = path(QStringLiteral("refused.gguf"));
        const JobResult result = assembleChimera(plan, models, report, out.toStdString());
        QVERIFY(!result.isOk());
        QVERIFY(!QFileInfo::exists(out));
    }

    // The passthrough merge: layers 0-4 then 2-4 again give 8 blocks that validate.
    void stacksLayers() {
        GraftPlan plan;
        plan.base = m_specimen.toStdString();
        GraftOperation o;
        o.kind = GraftOperation::Kind::StackLayers;
        o.stack = {{"base", 0, 4}, {"base", 2, 4}};
        plan.operations.push_back(o);
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY2(!report.hasErrors(), qPrintable(allFindings(report)));
        QCOMPARE(report.layout.blocks, 8u);
        const QString out = path(QStringLiteral("stacked.gguf"));
        QVERIFY(assembleChimera(plan, models, report, out.toStdString()).isOk());
        const auto chimera = GgufModel::open(out.toStdString());
        const auto h = GgufModel::open(m_specimen.toStdString());
        QCOMPARE(*chimera->archValue("block_count"), std::uint64_t(8));
        QCOMPARE(chimera->tensors().size(), std::size_t(3 + 8 * 9));
        QVERIFY(sameBytes(chimera->tensorData(*chimera->findTensor("blk.5.attn_q.weight")),
                          h->tensorData(*h->findTensor("blk.2.attn_q.weight"))));
        QVERIFY(sameBytes(chimera->tensorData(*chimera->findTensor("blk.7.ffn_down.weight")),
                          h->tensorData(*h->findTensor("blk.4.ffn_down.weight"))));
        const auto findings = validateModel(*chimera);
        QVERIFY(findings.empty());
    }

    void layerOperations() {
        GraftPlan plan;
        plan.base = m_specimen.toStdString();
        plan.donors.emplace_back("twin", m_twin.toStdString());
        GraftOperation dup;
        dup.kind = GraftOperation::Kind::DuplicateLayer;
        dup.toLayer = 1;
        GraftOperation remove;
        remove.kind = GraftOperation::Kind::RemoveLayer;
        remove.toLayer = 4;
        GraftOperation map;
        map.kind = GraftOperation::Kind::MapLayer;
        map.donor = "twin";
        map.fromLayer = 2;
        map.toLayer = 0;
        map.select.system = System::Organ;
        GraftOperation rename;
        rename.kind = GraftOperation::Kind::SetMetadata;
        rename.key = "general.name";
        rename.value = MetaValue::fromString("surgery");
        plan.operations = {dup, remove, map, rename};
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY2(!report.hasErrors(), qPrintable(allFindings(report)));
        QCOMPARE(report.layout.blocks, 5u);
        const QString out = path(QStringLiteral("surgery.gguf"));
        QVERIFY(assembleChimera(plan, models, report, out.toStdString()).isOk());
        const auto c = GgufModel::open(out.toStdString());
        const auto h = GgufModel::open(m_specimen.toStdString());
        const auto d = GgufModel::open(m_twin.toStdString());
        QCOMPARE(c->name(), std::string("surgery"));
        // Layers after duplicating 1: 0 1 1 2 3 4; removing the fifth (the old 3) leaves
        // 0 1 1 2 4; then layer 0's organs come from the twin's layer 2.
        QVERIFY(sameBytes(c->tensorData(*c->findTensor("blk.0.ffn_up.weight")),
                          d->tensorData(*d->findTensor("blk.2.ffn_up.weight"))));
        QVERIFY(sameBytes(c->tensorData(*c->findTensor("blk.0.attn_q.weight")),
                          h->tensorData(*h->findTensor("blk.0.attn_q.weight"))));
        QVERIFY(sameBytes(c->tensorData(*c->findTensor("blk.2.attn_k.weight")),
                          h->tensorData(*h->findTensor("blk.1.attn_k.weight"))));
        QVERIFY(sameBytes(c->tensorData(*c->findTensor("blk.3.attn_v.weight")),
                          h->tensorData(*h->findTensor("blk.2.attn_v.weight"))));
        QVERIFY(sameBytes(c->tensorData(*c->findTensor("blk.4.ffn_norm.weight")),
                          h->tensorData(*h->findTensor("blk.4.ffn_norm.weight"))));
        QVERIFY(validateModel(*c).empty());
    }

    // Every compatibility error, each with the message a user reads.
    void compatibilityErrors_data() {
        QTest::addColumn<QString>("planJson");
        QTest::addColumn<QString>("expected");
        QTest::addColumn<bool>("shared"); // reads ../shared/models
        const QString h = m_specimen;
        const QString tiny = sharedModel(QStringLiteral("zoo/tiny-qwen2-f32.gguf"));
        auto plan = [&](const QString& base, const QString& donor, const QString& ops) {
            return QStringLiteral(
                       R"({"format": "organ-graft-plan", "version": 1, "base": "%1", "donors": {"d": "%2"}, "operations": [%3]})")
                .arg(base, donor, ops);
        };
        QTest::newRow("nothing selected")
            << plan(h, h, QStringLiteral(R"({"op": "replace", "donor": "d", "roles": ["no_such_role"]})"))
            << QStringLiteral("the selection matches no tensor") << false;
        QTest::newRow("donor lacks tensor")
            << plan(
                   h, m_short,
                   QStringLiteral(
                       R"({"op": "replace", "donor": "d", "names": ["output.weight", "blk.4.ffn_up.weight"]})"))
            << QStringLiteral("donor 'd' has no tensor blk.4.ffn_up.weight") << false;
        QTest::newRow("map to missing layer")
            << plan(h, h, QStringLiteral(R"({"op": "map_layer", "donor": "d", "from": 0, "to": 9})"))
            << QStringLiteral("map_layer: the chimera has no layer 9") << false;
        QTest::newRow("map from missing layer")
            << plan(h, h, QStringLiteral(R"({"op": "map_layer", "donor": "d", "from": 7, "to": 0})"))
            << QStringLiteral("donor 'd' has no tensor blk.7.") << false;
        QTest::newRow("duplicate missing layer")
            << plan(h, h, QStringLiteral(R"({"op": "duplicate_layer", "layer": 5})"))
            << QStringLiteral("duplicate_layer: there is no layer 5") << false;
        QTest::newRow("remove missing layer")
            << plan(h, h, QStringLiteral(R"({"op": "remove_layer", "layer": 12})"))
            << QStringLiteral("remove_layer: there is no layer 12") << false;
        QTest::newRow("stack missing layer")
            << plan(h, h,
                    QStringLiteral(R"({"op": "stack_layers", "stack": [{"model": "d", "layers": "3-6"}]})"))
            << QStringLiteral("stack_layers: model 'd' has no layer 5") << false;
        QTest::newRow("incomplete layers")
            << plan(
                   h, tiny,
                   QStringLiteral(
                       R"({"op": "stack_layers", "stack": [{"model": "base", "layers": "0-1"}, {"model": "d", "layers": "1"}]})"))
            << QStringLiteral("layer 2 is incomplete") << true;
        QTest::newRow("unconvertible type")
            << plan(sharedModel(QStringLiteral("quant/wide-iq2_xxs.gguf")),
                    sharedModel(QStringLiteral("quant/wide-f32.gguf")),
                    QStringLiteral(R"({"op": "replace", "donor": "d", "names": ["blk.0.ffn_gate.weight"]})"))
            << QStringLiteral(
                   "blk.0.ffn_gate.weight: d has it as F32, the base as IQ2_XXS; the engine converts "
                   "only to F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, "
                   "IQ4_NL, IQ4_XS and BF16")
            << true;
        QTest::newRow("embed vocabulary")
            << plan(h, m_smallVocab, QStringLiteral(R"({"op": "replace", "donor": "d", "system": "embed"})"))
            << QStringLiteral("the vocabularies differ (512 tokens in the base, 256 in 'd')") << false;
    }

    void compatibilityErrors() {
        QFETCH(QString, planJson);
        QFETCH(QString, expected);
        QFETCH(bool, shared);
        if (shared) {
            ORGAN_REQUIRE_SHARED(healthy());
        }
        const GraftPlan plan = graftPlanFromJson(nlohmann::json::parse(planJson.toStdString()), "test.json");
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY(report.hasErrors());
        QVERIFY2(hasFinding(report, Finding::Severity::Error, expected), qPrintable(allFindings(report)));
        const JobResult result =
            assembleChimera(plan, models, report, path(QStringLiteral("never.gguf")).toStdString());
        QVERIFY(!result.isOk());
        QVERIFY(!QFileInfo::exists(path(QStringLiteral("never.gguf"))));
    }

    void outputMayNotBeAnInput() {
        const QString copy = path(QStringLiteral("input.gguf"));
        QVERIFY(QFile::copy(m_specimen, copy));
        const QString link = path(QStringLiteral("link-to-input.gguf"));
        QVERIFY(QFile::link(copy, link));
        for (const QString& output : {copy, link}) {
            GraftPlan plan = replacePlan(copy, m_twin, organsOfLayers(1, 3));
            plan.output = output.toStdString();
            const GraftModels models = GraftModels::open(plan);
            const CompatibilityReport report = checkGraft(plan, models);
            QVERIFY(hasFinding(report, Finding::Severity::Error, QStringLiteral("is an input")));
            // Even past the report, the writer refuses to overwrite an open input.
            CompatibilityReport forced = report;
            forced.findings.clear();
            const JobResult result = assembleChimera(plan, models, forced, output.toStdString());
            QVERIFY(!result.isOk());
            QVERIFY2(QString::fromStdString(result.message)
                         .contains(QStringLiteral("refusing to write over a file that is also an input")),
                     result.message.c_str());
        }
        QCOMPARE(readAll(copy), readAll(m_specimen));
    }

    // Cancel before anything is written, while writing, and while verifying: no file.
    void cancelLeavesNoFile_data() {
        QTest::addColumn<QString>("stage");
        QTest::newRow("before start") << QString();
        QTest::newRow("writing") << QStringLiteral("writing");
        QTest::newRow("verifying") << QStringLiteral("verifying");
    }

    void cancelLeavesNoFile() {
        QFETCH(QString, stage);
        const GraftPlan plan = replacePlan(m_specimen, m_twin, organsOfLayers(0, 4));
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        const QString out = path(QStringLiteral("cancelled.gguf"));
        StopToken stop;
        if (stage.isEmpty()) {
            stop.requestStop();
        }
        QStringList stages;
        const JobResult result = assembleChimera(
            plan, models, report, out.toStdString(), {},
            [&](const Progress& p) {
                stages << QString::fromUtf8(p.stage.data(), qsizetype(p.stage.size()));
                if (!stage.isEmpty() && stages.last() == stage) {
                    stop.requestStop();
                }
            },
            &stop);
        QCOMPARE(result.status, JobResult::Status::Cancelled);
        QVERIFY(stage.isEmpty() || stages.contains(stage));
        QVERIFY(!stages.contains(QStringLiteral("done")));
        QVERIFY(!QFileInfo::exists(out));
        QCOMPARE(
            QFileInfo(out).dir().entryList({QFileInfo(out).fileName() + QStringLiteral(".partial*")}).size(),
            0);
    }

    // A write that fails part-way (the file size limit): a clear error and no file.
    void failedWriteLeavesNoFile() {
        const GraftPlan plan = replacePlan(m_specimen, m_twin, organsOfLayers(1, 3));
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        const QString out = path(QStringLiteral("too-big.gguf"));
        rlimit saved{};
        QCOMPARE(getrlimit(RLIMIT_FSIZE, &saved), 0);
        const auto previous = std::signal(SIGXFSZ, SIG_IGN);
        rlimit small = saved;
        small.rlim_cur = 300 * 1024;
        QCOMPARE(setrlimit(RLIMIT_FSIZE, &small), 0);
        const JobResult result = assembleChimera(plan, models, report, out.toStdString());
        setrlimit(RLIMIT_FSIZE, &saved);
        std::signal(SIGXFSZ, previous);
        QVERIFY(!result.isOk());
        QVERIFY2(QString::fromStdString(result.message)
                     .contains(QStringLiteral("too-big.gguf: write failed: File too large")),
                 result.message.c_str());
        QVERIFY(!QFileInfo::exists(out));
        QCOMPARE(
            QFileInfo(out).dir().entryList({QFileInfo(out).fileName() + QStringLiteral(".partial*")}).size(),
            0);
    }

    void planJsonRoundTrip() {
        const QString file = path(QStringLiteral("plan.json"));
        GraftPlan plan =
            replacePlan(QStringLiteral("a.gguf"), QStringLiteral("/models/b.gguf"), organsOfLayers(5, 20));
        plan.operations[0].select.roles = {"ffn_up", "ffn_down"};
        GraftOperation stack;
        stack.kind = GraftOperation::Kind::StackLayers;
        stack.stack = {{"base", 0, 4}, {"healthy", 2, 4}};
        GraftOperation name;
        name.kind = GraftOperation::Kind::SetMetadata;
        name.key = "general.name";
        name.value = MetaValue::fromString("chimera");
        GraftOperation count;
        count.kind = GraftOperation::Kind::SetMetadata;
        count.key = "llama.context_length";
        count.value = MetaValue::fromU32(4096);
        GraftOperation drop;
        drop.kind = GraftOperation::Kind::RemoveMetadata;
        drop.key = "general.url";
        plan.operations.insert(plan.operations.end(), {stack, name, count, drop});
        plan.output = "out/chimera.gguf";
        saveGraftPlan(plan, file.toStdString());
        const GraftPlan back = loadGraftPlan(file.toStdString());
        // In memory, paths are what the program opens (relative to the current folder); the
        // file stores them so that the plan opens the same files from anywhere.
        QCOMPARE(back.base, QDir::current().absoluteFilePath(QStringLiteral("a.gguf")).toStdString());
        QCOMPARE(back.donors.front().second, std::string("/models/b.gguf"));
        QCOMPARE(back.output,
                 QDir::current().absoluteFilePath(QStringLiteral("out/chimera.gguf")).toStdString());
        QVERIFY(graftPlanToJson(back).at("operations") == graftPlanToJson(plan).at("operations"));
        QVERIFY(back.operations[3].value == MetaValue::fromU32(4096));
    }

    // Models in the plan's folder (or below) are stored relative to it, others absolute;
    // either way the plan opens from any current folder (a plan saved with paths relative to
    // the current folder could not be opened by `plan check` once saved in a sub-folder).
    void savedPlansOpenFromAnywhere() {
        const QString home = QDir::currentPath();
        QVERIFY(QDir(m_dir.path()).mkpath(QStringLiteral("bundle/models")));
        QVERIFY(QDir(m_dir.path()).mkpath(QStringLiteral("elsewhere")));
        QDir::setCurrent(m_dir.path());
        GraftPlan plan = replacePlan(QStringLiteral("bundle/models/a.gguf"),
                                     QStringLiteral("elsewhere/b.gguf"), organsOfLayers(1, 3));
        plan.output = "bundle/out.gguf";
        saveGraftPlan(plan, "bundle/p.json");
        const auto stored = nlohmann::json::parse(readAll(QStringLiteral("bundle/p.json")).toStdString());
        QCOMPARE(stored.at("base").get<std::string>(), std::string("models/a.gguf"));
        QCOMPARE(stored.at("donors").at("healthy").get<std::string>(),
                 m_dir.filePath(QStringLiteral("elsewhere/b.gguf")).toStdString());
        QCOMPARE(stored.at("output").get<std::string>(), std::string("out.gguf"));
        QDir::setCurrent(m_dir.filePath(QStringLiteral("elsewhere")));
        const GraftPlan back = loadGraftPlan(m_dir.filePath(QStringLiteral("bundle/p.json")).toStdString());
        QDir::setCurrent(home);
        QCOMPARE(back.base, m_dir.filePath(QStringLiteral("bundle/models/a.gguf")).toStdString());
        QCOMPARE(back.donors.front().second,
                 m_dir.filePath(QStringLiteral("elsewhere/b.gguf")).toStdString());
        QCOMPARE(back.output, m_dir.filePath(QStringLiteral("bundle/out.gguf")).toStdString());
    }

    void badPlans_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("expected");
        const QString head = QStringLiteral(
            R"({"format": "organ-graft-plan", "version": 1, "base": "a.gguf", "donors": {"b": "b.gguf"}, )");
        QTest::newRow("not a plan") << QStringLiteral(
                                           R"({"format": "x", "version": 1, "base": "a", "operations": []})")
                                    << QStringLiteral("\"format\" must be \"organ-graft-plan\"");
        QTest::newRow("version")
            << QStringLiteral(
                   R"({"format": "organ-graft-plan", "version": 2, "base": "a", "operations": []})")
            << QStringLiteral("unsupported plan version 2");
        QTest::newRow("no base") << QStringLiteral(
                                        R"({"format": "organ-graft-plan", "version": 1, "operations": []})")
                                 << QStringLiteral("plan: lacks \"base\"");
        QTest::newRow("unknown field") << head + QStringLiteral(R"("operations": [], "extra": 1})")
                                       << QStringLiteral("unknown field \"extra\"");
        QTest::newRow("unknown op") << head + QStringLiteral(R"("operations": [{"op": "transplant"}]})")
                                    << QStringLiteral("operation 1: unknown op \"transplant\"");
        QTest::newRow("unknown donor")
            << head + QStringLiteral(R"("operations": [{"op": "replace", "donor": "c", "system": "organ"}]})")
            << QStringLiteral("no donor called \"c\"");
        QTest::newRow("bad layers")
            << head + QStringLiteral(R"("operations": [{"op": "replace", "donor": "b", "layers": "9-3"}]})")
            << QStringLiteral("\"layers\" must be a range");
        QTest::newRow("bad system")
            << head + QStringLiteral(R"("operations": [{"op": "replace", "donor": "b", "system": "liver"}]})")
            << QStringLiteral("\"system\" must be one of");
        QTest::newRow("bad value")
            << head +
                   QStringLiteral(
                       R"("operations": [{"op": "set_metadata", "key": "k", "type": "u8", "value": 300}]})")
            << QStringLiteral("\"value\" does not fit a u8");
        QTest::newRow("provenance key")
            << head + QStringLiteral(
                          R"("operations": [{"op": "remove_metadata", "key": "organ.graft.version"}]})")
            << QStringLiteral("are written by the assembler");
        QTest::newRow("layer not a number")
            << head + QStringLiteral(R"("operations": [{"op": "remove_layer", "layer": -1}]})")
            << QStringLiteral("\"layer\" must be a layer number");
        // An empty output passed plan check and was refused by assemble; an empty name matched
        // nothing without a word.
        QTest::newRow("empty output") << head + QStringLiteral(R"("output": "", "operations": []})")
                                      << QStringLiteral("\"output\" must be a path");
        QTest::newRow("empty name")
            << head +
                   QStringLiteral(
                       R"("operations": [{"op": "replace", "donor": "b", "names": ["", "output.weight"]}]})")
            << QStringLiteral("\"names\" must be an array of strings, none empty");
    }

    void badPlans() {
        QFETCH(QString, json);
        QFETCH(QString, expected);
        try {
            graftPlanFromJson(nlohmann::json::parse(json.toStdString()), "bad.json");
            QFAIL("the plan was accepted");
        } catch (const FormatError& e) {
            QVERIFY2(QString::fromUtf8(e.what()).startsWith(QStringLiteral("bad.json: ")) &&
                         QString::fromUtf8(e.what()).contains(expected),
                     e.what());
        }
    }

    // A plan file is read with its values counted, its nesting bounded and its keys once each:
    // nlohmann would keep the last of two "method"s, and 16 MiB of "[[[…" parsed to 608 MB.
    void planFilesReadWithBounds() {
        const std::string head =
            R"({"format": "organ-graft-plan", "version": 1, "base": "a.gguf", "operations": [)";
        std::string manyValues = "[";
        for (int i = 0; i <= (1 << 20); ++i) {
            manyValues += "0,";
        }
        manyValues += "0]";
        const std::vector<std::pair<std::string, std::string>> cases{
            {head + R"({"op": "duplicate_layer", "layer": 0, "layer": 1}]})",
             R"(plan.json: the key "layer" is given twice in one object)"},
            {head + R"({"op": "duplicate_layer", "layer": 1e400}]})", "plan.json: a number out of range"},
            {head + "]," + R"("x": )" + std::string(100, '[') + std::string(100, ']') + "}",
             "plan.json: nested deeper than 64 levels, more than a graft plan holds"},
            {manyValues, "plan.json: more than 1 048 576 values, more than a graft plan holds"},
        };
        for (const auto& [text, expected] : cases) {
            QVERIFY(writeAll(path(QStringLiteral("plan.json")), QByteArray::fromStdString(text)));
            try {
                loadGraftPlan(path(QStringLiteral("plan.json")).toStdString());
                QFAIL("the plan was read");
            } catch (const FormatError& e) {
                QVERIFY2(std::string(e.what()).find(expected) != std::string::npos, e.what());
            }
        }
    }
};

QTEST_APPLESS_MAIN(TestGraft)
#include "tst_graft.moc"
