// The quantize operation of graft plans: the finished chimera quantized as organ quantize would
// quantize it (types, bytes, metadata), with and without an importance matrix, purified tensors
// included; plans keep it through JSON; a second one is refused.
#include "fixtures.h"
#include "graft/assembly.h"
#include "purify/purification.h"
#include "quant/dequant.h"
#include "quant/quantize.h"
#include "quant/quantize_model.h"
#include "shared_models.h"
#include "support/errors.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <nlohmann/json.hpp>

using namespace organ;
using namespace organ::testing;

namespace {

GraftOperation quantizeOperation(QuantFileType type, const QString& imatrix = {}) {
    GraftOperation o;
    o.kind = GraftOperation::Kind::Quantize;
    o.quantize.fileType = type;
    o.quantize.imatrix = imatrix.toStdString();
    return o;
}

QString findingsOf(const CompatibilityReport& report) {
    QString text;
    for (const auto& f : report.findings) {
        text += QString::fromStdString(f.message) + u'\n';
    }
    return text;
}

// Every tensor of `a` has the type and bytes of the same tensor of `b`, in the same order, but
// `except` (whose type only is compared).
void compareTensors(const GgufModel& a, const GgufModel& b, const std::string& except = {}) {
    QCOMPARE(a.tensors().size(), b.tensors().size());
    for (std::size_t i = 0; i < a.tensors().size(); ++i) {
        const TensorInfo& x = a.tensors()[i];
        const TensorInfo& y = b.tensors()[i];
        QCOMPARE(x.name, y.name);
        QVERIFY2(x.type == y.type, x.name.c_str());
        QVERIFY2(x.name == except || std::ranges::equal(a.tensorData(x), b.tensorData(y)), x.name.c_str());
    }
}

} // namespace

