// organ quantize's engine: llama-quantize's choice of a type per tensor (its mixing rules, on a
// 32-layer llama shape worked out by hand from llama-quant.cpp), and whole models written as it
// writes them: the family base to Q4_K_M gives family-base-q4_k_m.gguf byte for byte, and to
// Q4_K_M, Q3_K_M, Q5_K_S, Q6_K and IQ4_XS, with and without its importance matrix, the types and
// bytes llama-quantize gave every tensor (tests/data/quantize); a quantized input is quantized
// again with a note; a cancelled job leaves nothing.
#include "gguf/gguf_file.h"
#include "gguf/gguf_model.h"
#include "quant/dequant.h"
#include "quant/quant_mix.h"
#include "quant/quantize.h"
#include "quant/quantize_model.h"
#include "quantize_fixtures.h"
#include "shared_models.h"
#include "support/errors.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using namespace organ;
using namespace organ::testing;

namespace {

// A llama of 32 layers, 32 heads and 8 key-value heads (GQA 4), rows of 4096: the shape of the
// rules' examples. `tied`: no output.weight.
std::vector<MixTensor> llamaShape(bool tied) {
    std::vector<MixTensor> tensors;
    tensors.push_back({"token_embd.weight", TensorType::F16, {4096, 32000, 1, 1}});
    if (!tied) {
        tensors.push_back({"output.weight", TensorType::F16, {4096, 32000, 1, 1}});
    }
    tensors.push_back({"output_norm.weight", TensorType::F32, {4096, 1, 1, 1}});
    for (int i = 0; i < 32; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        tensors.push_back({p + "attn_norm.weight", TensorType::F32, {4096, 1, 1, 1}});
        tensors.push_back({p + "attn_q.weight", TensorType::F16, {4096, 4096, 1, 1}});
        tensors.push_back({p + "attn_k.weight", TensorType::F16, {4096, 1024, 1, 1}});
        tensors.push_back({p + "attn_v.weight", TensorType::F16, {4096, 1024, 1, 1}});
        tensors.push_back({p + "attn_output.weight", TensorType::F16, {4096, 4096, 1, 1}});
        tensors.push_back({p + "ffn_gate.weight", TensorType::F16, {4096, 11008, 1, 1}});
        tensors.push_back({p + "ffn_up.weight", TensorType::F16, {4096, 11008, 1, 1}});
        tensors.push_back({p + "ffn_down.weight", TensorType::F16, {11008, 4096, 1, 1}});
    }
    return tensors;
}

MixModel llamaModel() {
    return {"llama", 32, 32, 8, 0};
}

std::map<std::string, TensorType> typesOf(const std::vector<MixTensor>& tensors,
                                          const std::vector<TensorChoice>& choices) {
    std::map<std::string, TensorType> out;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        out[tensors[i].name] = choices[i].type;
    }
    return out;
}

// The layers llama-quantize's use_more_bits picks among 32: the first and last four, and every
// third from layer 6.
bool moreBits(int layer) {
    return layer < 4 || layer >= 28 || (layer - 4) % 3 == 2;
}

// The shapes of quantize_fixtures.py's RULE_SHAPES: embedding 256, FFN 512, vocabulary 512, head
// size 32; `experts` stacked in ffn_*_exps with a router when not 0.
std::vector<MixTensor> ruleShape(int layers, std::uint64_t kvHeads, std::uint64_t experts) {
    const std::uint64_t e = 256;
    const std::uint64_t f = 512;
    const std::uint64_t kv = 32 * kvHeads;
    std::vector<MixTensor> out = {{"token_embd.weight", TensorType::F16, {e, 512, 1, 1}},
                                  {"output_norm.weight", TensorType::F32, {e, 1, 1, 1}},
                                  {"output.weight", TensorType::F16, {e, 512, 1, 1}}};
    for (int i = 0; i < layers; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        const std::vector<MixTensor> layer = {{p + "attn_norm.weight", TensorType::F32, {e, 1, 1, 1}},
                                              {p + "attn_q.weight", TensorType::F16, {e, e, 1, 1}},
                                              {p + "attn_k.weight", TensorType::F16, {e, kv, 1, 1}},
                                              {p + "attn_v.weight", TensorType::F16, {e, kv, 1, 1}},
                                              {p + "attn_output.weight", TensorType::F16, {e, e, 1, 1}},
                                              {p + "ffn_norm.weight", TensorType::F32, {e, 1, 1, 1}}};
        out.insert(out.end(), layer.begin(), layer.end());
        if (experts != 0) {
            out.push_back({p + "ffn_gate_inp.weight", TensorType::F16, {e, experts, 1, 1}});
            out.push_back({p + "ffn_gate_exps.weight", TensorType::F16, {e, f, experts, 1}});
            out.push_back({p + "ffn_up_exps.weight", TensorType::F16, {e, f, experts, 1}});
            out.push_back({p + "ffn_down_exps.weight", TensorType::F16, {f, e, experts, 1}});
        } else {
            out.push_back({p + "ffn_gate.weight", TensorType::F16, {e, f, 1, 1}});
            out.push_back({p + "ffn_up.weight", TensorType::F16, {e, f, 1, 1}});
            out.push_back({p + "ffn_down.weight", TensorType::F16, {f, e, 1, 1}});
        }
    }
    return out;
}

QString modelPath(const char* name) {
    return sharedModel(QStringLiteral("family/") + QLatin1String(name));
}

} // namespace

class TestQuantizeModel : public QObject {
    Q_OBJECT

private slots:
    void mixingRules_data() {
        QTest::addColumn<QString>("fileType");
        QTest::addColumn<bool>("importance");
        for (const char* t : {"Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M",
                              "Q6_K", "IQ4_XS", "Q4_0", "Q8_0"}) {
            QTest::addRow("%s", t) << QString::fromLatin1(t) << false;
            QTest::addRow("%s imatrix", t) << QString::fromLatin1(t) << true;
        }
    }

    // Each rule of llama_tensor_get_type_impl that these file types reach, layer by layer.
    void mixingRules() {
        QFETCH(QString, fileType);
        QFETCH(bool, importance);
        const auto ft = quantFileTypeFromName(fileType.toStdString());
        QVERIFY(ft.has_value());
        QuantizeRecipe recipe;
        recipe.fileType = *ft;
        const std::vector<MixTensor> tensors = llamaShape(false);
        const auto types = typesOf(tensors, chooseTensorTypes(llamaModel(), tensors, recipe, importance));
        const TensorType base = defaultTensorType(*ft);
        using T = TensorType;
        QCOMPARE(types.at("output_norm.weight"), T::F32);
        QCOMPARE(types.at("output.weight"), base == T::Q8_0 ? T::Q8_0 : T::Q6_K);
        QCOMPARE(types.at("token_embd.weight"), base);
        for (int i = 0; i < 32; ++i) {
            const std::string p = "blk." + std::to_string(i) + ".";
            T v = base;
            T down = base;
            T out = base;
            switch (*ft) {
            case QuantFileType::Q2_K:
                v = T::Q4_K; // GQA 4
                down = T::Q3_K;
                out = T::Q3_K;
                break;
            case QuantFileType::Q3_K_M:
                v = i < 2 ? T::Q5_K : T::Q4_K;
                down = i < 2 ? T::Q5_K : T::Q4_K;
                out = T::Q4_K;
                break;
            case QuantFileType::Q3_K_L:
                v = T::Q5_K;
                down = T::Q5_K;
                out = T::Q5_K;
                break;
            case QuantFileType::Q4_K_S:
                v = i < 4 ? T::Q5_K : base;
                down = i < 4 ? T::Q5_K : base;
                break;
            case QuantFileType::Q4_K_M:
            case QuantFileType::Q5_K_M:
                v = moreBits(i) ? T::Q6_K : base;
                down = moreBits(i) ? T::Q6_K : base;
                break;
            case QuantFileType::IQ4_XS:
                v = T::Q5_K;
                down = i < 4 && !importance ? T::Q5_K : base;
                break;
            case QuantFileType::Q4_0:
                down = i < 4 && importance ? T::Q4_1 : base;
                break;
            default:
                break;
            }
            const auto where = [&](const char* what) -> QString {
                return QString::fromStdString(p) + QLatin1String(what);
            };
            QVERIFY2(types.at(p + "attn_v.weight") == v, qPrintable(where("attn_v")));
            QVERIFY2(types.at(p + "ffn_down.weight") == down, qPrintable(where("ffn_down")));
            QVERIFY2(types.at(p + "attn_output.weight") == out, qPrintable(where("attn_output")));
            for (const char* same : {"attn_q.weight", "attn_k.weight", "ffn_gate.weight", "ffn_up.weight"}) {
                QVERIFY2(types.at(p + same) == base, qPrintable(where(same)));
            }
            QCOMPARE(types.at(p + "attn_norm.weight"), T::F32);
        }
    }