class TestQuantizePlan : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    // A plan that only quantizes: llama-quantize's Q4_K_M of the family base, tensor for tensor.
    void quantizesTheChimera() {
        ORGAN_REQUIRE_SHARED(familyModel("family-base-f16.gguf"));
        ORGAN_REQUIRE_SHARED(familyModel("family-base-q4_k_m.gguf"));
        GraftPlan plan;
        plan.base = familyModel("family-base-f16.gguf").toStdString();
        plan.operations.push_back(quantizeOperation(QuantFileType::Q4_K_M));
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY2(!report.hasErrors(), qPrintable(findingsOf(report)));
        QVERIFY2(findingsOf(report).contains(QStringLiteral("39 tensors converted from F16 to Q4_K")),
                 qPrintable(findingsOf(report)));
        const QString out = path(QStringLiteral("q4km.gguf"));
        const JobResult written = assembleChimera(plan, models, report, out.toStdString());
        QVERIFY2(written.isOk(), written.message.c_str());
        const auto chimera = GgufModel::open(out.toStdString());
        const auto reference = GgufModel::open(familyModel("family-base-q4_k_m.gguf").toStdString());
        compareTensors(*chimera, *reference);
        QCOMPARE(chimera->find("general.file_type")->asUInt().value_or(0), std::uint64_t(15));
        QCOMPARE(chimera->find("general.quantization_version")->asUInt().value_or(0), std::uint64_t(2));
    }

    // A graft, a purification and a quantization with the family's importance matrix in one plan:
    // the chimera is the unquantized chimera put through organ quantize with the same recipe, but
    // for the purified tensor, whose purified values are encoded straight to Q3_K (with its
    // weights) where the unquantized chimera rounded them to F16 first.
    void graftThenQuantizeIsOrganQuantize() {
        for (const char* f : {"family-base-f16.gguf", "family-farm-f16.gguf"}) {
            ORGAN_REQUIRE_SHARED(familyModel(f));
        }
        ORGAN_REQUIRE_SHARED(familyImatrix());
        GraftPlan plan = replacePlan(familyModel("family-base-f16.gguf"), familyModel("family-farm-f16.gguf"),
                                     organsOfLayers(1, 3));
        GraftOperation purification;
        purification.kind = GraftOperation::Kind::Purify;
        purification.select.names = {"blk.4.attn_q.weight"};
        plan.operations.push_back(purification);
        const GraftModels plain = GraftModels::open(plan);
        const QString unquantized = path(QStringLiteral("chimera-f16.gguf"));
        QVERIFY(assembleChimera(plan, plain, checkGraft(plan, plain), unquantized.toStdString()).isOk());

        plan.operations.push_back(quantizeOperation(QuantFileType::Q3_K_M, familyImatrix()));
        const GraftModels models = GraftModels::open(plan);
        QVERIFY(models.importance() != nullptr);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY2(!report.hasErrors(), qPrintable(findingsOf(report)));
        const QString out = path(QStringLiteral("chimera-q3_k_m.gguf"));
        QVERIFY(assembleChimera(plan, models, report, out.toStdString()).isOk());

        QuantizeRecipe recipe;
        recipe.fileType = QuantFileType::Q3_K_M;
        recipe.imatrix = familyImatrix().toStdString();
        const ImatrixData matrix = readImatrix(recipe.imatrix);
        const QString expected = path(QStringLiteral("expected-q3_k_m.gguf"));
        QVERIFY(quantizeModel(*GgufModel::open(unquantized.toStdString()), recipe, &matrix,
                              expected.toStdString())
                    .written.isOk());
        const auto chimera = GgufModel::open(out.toStdString());
        compareTensors(*chimera, *GgufModel::open(expected.toStdString()), "blk.4.attn_q.weight");
        QCOMPARE(std::string(chimera->find("quantize.imatrix.dataset")->asString().value_or("")),
                 std::string("texts/general.txt"));
        QVERIFY(chimera->find("organ.purify.tensors") != nullptr);

        const auto base = GgufModel::open(familyModel("family-base-f16.gguf").toStdString());
        const TensorInfo& q = *base->findTensor("blk.4.attn_q.weight");
        std::vector<float> values(static_cast<std::size_t>(q.elements));
        dequantizeRange(q.type, base->tensorData(q), 0, values.size(), values.data());
        const Purified purified = purify(values, q.ne[0], purification.purify);
        std::vector<std::byte> bytes(static_cast<std::size_t>(storedBytes(TensorType::Q3_K, q.elements)));
        quantizeRows(TensorType::Q3_K, purified.values.data(), q.ne[1], q.ne[0],
                     matrix.find(q.name)->means().data(), bytes.data());
        QVERIFY(std::ranges::equal(chimera->tensorData(*chimera->findTensor(q.name)), bytes));
    }

    void planJsonKeepsIt() {
        const nlohmann::json json = {{"format", "organ-graft-plan"},
                                     {"version", 1},
                                     {"base", "base.gguf"},
                                     {"operations",
                                      {{{"op", "quantize"},
                                        {"type", "q4_k_s"},
                                        {"imatrix", "m.imatrix.gguf"},
                                        {"tensor_types", {"ffn_down=q6_k", "attn_v=Q8_0"}},
                                        {"output_tensor_type", "q8_0"},
                                        {"token_embedding_type", "bf16"},
                                        {"pure", true},
                                        {"leave_output_tensor", true}}}}};
        const GraftPlan plan = graftPlanFromJson(json, "plan.json");
        const QuantizeRecipe& r = plan.operations.front().quantize;
        QCOMPARE(r.fileType, QuantFileType::Q4_K_S);
        QCOMPARE(r.tensorTypes.size(), std::size_t(2));
        QCOMPARE(r.tensorTypes[1].second, TensorType::Q8_0);
        QCOMPARE(r.outputTensorType, std::optional(TensorType::Q8_0));
        QCOMPARE(r.tokenEmbeddingType, std::optional(TensorType::BF16));
        QVERIFY(r.pure && r.leaveOutputTensor);
        const nlohmann::json again = graftPlanToJson(plan);
        QVERIFY(graftPlanToJson(graftPlanFromJson(again, "again.json")) == again);
        QCOMPARE(again["operations"][0]["type"].get<std::string>(), std::string("Q4_K_S"));

        // Saved beside the plan, the matrix is named relative to it; loaded, it is resolved.
        GraftPlan saved = plan;
        saved.base = path(QStringLiteral("base.gguf")).toStdString();
        saved.operations.front().quantize.imatrix = path(QStringLiteral("m.imatrix.gguf")).toStdString();
        const QString planFile = path(QStringLiteral("plan.json"));
        saveGraftPlan(saved, planFile.toStdString());
        QFile file(planFile);
        QVERIFY(file.open(QIODevice::ReadOnly));
        QVERIFY(file.readAll().contains("\"imatrix\": \"m.imatrix.gguf\""));
        QCOMPARE(loadGraftPlan(planFile.toStdString()).operations.front().quantize.imatrix,
                 saved.operations.front().quantize.imatrix);
    }

    void refusals_data() {
        QTest::addColumn<QString>("operation");
        QTest::addColumn<QString>("message");
        QTest::newRow("type") << QStringLiteral(R"({"op": "quantize", "type": "Q4_K_X"})")
                              << QStringLiteral("not a file type organ quantize writes");
        QTest::newRow("no type") << QStringLiteral(R"({"op": "quantize"})")
                                 << QStringLiteral("lacks \"type\"");
        QTest::newRow("tensor type") << QStringLiteral(
                                            R"({"op": "quantize", "type": "Q4_K_M", "tensor_types": ["x"]})")
                                     << QStringLiteral("REGEX=TYPE");
        QTest::newRow("unwritten")
            << QStringLiteral(R"({"op": "quantize", "type": "Q4_K_M", "output_tensor_type": "iq2_xxs"})")
            << QStringLiteral("does not write IQ2_XXS");
        QTest::newRow("pure") << QStringLiteral(R"({"op": "quantize", "type": "Q4_K_M", "pure": 1})")
                              << QStringLiteral("\"pure\" must be true or false");
        QTest::newRow("unknown") << QStringLiteral(R"({"op": "quantize", "type": "Q4_K_M", "imatrx": "m"})")
                                 << QStringLiteral("unknown field \"imatrx\"");
    }

    void refusals() {
        QFETCH(QString, operation);
        QFETCH(QString, message);
        const nlohmann::json json = {
            {"format", "organ-graft-plan"},
            {"version", 1},
            {"base", "base.gguf"},
            {"operations", nlohmann::json::array({nlohmann::json::parse(operation.toStdString())})}};
        try {
            graftPlanFromJson(json, "plan.json");
            QFAIL("accepted");
        } catch (const FormatError& error) {
            QVERIFY2(QString::fromUtf8(error.what()).contains(message), error.what());
        }
    }

    void onlyOneQuantize() {
        ORGAN_REQUIRE_SHARED(familyModel("family-base-f16.gguf"));
        GraftPlan plan;
        plan.base = familyModel("family-base-f16.gguf").toStdString();
        plan.operations = {quantizeOperation(QuantFileType::Q4_K_M), quantizeOperation(QuantFileType::Q6_K)};
        const CompatibilityReport report = checkGraft(plan, GraftModels::open(plan));
        QVERIFY(report.hasErrors());
        QVERIFY2(findingsOf(report).contains(
                     QStringLiteral("a plan quantizes the chimera once (operation 1 does)")),
                 qPrintable(findingsOf(report)));
    }
};

QTEST_APPLESS_MAIN(TestQuantizePlan)
#include "tst_quantize_plan.moc"