    // Without output.weight the token embedding is the output too, and takes the output's type;
    // the options come before the rules, --pure leaves only them.
    void options() {
        using T = TensorType;
        QuantizeRecipe recipe;
        recipe.fileType = QuantFileType::Q4_K_M;
        const std::vector<MixTensor> tied = llamaShape(true);
        QCOMPARE(typesOf(tied, chooseTensorTypes(llamaModel(), tied, recipe, false)).at("token_embd.weight"),
                 T::Q6_K);

        const std::vector<MixTensor> tensors = llamaShape(false);
        recipe.tensorTypes = {{"ATTN_V", T::Q8_0}, {"blk\\.1\\.ffn_down", T::IQ4_NL}, {"ffn_down", T::Q5_0}};
        recipe.outputTensorType = T::Q8_0;
        recipe.tokenEmbeddingType = T::BF16;
        auto types = typesOf(tensors, chooseTensorTypes(llamaModel(), tensors, recipe, false));
        QCOMPARE(types.at("blk.0.attn_v.weight"), T::Q8_0); // patterns are lower-cased
        QCOMPARE(types.at("blk.1.ffn_down.weight"), T::IQ4_NL);
        QCOMPARE(types.at("blk.10.ffn_down.weight"), T::Q5_0); // the first pattern found decides
        QCOMPARE(types.at("output.weight"), T::Q8_0);
        QCOMPARE(types.at("token_embd.weight"), T::BF16);

        recipe = {};
        recipe.fileType = QuantFileType::Q4_K_M;
        recipe.pure = true;
        recipe.leaveOutputTensor = true;
        types = typesOf(tensors, chooseTensorTypes(llamaModel(), tensors, recipe, false));
        QCOMPARE(types.at("output.weight"), T::F16);
        QCOMPARE(types.at("blk.0.attn_v.weight"), T::Q4_K);
        QCOMPARE(types.at("blk.31.ffn_down.weight"), T::Q4_K);
        QCOMPARE(types.at("token_embd.weight"), T::Q4_K);

        recipe = {};
        recipe.fileType = QuantFileType::F16;
        types = typesOf(tensors, chooseTensorTypes(llamaModel(), tensors, recipe, false));
        QCOMPARE(types.at("output.weight"), T::F16);
        QCOMPARE(types.at("blk.0.attn_v.weight"), T::F16);
        QCOMPARE(types.at("output_norm.weight"), T::F32);
    }

    // A row that does not fit the type's block falls back as llama-quantize falls back, with a note.
    void fallbacks() {
        using T = TensorType;
        const std::vector<MixTensor> tensors = {{"blk.0.attn_q.weight", T::F32, {4160, 64, 1, 1}},
                                                {"blk.0.ffn_up.weight", T::F32, {100, 64, 1, 1}},
                                                {"blk.0.attn_k.weight", T::F32, {4160, 64, 1, 1}}};
        QuantizeRecipe recipe;
        recipe.fileType = QuantFileType::Q4_K_M;
        recipe.tensorTypes = {{"attn_k", T::IQ4_XS}};
        const MixModel model{"llama", 1, 8, 8, 0};
        const std::vector<TensorChoice> choices = chooseTensorTypes(model, tensors, recipe, false);
        QCOMPARE(choices[0].type, T::Q5_0);
        QVERIFY(choices[0].note.find("Q5_0 instead") != std::string::npos);
        QCOMPARE(choices[1].type, T::F16);
        QCOMPARE(choices[2].type, T::IQ4_NL);
        recipe.pure = true;
        try {
            chooseTensorTypes(model, tensors, recipe, false);
            QFAIL("a row that fits no block was accepted with --pure");
        } catch (const FormatError& error) {
            QVERIFY2(QString::fromUtf8(error.what()).contains(QStringLiteral("--pure")), error.what());
        }
    }

    // llama.cpp's order: tensors outside layers first, then by layer number, each by name.
    void tensorOrder() {
        const std::vector<MixTensor> tensors = {{"blk.10.b.weight"},
                                                {"output.weight"},
                                                {"blk.9.b.weight"},
                                                {"blk.9.a.weight"},
                                                {"token_embd.weight"}};
        const std::vector<std::size_t> order = llamaTensorOrder(tensors);
        QCOMPARE(order, (std::vector<std::size_t>{1, 4, 3, 2, 0}));
    }

    void refusesBadRecipes_data() {
        QTest::addColumn<QString>("option");
        QTest::addColumn<QString>("message");
        QTest::newRow("not a regex") << QStringLiteral("attn_(v=q8_0")
                                     << QStringLiteral("not a regular expression");
        QTest::newRow("unwritten type")
            << QStringLiteral("attn_v=iq2_xxs") << QStringLiteral("does not write IQ2_XXS");
    }

    void refusesBadRecipes() {
        QFETCH(QString, option);
        QFETCH(QString, message);
        QuantizeRecipe recipe;
        std::pair<std::string, TensorType> entry;
        QVERIFY(parseTensorTypeOption(option.toStdString(), entry));
        recipe.tensorTypes.push_back(entry);
        const auto problem = quantizeRecipeProblem(recipe);
        QVERIFY(problem.has_value());
        QVERIFY2(QString::fromStdString(*problem).contains(message), problem->c_str());
    }

    void parsesTensorTypeOptions() {
        std::pair<std::string, TensorType> entry;
        QVERIFY(parseTensorTypeOption("ffn_(up|gate)=Q8_0", entry));
        QCOMPARE(entry.first, std::string("ffn_(up|gate)"));
        QCOMPARE(entry.second, TensorType::Q8_0);
        for (const char* bad : {"attn_v", "=q8_0", "attn_v=", "attn_v=q9_9", "a=b=q8_0"}) {
            QVERIFY2(!parseTensorTypeOption(bad, entry), bad);
        }
        QCOMPARE(quantFileTypeFromName("q4_k"), std::optional(QuantFileType::Q4_K_M));
        QCOMPARE(quantFileTypeFromName("iq4_xs"), std::optional(QuantFileType::IQ4_XS));
        QVERIFY(!quantFileTypeFromName("Q4_K_X").has_value());
    }

    // family-base-q4_k_m.gguf is llama-quantize's Q4_K_M of the family base: the same file.
    void writesLlamaQuantizesFile() {
        ORGAN_REQUIRE_SHARED(modelPath("family-base-f16.gguf"));
        ORGAN_REQUIRE_SHARED(modelPath("family-base-q4_k_m.gguf"));
        const auto model = GgufModel::open(modelPath("family-base-f16.gguf").toStdString());
        QTemporaryDir dir;
        const QString out = dir.filePath(QStringLiteral("q4km.gguf"));
        QuantizeRecipe recipe;
        recipe.fileType = QuantFileType::Q4_K_M;
        std::uint64_t reports = 0;
        const QuantizeOutcome outcome = quantizeModel(
            *model, recipe, nullptr, out.toStdString(), [&](const Progress&) { ++reports; }, nullptr, 2);
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());
        QVERIFY(reports > 0);
        QVERIFY(outcome.notes.empty());
        QFile ours(out);
        QFile theirs(modelPath("family-base-q4_k_m.gguf"));
        QVERIFY(ours.open(QIODevice::ReadOnly) && theirs.open(QIODevice::ReadOnly));
        const QByteArray a = ours.readAll();
        const QByteArray b = theirs.readAll();
        QCOMPARE(a.size(), b.size());
        QVERIFY2(a == b, "the file differs from llama-quantize's");
        std::size_t converted = 0;
        for (const QuantizedTensor& t : outcome.tensors) {
            converted += t.converted ? 1 : 0;
        }
        QCOMPARE(converted, std::size_t(44));
    }

    // The file types of tests/data/quantize/family-base-f16.mix-*: llama-quantize's type and bytes
    // for every tensor of the family base, with and without its importance matrix.
    void mixMatchesLlamaQuantize_data() {
        QTest::addColumn<QString>("fixture");
        const QStringList names = quantizeFixtureNames(QStringLiteral("family-base-f16.mix-"));
        QVERIFY2(names.size() == 10, "the mix fixtures of tests/data/quantize are missing");
        for (const QString& name : names) {
            QTest::newRow(qPrintable(name)) << name;
        }
    }

    void mixMatchesLlamaQuantize() {
        QFETCH(QString, fixture);
        const auto expected = readQuantizeFixture(fixture);
        QVERIFY(expected.has_value());
        const QString imatrixPath = sharedReference(QStringLiteral("family/family-base-imatrix.gguf"));
        ORGAN_REQUIRE_SHARED(modelPath("family-base-f16.gguf"));
        ORGAN_REQUIRE_SHARED(imatrixPath);
        const auto model = GgufModel::open(modelPath("family-base-f16.gguf").toStdString());
        QuantizeRecipe recipe;
        recipe.fileType = *quantFileTypeFromName(
            fixture.section(QStringLiteral("mix-"), 1).section(u'.', 0, 0).toStdString());
        std::optional<ImatrixData> matrix;
        if (fixture.endsWith(QStringLiteral(".imatrix"))) {
            recipe.imatrix = imatrixPath.toStdString();
            matrix = readImatrix(recipe.imatrix);
        }
        QTemporaryDir dir;
        const QString out = dir.filePath(QStringLiteral("mix.gguf"));
        const QuantizeOutcome outcome =
            quantizeModel(*model, recipe, matrix ? &*matrix : nullptr, out.toStdString());
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());
        const auto written = GgufFile::open(out.toStdString());
        QCOMPARE(written->tensors().size(), expected->tensors.size());
        std::map<TensorType, std::uint64_t> blocks;
        for (std::size_t i = 0; i < expected->tensors.size(); ++i) {
            const ExpectedTensor& e = expected->tensors[i];
            const TensorInfo& t = written->tensors()[i];
            QCOMPARE(t.name, e.name); // llama-quantize's order
            QVERIFY2(t.type == e.type, qPrintable(QString::fromStdString(e.name) + QStringLiteral(": ") +
                                                  QString::fromUtf8(tensorTypeName(t.type).data())));
            const auto bytes = written->tensorData(t);
            if (Sha256::hex(bytes) != e.sha256) {
                QFAIL(qPrintable(quantizeMismatch(fixture, e, bytes)));
            }
            blocks[t.type] += e.blocks;
        }
        QString summary;
        for (const auto& [type, count] : blocks) {
            summary +=
                QStringLiteral(" %1 %2").arg(QString::fromUtf8(tensorTypeName(type).data())).arg(count);
        }
        qInfo("%s: every tensor identical (blocks:%s)", qPrintable(fixture), qPrintable(summary));
    }

    // The rules the family does not reach, against llama-quantize itself: the type it gave every
    // tensor of a 32-layer llama with 4 heads per key-value head and of a 4-layer llama with 8
    // experts, for 16 file types, with and without an importance matrix (tests/data/quantize/rules-*).
    void rulesMatchLlamaQuantize_data() {
        QTest::addColumn<QString>("fixture");
        const QStringList files =
            QDir(quantizeFixtureDir()).entryList({QStringLiteral("rules-*.types")}, QDir::Files);
        QVERIFY2(files.size() == 64, "the rules fixtures of tests/data/quantize are missing");
        for (const QString& file : files) {
            QTest::newRow(qPrintable(file)) << file.chopped(6);
        }
    }

    void rulesMatchLlamaQuantize() {
        QFETCH(QString, fixture);
        QFile file(quantizeFixtureDir() + u'/' + fixture + QStringLiteral(".types"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        std::vector<std::pair<std::string, TensorType>> expected;
        for (const QByteArray& line : file.readAll().split('\n')) {
            const QList<QByteArray> fields = line.split('\t');
            if (!line.startsWith('#') && fields.size() == 2) {
                expected.emplace_back(fields[0].toStdString(), *tensorTypeFromName(fields[1].toStdString()));
            }
        }
        const bool moe = fixture.startsWith(QStringLiteral("rules-moe8"));
        const std::vector<MixTensor> tensors = moe ? ruleShape(4, 8, 8) : ruleShape(32, 2, 0);
        const MixModel model{"llama", moe ? 4u : 32u, 8, moe ? 8u : 2u, moe ? 8u : 0u};
        QuantizeRecipe recipe;
        recipe.fileType = *quantFileTypeFromName(fixture.section(u'.', 1, 1).toStdString());
        const std::vector<TensorChoice> choices =
            chooseTensorTypes(model, tensors, recipe, fixture.endsWith(QStringLiteral(".synthetic")));
        const std::vector<std::size_t> order = llamaTensorOrder(tensors);
        QCOMPARE(order.size(), expected.size());
        for (std::size_t i = 0; i < order.size(); ++i) {
            const MixTensor& t = tensors[order[i]];
            QCOMPARE(t.name, expected[i].first);
            QVERIFY2(choices[order[i]].type == expected[i].second,
                     qPrintable(QString::fromStdString(t.name) + QStringLiteral(": ours ") +
                                QString::fromUtf8(tensorTypeName(choices[order[i]].type).data()) +
                                QStringLiteral(", llama-quantize's ") +
                                QString::fromUtf8(tensorTypeName(expected[i].second).data())));
        }
    }

    // A quantized input is decoded and quantized again, with a note saying so.
    void requantizesWithANote() {
        ORGAN_REQUIRE_SHARED(modelPath("family-base-q4_k_m.gguf"));
        const auto model = GgufModel::open(modelPath("family-base-q4_k_m.gguf").toStdString());
        QTemporaryDir dir;
        const QString out = dir.filePath(QStringLiteral("q6k.gguf"));
        QuantizeRecipe recipe;
        recipe.fileType = QuantFileType::Q6_K;
        const QuantizeOutcome outcome = quantizeModel(*model, recipe, nullptr, out.toStdString());
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());
        QCOMPARE(outcome.notes.size(), std::size_t(1));
        QVERIFY2(outcome.notes[0].find("39 tensors were quantized already") != std::string::npos,
                 outcome.notes[0].c_str());
        const auto written = GgufFile::open(out.toStdString());
        const TensorInfo* before = model->findTensor("blk.2.ffn_up.weight");
        const TensorInfo* after = written->findTensor("blk.2.ffn_up.weight");
        QVERIFY(before != nullptr && after != nullptr);
        QCOMPARE(before->type, TensorType::Q4_K);
        QCOMPARE(after->type, TensorType::Q6_K);
        std::vector<float> values(static_cast<std::size_t>(before->elements));
        dequantizeRange(before->type, model->tensorData(*before), 0, values.size(), values.data());
        std::vector<std::byte> expected(static_cast<std::size_t>(after->bytes));
        quantizeRows(TensorType::Q6_K, values.data(), values.size() / before->ne[0], before->ne[0], nullptr,
                     expected.data());
        const auto bytes = written->tensorData(*after);
        QVERIFY(std::equal(expected.begin(), expected.end(), bytes.begin(), bytes.end()));
    }

    void cancelLeavesNoFile() {
        ORGAN_REQUIRE_SHARED(modelPath("family-base-f16.gguf"));
        const auto model = GgufModel::open(modelPath("family-base-f16.gguf").toStdString());
        QTemporaryDir dir;
        const QString out = dir.filePath(QStringLiteral("cancelled.gguf"));
        QuantizeRecipe recipe;
        recipe.fileType = QuantFileType::Q4_K_M;
        StopToken stop;
        const QuantizeOutcome outcome = quantizeModel(
            *model, recipe, nullptr, out.toStdString(), [&](const Progress&) { stop.requestStop(); }, &stop);
        QCOMPARE(outcome.written.status, JobResult::Status::Cancelled);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList());
    }
};

QTEST_APPLESS_MAIN(TestQuantizeModel)
#include "tst_quantize_model.moc"
