// The merge operation of graft plans: the merged tensors written in the base's types (quantized as
// organ quantize quantizes, from inputs of any type), with parameters that vary over the blocks and
// a selection; tensors a model lacks kept as they stand, other vocabularies refused; organ.merge.*
// recorded; the vital signs read the same bytes as the writer writes; a cancelled merge leaves no
// file; merges combine with purification and quantization in one plan.
#include "fixtures.h"
#include "gguf/specimen.h"
#include "graft/assembly.h"
#include "graft/chimera_spec.h"
#include "merge/tensor_merger.h"
#include "quant/dequant.h"
#include "quant/quantize.h"
#include "quant/quantize_model.h"
#include "support/errors.h"
#include "vitals/model_weights.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <qfloat16.h>

using namespace organ;
using namespace organ::testing;

namespace {

QString findingsOf(const CompatibilityReport& report) {
    QString text;
    for (const auto& f : report.findings) {
        text += QString::fromStdString(f.message) + u'\n';
    }
    return text;
}

// Purifies the tensors of those names, or of that system.
GraftOperation purifyOperation(std::vector<std::string> names) {
    GraftOperation o;
    o.kind = GraftOperation::Kind::Purify;
    o.select.names = std::move(names);
    return o;
}

GraftOperation purifyOperation(System system) {
    GraftOperation o;
    o.kind = GraftOperation::Kind::Purify;
    o.select.system = system;
    return o;
}

GraftOperation quantizeOperation(QuantFileType type) {
    GraftOperation o;
    o.kind = GraftOperation::Kind::Quantize;
    o.quantize.fileType = type;
    return o;
}

GraftOperation mergeOperation(const std::string& json) {
    GraftOperation o;
    o.kind = GraftOperation::Kind::Merge;
    o.merge = mergeSpecFromJson(nlohmann::json::parse(json), "test");
    return o;
}

} // namespace

class TestMergePlan : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }
    std::string model(const char* name) const { return path(QString::fromLatin1(name)).toStdString(); }

    GraftPlan planOf(const std::string& base, std::vector<std::pair<std::string, std::string>> donors,
                     GraftOperation merge) {
        GraftPlan plan;
        plan.base = base;
        plan.donors = std::move(donors);
        plan.operations.push_back(std::move(merge));
        return plan;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        SpecimenShape shape;
        shape.feedForward = 128;
        shape.blocks = 3;
        for (const auto& [name, seed] : {std::pair{"base.gguf", 1}, {"a.gguf", 2}, {"b.gguf", 3}}) {
            QVERIFY(writeSpecimen(model(name), seed, shape).isOk());
        }
        SpecimenShape other = shape;
        other.vocabulary = 300;
        QVERIFY(writeSpecimen(model("other-vocabulary.gguf"), 4, other).isOk());
        SpecimenShape wider = shape;
        wider.embedding = 128;
        QVERIFY(writeSpecimen(model("other-width.gguf"), 5, wider).isOk());
        // The same models in other types, as organ quantize writes them.
        for (const auto& [from, to, type] : {std::tuple{"base.gguf", "base-q8_0.gguf", QuantFileType::Q8_0},
                                             {"a.gguf", "a-f16.gguf", QuantFileType::F16},
                                             {"b.gguf", "b-q8_0.gguf", QuantFileType::Q8_0}}) {
            QuantizeRecipe recipe;
            recipe.fileType = type;
            QVERIFY(quantizeModel(*GgufModel::open(model(from)), recipe, nullptr, model(to)).written.isOk());
        }
    }

    // task_arithmetic with a weight that is a gradient over the blocks for the attention and a
    // number elsewhere: every tensor is b + Σ wᵢ(tensor)·(xᵢ − b), computed here in double.
    void writesTheMergedTensors() {
        GraftPlan plan = planOf(model("base.gguf"), {{"a", model("a.gguf")}, {"b", model("b.gguf")}},
                                mergeOperation(R"({"method": "task_arithmetic", "base": "base",
                                    "models": [{"model": "a", "parameters": {"weight": [{"filter": "self_attn", "value": [0.2, 1.0]}, {"value": 0.5}]}},
                                               {"model": "b", "parameters": {"weight": 0.25}}]})"));
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY2(!report.hasErrors(), qPrintable(findingsOf(report)));
        QVERIFY2(findingsOf(report).contains(
                     QStringLiteral("merge (task_arithmetic): 30 tensors from base.gguf, a.gguf and b.gguf")),
                 qPrintable(findingsOf(report)));
        const std::string out = model("merged.gguf");
        const GraftOutcome outcome = graftChimera(plan, models, out);
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());
        const auto merged = GgufModel::open(out);
        const auto base = GgufModel::open(model("base.gguf"));
        const auto a = GgufModel::open(model("a.gguf"));
        const auto b = GgufModel::open(model("b.gguf"));
        QCOMPARE(merged->tensors().size(), base->tensors().size());
        for (const TensorInfo& t : merged->tensors()) {
            QCOMPARE(t.type, base->findTensor(t.name)->type);
            const auto parsed = parseLayerName(t.name);
            const bool attention = t.name.find("attn_") != std::string::npos;
            const double wa = attention ? 0.2 + 0.8 * (parsed ? parsed->layer / 2.0 : 0.0) : 0.5;
            const auto x = tensorValues(*base, t.name);
            const auto ya = tensorValues(*a, t.name);
            const auto yb = tensorValues(*b, t.name);
            const auto got = tensorValues(*merged, t.name);
            for (std::size_t i = 0; i < got.size(); ++i) {
                const double want =
                    double(x[i]) + wa * (double(ya[i]) - x[i]) + 0.25 * (double(yb[i]) - x[i]);
                QVERIFY2(std::abs(got[i] - want) <= 1e-5 * (1 + std::abs(want)),
                         qPrintable(QStringLiteral("%1[%2]: %3, expected %4")
                                        .arg(QString::fromStdString(t.name))
                                        .arg(i)
                                        .arg(got[i])
                                        .arg(want)));
            }
        }
        QCOMPARE(std::string(merged->find("organ.merge.method")->asString().value_or("")),
                 std::string("task_arithmetic"));
        QCOMPARE(std::string(merged->find("organ.merge.base")->asString().value_or("")),
                 std::string("base: organ-specimen"));
        QCOMPARE(merged->find("organ.merge.models")->arraySize(), std::uint64_t(2));
        QCOMPARE(merged->find("organ.merge.tensors")->arraySize(), std::uint64_t(30));
        QCOMPARE(merged->find("organ.merge.version")->asUInt().value_or(0), std::uint64_t(1));
        QVERIFY(merged->find("organ.merge.seed") == nullptr); // no randomness
        const auto parameters = nlohmann::json::parse(
            std::string(merged->find("organ.merge.parameters")->asString().value_or("")));
        QCOMPARE(parameters.at("models").at(1).at("parameters").at("weight"), nlohmann::json(0.25));
    }

    // Inputs in Q8_0, F16 and F32; the output takes the base's types (Q8_0 matrices, F32 norms), each
    // merged tensor the bytes organ quantize gives its merged values.
    void quantizedInputsBaseTypes() {
        GraftPlan plan =
            planOf(model("base-q8_0.gguf"), {{"a", model("a-f16.gguf")}, {"b", model("b-q8_0.gguf")}},
                   mergeOperation(R"({"method": "ties", "base": "base",
                                    "models": [{"model": "a", "parameters": {"weight": 0.5, "density": 0.4}},
                                               {"model": "b", "parameters": {"weight": 0.5, "density": 0.4}}]})"));
        const GraftModels models = GraftModels::open(plan);
        const std::string out = model("merged-q8_0.gguf");
        const GraftOutcome outcome = graftChimera(plan, models, out);
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());
        const auto merged = GgufModel::open(out);
        const auto base = GgufModel::open(model("base-q8_0.gguf"));
        const auto a = GgufModel::open(model("a-f16.gguf"));
        const auto b = GgufModel::open(model("b-q8_0.gguf"));
        for (const std::string name :
             {"blk.1.ffn_down.weight", "blk.0.attn_norm.weight", "token_embd.weight"}) {
            const TensorInfo& t = *merged->findTensor(name);
            QCOMPARE(t.type, base->findTensor(name)->type);
            const TensorMergeParams params =
                resolveTensorParams(plan.operations.front().merge, TensorPlace::of(name, 3), name);
            const auto x = tensorValues(*base, name);
            const std::vector<std::vector<float>> xs{tensorValues(*a, name), tensorValues(*b, name)};
            TensorMergeInputs inputs;
            inputs.elements = t.elements;
            auto reader = [](const std::vector<float>& v) {
                return [&v](std::uint64_t first, std::size_t count, float* o) {
                    std::copy_n(v.begin() + static_cast<std::ptrdiff_t>(first), count, o);
                };
            };
            inputs.base = reader(x);
            inputs.models = {reader(xs[0]), reader(xs[1])};
            const std::vector<float> values = mergeTensorValues(params, inputs);
            std::vector<std::byte> bytes(static_cast<std::size_t>(storedBytes(t.type, t.elements)));
            quantizeRows(t.type, values.data(), t.elements / t.ne[0], t.ne[0], nullptr, bytes.data());
            QVERIFY2(std::ranges::equal(merged->tensorData(t), bytes), name.c_str());
        }
        QCOMPARE(merged->findTensor("blk.1.ffn_down.weight")->type, TensorType::Q8_0);
    }

    // A selection merges only what it picks; the rest keeps the base's bytes.
    void selection() {
        GraftOperation merge = mergeOperation(R"({"method": "linear",
            "models": [{"model": "base", "parameters": {"weight": 1}}, {"model": "a", "parameters": {"weight": 1}}]})");
        merge.select.system = System::Organ;
        GraftPlan plan = planOf(model("base.gguf"), {{"a", model("a.gguf")}}, merge);
        const GraftModels models = GraftModels::open(plan);
        const std::string out = model("organs-merged.gguf");
        QVERIFY(graftChimera(plan, models, out).written.isOk());
        const auto merged = GgufModel::open(out);
        const auto base = GgufModel::open(model("base.gguf"));
        const auto a = GgufModel::open(model("a.gguf"));
        for (const TensorInfo& t : merged->tensors()) {
            if (classifyTensor(t.name).system == System::Organ) {
                const auto x = tensorValues(*base, t.name);
                const auto y = tensorValues(*a, t.name);
                const auto got = tensorValues(*merged, t.name);
                QCOMPARE(got.size(), x.size());
                for (std::size_t i = 0; i < got.size(); ++i) {
                    const float want = (x[i] + y[i]) / 2.0f;
                    if (std::abs(got[i] - want) > 1e-6f * (1 + std::abs(want))) {
                        QFAIL(qPrintable(QStringLiteral("%1[%2]: %3, expected %4")
                                             .arg(QString::fromStdString(t.name))
                                             .arg(i)
                                             .arg(got[i])
                                             .arg(want)));
                    }
                }
            } else {
                QVERIFY2(
                    std::ranges::equal(merged->tensorData(t), base->tensorData(*base->findTensor(t.name))),
                    t.name.c_str());
            }
        }
        QCOMPARE(merged->find("organ.merge.tensors")->arraySize(), std::uint64_t(9));
    }

    // A tensor a model lacks (or has in another shape) is kept as it stands, and the report says
    // which; an embedding of another vocabulary is refused.
    void missingTensorsAndVocabularies() {
        GgufWriteSpec spec = specFromFile(*GgufFile::open(model("a.gguf")));
        std::erase_if(spec.tensors, [](const TensorToWrite& t) { return t.name == "blk.2.ffn_up.weight"; });
        QVERIFY(writeFixture(path(QStringLiteral("a-lacking.gguf")), spec));
        GraftPlan plan = planOf(model("base.gguf"), {{"a", model("a-lacking.gguf")}},
                                mergeOperation(R"({"method": "task_arithmetic", "base": "base",
                                    "models": [{"model": "a", "parameters": {"weight": 1}}]})"));
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY2(!report.hasErrors(), qPrintable(findingsOf(report)));
        const auto kept = std::find_if(report.findings.begin(), report.findings.end(), [](const Finding& f) {
            return f.severity == Finding::Severity::Warning &&
                   f.message.find("kept as it stands") != std::string::npos;
        });
        QVERIFY2(kept != report.findings.end(), qPrintable(findingsOf(report)));
        QCOMPARE(kept->tensors, std::vector<std::string>{"blk.2.ffn_up.weight"});
        QVERIFY2(
            kept->message.ends_with("(the base's); blk.2.ffn_up.weight: a-lacking.gguf lacks it, the base "
                                    "64 × 128"),
            kept->message.c_str());
        const std::string out = model("kept.gguf");
        QVERIFY(graftChimera(plan, models, out).written.isOk());
        const auto merged = GgufModel::open(out);
        const auto base = GgufModel::open(model("base.gguf"));
        QVERIFY(std::ranges::equal(merged->tensorData(*merged->findTensor("blk.2.ffn_up.weight")),
                                   base->tensorData(*base->findTensor("blk.2.ffn_up.weight"))));
        QCOMPARE(merged->find("organ.merge.tensors")->arraySize(), std::uint64_t(29));
        // When no tensor is merged at all (the one selected is the one the model lacks), the plan is
        // refused: a copy of the base stamped as a merge is no merge.
        GraftOperation lacking = mergeOperation(R"({"method": "task_arithmetic", "base": "base",
            "models": [{"model": "a", "parameters": {"weight": 1}}]})");
        lacking.select.names = {"blk.2.ffn_up.weight"};
        GraftPlan nothing = planOf(model("base.gguf"), {{"a", model("a-lacking.gguf")}}, lacking);
        const GraftModels nothingModels = GraftModels::open(nothing);
        const QString none = findingsOf(checkGraft(nothing, nothingModels));
        QVERIFY2(none.contains(QStringLiteral("merge: no tensor is merged")), qPrintable(none));
        QVERIFY(!graftChimera(nothing, nothingModels, model("nothing.gguf")).written.isOk());
        QVERIFY(!QFile::exists(path(QStringLiteral("nothing.gguf"))));

        GraftPlan other = planOf(model("base.gguf"), {{"o", model("other-vocabulary.gguf")}},
                                 mergeOperation(R"({"method": "task_arithmetic", "base": "base",
                                     "models": [{"model": "o", "parameters": {"weight": 1}}]})"));
        const GraftModels otherModels = GraftModels::open(other);
        const QString refused = findingsOf(checkGraft(other, otherModels));
        QVERIFY2(refused.contains(QStringLiteral("token_embd.weight: the vocabularies of base.gguf and "
                                                 "other-vocabulary.gguf differ")),
                 qPrintable(refused));
        QVERIFY(!graftChimera(other, otherModels, model("never.gguf")).written.isOk());
        QVERIFY(!QFile::exists(path(QStringLiteral("never.gguf"))));

        // The same vocabulary in rows of another width: no tensor fits, which is what is said (not
        // that the vocabularies differ).
        GraftPlan wide = planOf(model("base.gguf"), {{"w", model("other-width.gguf")}},
                                mergeOperation(R"({"method": "task_arithmetic", "base": "base",
                                    "models": [{"model": "w", "parameters": {"weight": 1}}]})"));
        const GraftModels wideModels = GraftModels::open(wide);
        const QString wideFindings = findingsOf(checkGraft(wide, wideModels));
        QVERIFY2(!wideFindings.contains(QStringLiteral("vocabularies")), qPrintable(wideFindings));
        QVERIFY2(wideFindings.contains(QStringLiteral("merge: no tensor is merged")),
                 qPrintable(wideFindings));
        QVERIFY2(
            wideFindings.contains(QStringLiteral("the first, token_embd.weight: other-width.gguf has it 128 "
                                                 "× 512, the base 64 × 512")),
            qPrintable(wideFindings));
    }

    // A plan built in code (the window's) whose merge names a model the plan does not hold is
    // refused by the check, never followed to a model that is not there.
    // A merge that leaves a model out whatever it holds is said to, as a warning: a weight of 0
    // everywhere, a density of 0 everywhere where the method thins by it, slerp at t = 0. A
    // weight of 0 in some layers only is a choice, not said.
    void mergesThatDoNothingAreSaid() {
        const std::vector<std::pair<const char*, QString>> cases{
            {R"({"method": "ties", "base": "base", "models": [{"model": "a", "parameters": {"weight": 0, "density": 0.5}},
                 {"model": "b", "parameters": {"weight": 1, "density": 0.5}}]})",
             QStringLiteral("merge: a contributes nothing: its weight is 0 everywhere")},
            {R"({"method": "dare_linear", "base": "base", "parameters": {"density": [0, 0]},
                 "models": [{"model": "a", "parameters": {"weight": 1}}]})",
             QStringLiteral(
                 "merge: a contributes nothing: its density is 0 everywhere, so none of its differences "
                 "is kept")},
            {R"({"method": "slerp", "base": "base", "parameters": {"t": 0}, "models": [{"model": "a"}]})",
             QStringLiteral("merge: t is 0 everywhere: slerp gives the base as it stands")},
            {R"({"method": "ties", "base": "base", "models": [{"model": "a", "parameters": {"weight": [0, 1], "density": 0.5}}]})",
             QString()},
        };
        for (const auto& [json, warning] : cases) {
            const GraftPlan plan = planOf(
                model("base.gguf"), {{"a", model("a.gguf")}, {"b", model("b.gguf")}}, mergeOperation(json));
            const GraftModels opened = GraftModels::open(plan);
            const CompatibilityReport report = checkGraft(plan, opened);
            QVERIFY2(!report.hasErrors(), qPrintable(findingsOf(report)));
            const auto warnings = std::ranges::count_if(report.findings, [](const Finding& f) {
                return f.severity == Finding::Severity::Warning &&
                       (f.message.find("contributes nothing") != std::string::npos ||
                        f.message.starts_with("merge: t is 0"));
            });
            if (warning.isEmpty()) {
                QCOMPARE(warnings, 0);
            } else {
                QVERIFY2(warnings == 1, qPrintable(findingsOf(report)));
                QVERIFY2(findingsOf(report).contains(warning), qPrintable(findingsOf(report)));
            }
        }
    }

    // Tensors × filter rules are bounded before any is resolved: a stack of 3 072 blocks merged
    // with 512 filtered values a model would take the check minutes (an HTTP server's /plan/check
    // answered nothing else meanwhile).
    void ruleLookupsAreBounded() {
        nlohmann::json rules = nlohmann::json::array();
        for (int r = 0; r < 255; ++r) {
            rules.push_back({{"filter", "never" + std::to_string(r)}, {"value", 0.5}});
        }
        rules.push_back({{"value", 1}});
        const nlohmann::json params = {{"weight", rules}, {"density", rules}};
        const std::string json = nlohmann::json{{"method", "ties"},
                                                {"base", "base"},
                                                {"models",
                                                 {{{"model", "a"}, {"parameters", params}},
                                                  {{"model", "b"}, {"parameters", params}}}}}
                                     .dump();
        QCOMPARE(mergeRuleLookups(mergeSpecFromJson(nlohmann::json::parse(json), "test")),
                 std::uint64_t(1024));
        GraftPlan plan = planOf(model("base.gguf"), {{"a", model("a.gguf")}, {"b", model("b.gguf")}},
                                mergeOperation(json));
        const GraftModels opened = GraftModels::open(plan);
        QVERIFY2(!checkGraft(plan, opened).hasErrors(), qPrintable(findingsOf(checkGraft(plan, opened))));
        GraftOperation stack;
        stack.kind = GraftOperation::Kind::StackLayers;
        for (int run = 0; run < 1024; ++run) {
            stack.stack.push_back({"base", 0, 2});
        }
        plan.operations.insert(plan.operations.begin(), stack);
        QElapsedTimer timer;
        timer.start();
        const CompatibilityReport report = checkGraft(plan, GraftModels::open(plan));
        QVERIFY2(
            findingsOf(report).contains(QStringLiteral("filter rules, make ")) &&
                findingsOf(report).contains(QStringLiteral("more than the 16 777 216 a plan may ask for")),
            qPrintable(findingsOf(report).left(2000)));
        qInfo() << "checked in" << timer.elapsed() << "ms";
    }

    // A problem every tensor shares is said once, for all of them, the model named by its file.
    void sharedProblemsSaidOnce() {
        const GraftPlan plan =
            planOf(model("base.gguf"), {{"a", model("a.gguf")}, {"b", model("b.gguf")}},
                   mergeOperation(R"({"method": "linear", "models": [{"model": "a"}, {"model": "b"}]})"));
        const CompatibilityReport report = checkGraft(plan, GraftModels::open(plan));
        const auto errors = std::ranges::count_if(
            report.findings, [](const Finding& f) { return f.severity == Finding::Severity::Error; });
        QVERIFY2(errors == 1, qPrintable(findingsOf(report)));
        QVERIFY2(findingsOf(report).contains(
                     QStringLiteral("model 'a.gguf' has no weight for token_embd.weight")) &&
                     findingsOf(report).contains(QStringLiteral("more tensors)")),
                 qPrintable(findingsOf(report)));
    }

    void unknownModelRefused() {
        for (const char* json : {R"({"method": "task_arithmetic", "base": "base",
                                     "models": [{"model": "ghost", "parameters": {"weight": 1}}]})",
                                 R"({"method": "ties", "base": "ghost",
                                     "models": [{"model": "a", "parameters": {"weight": 1}}]})"}) {
            const GraftPlan plan = planOf(model("base.gguf"), {{"a", model("a.gguf")}}, mergeOperation(json));
            const GraftModels models = GraftModels::open(plan);
            const CompatibilityReport report = checkGraft(plan, models);
            QVERIFY(report.hasErrors());
            QVERIFY2(
                findingsOf(report).contains(QStringLiteral("merge: the plan has no model called \"ghost\"")),
                qPrintable(findingsOf(report)));
            QVERIFY(!graftChimera(plan, models, model("ghost.gguf")).written.isOk());
            QVERIFY(!QFile::exists(path(QStringLiteral("ghost.gguf"))));
        }
    }

    // The vital signs read a planned merge again and again: the same bytes as the writer's.
    void readerMatchesWriter() {
        GraftPlan plan = planOf(model("base-q8_0.gguf"), {{"a", model("a.gguf")}, {"b", model("b.gguf")}},
                                mergeOperation(R"({"method": "dare_ties", "base": "base", "seed": 5,
                                    "models": [{"model": "a", "parameters": {"weight": 0.7, "density": 0.6}},
                                               {"model": "b", "parameters": {"weight": 0.3, "density": 0.6}}]})"));
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY(!report.hasErrors());
        const std::string out = model("dare.gguf");
        QVERIFY(graftChimera(plan, models, out).written.isOk());
        const auto merged = GgufModel::open(out);
        QCOMPARE(merged->find("organ.merge.seed")->asUInt().value_or(0), std::uint64_t(5));
        const ModelWeights weights = ModelWeights::ofPlan(plan, models, report);
        std::vector<std::byte> scratch;
        for (const std::string name : {"blk.2.attn_v.weight", "token_embd.weight"}) {
            const TensorInfo& t = *merged->findTensor(name);
            const std::uint64_t rows = t.elements / t.ne[0];
            const auto rowBytes = t.bytes / rows;
            // Rows from the middle first, then from the start: asked out of order.
            const auto late = weights.rowBytes(name, rows / 2, 3, scratch);
            QVERIFY(
                std::ranges::equal(late, merged->tensorData(t).subspan(rows / 2 * rowBytes, 3 * rowBytes)));
            const auto early = weights.rowBytes(name, 0, 2, scratch);
            QVERIFY(std::ranges::equal(early, merged->tensorData(t).subspan(0, 2 * rowBytes)));
        }
        // The same seed, the same file.
        QVERIFY(graftChimera(plan, models, model("dare-again.gguf")).written.isOk());
        QCOMPARE(readAll(path(QStringLiteral("dare.gguf"))),
                 readAll(path(QStringLiteral("dare-again.gguf"))));
    }

    void cancelLeavesNothing() {
        GraftPlan plan = planOf(model("base.gguf"), {{"a", model("a.gguf")}},
                                mergeOperation(R"({"method": "ties", "base": "base",
                                    "models": [{"model": "a", "parameters": {"weight": 1, "density": 0.3}}]})"));
        const GraftModels models = GraftModels::open(plan);
        StopToken stop;
        int calls = 0;
        const GraftOutcome outcome = graftChimera(
            plan, models, model("cancelled.gguf"), {}, {},
            [&](const Progress&) {
                if (++calls == 2) {
                    stop.requestStop();
                }
            },
            &stop);
        QCOMPARE(outcome.written.status, JobResult::Status::Cancelled);
        QVERIFY(!QFile::exists(path(QStringLiteral("cancelled.gguf"))));
        QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("*.partial")}, QDir::Files), QStringList());
    }

    // Merge, then purify some merged tensors, then quantize the whole: one plan.
    void withPurifyAndQuantize() {
        GraftPlan plan = planOf(model("base.gguf"), {{"a", model("a.gguf")}, {"b", model("b.gguf")}},
                                mergeOperation(R"({"method": "model_stock", "base": "base",
                                    "models": [{"model": "a"}, {"model": "b"}]})"));
        plan.operations.push_back(purifyOperation({"blk.1.attn_q.weight"}));
        plan.operations.push_back(quantizeOperation(QuantFileType::Q8_0));
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY2(!report.hasErrors(), qPrintable(findingsOf(report)));
        AssemblyOptions options;
        options.purifyLog = std::make_shared<PurifyLog>();
        const GraftOutcome outcome = graftChimera(plan, models, model("stock-q8_0.gguf"), options);
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());
        QCOMPARE(outcome.purified.size(), std::size_t(1));
        QCOMPARE(outcome.purified.front().name, std::string("blk.1.attn_q.weight"));
        const auto merged = GgufModel::open(model("stock-q8_0.gguf"));
        QCOMPARE(merged->findTensor("blk.1.attn_q.weight")->type, TensorType::Q8_0);
        QVERIFY(merged->find("organ.purify.tensors") != nullptr);
        QCOMPARE(merged->find("organ.merge.tensors")->arraySize(), std::uint64_t(30));
        // A second merge, and a merge of a model the plan does not name, are refused.
        plan.operations.push_back(plan.operations.front());
        QVERIFY(findingsOf(checkGraft(plan, models)).contains(QStringLiteral("a plan merges once")));
        nlohmann::json json = graftPlanToJson(plan);
        json["operations"][0]["models"][0]["model"] = "c";
        try {
            graftPlanFromJson(json, "plan.json");
            QFAIL("an unknown model was accepted");
        } catch (const FormatError& error) {
            QCOMPARE(QString::fromUtf8(error.what()),
                     QStringLiteral("plan.json: operation 1: no model called \"c\""));
        }
    }

    // Merged values that are not finite are never written, a merged tensor purified next included.
    void notFiniteMergesAreRefused() {
        GraftOperation merge = mergeOperation(R"({"method": "task_arithmetic", "base": "base",
            "models": [{"model": "a", "parameters": {"weight": 3e38}}, {"model": "b", "parameters": {"weight": 3e38}}]})");
        merge.select.system = System::Skeleton;
        for (const bool purified : {false, true}) {
            GraftPlan plan =
                planOf(model("base.gguf"), {{"a", model("a.gguf")}, {"b", model("b.gguf")}}, merge);
            if (purified) {
                plan.operations.push_back(purifyOperation(System::Skeleton));
            }
            const GraftModels models = GraftModels::open(plan);
            const std::string out = model(purified ? "overflow-purified.gguf" : "overflow.gguf");
            const GraftOutcome outcome = graftChimera(plan, models, out);
            QVERIFY(!outcome.written.isOk());
            QVERIFY2(outcome.written.message.find(": the merge gives values that are not finite numbers") !=
                         std::string::npos,
                     outcome.written.message.c_str());
            QVERIFY(!QFile::exists(QString::fromStdString(out)));
        }
        // Finite merged values too large for the plan's Q8_0 (its scales are F16): refused, not
        // written as infinities, purified next or not.
        GraftOperation large = mergeOperation(R"({"method": "task_arithmetic", "base": "base",
            "models": [{"model": "a", "parameters": {"weight": 1e10}}]})");
        large.select.system = System::Skeleton;
        for (const bool purified : {false, true}) {
            GraftPlan plan = planOf(model("base.gguf"), {{"a", model("a.gguf")}}, large);
            if (purified) {
                plan.operations.push_back(purifyOperation(System::Skeleton));
            }
            plan.operations.push_back(quantizeOperation(QuantFileType::Q8_0));
            const GraftModels models = GraftModels::open(plan);
            const std::string out = model(purified ? "large-purified.gguf" : "large.gguf");
            const GraftOutcome outcome = graftChimera(plan, models, out);
            QVERIFY(!outcome.written.isOk());
            QVERIFY2(outcome.written.message.find(
                         ", more than Q8_0 holds (written, they would be infinities)") != std::string::npos,
                     outcome.written.message.c_str());
            QVERIFY(!QFile::exists(QString::fromStdString(out)));
        }
    }

    // Every tensor the writer makes names what it reads, for the writer's read-ahead: a merged
    // tensor its base's bytes and then each model's, in the plan's order; a converted, quantized or
    // purified one its own bytes in the base; the spans are the tensors' places in their files.
    void generatedTensorsNameTheirReads() {
        GraftOperation merge = mergeOperation(R"({"method": "task_arithmetic", "base": "base",
            "models": [{"model": "b", "parameters": {"weight": 0.5}}, {"model": "a", "parameters": {"weight": 0.5}}]})");
        merge.select.system = System::Skeleton;
        GraftPlan plan = planOf(model("base.gguf"), {{"a", model("a.gguf")}, {"b", model("b.gguf")}}, merge);
        plan.operations.push_back(purifyOperation({"blk.1.ffn_up.weight"}));
        plan.operations.push_back(quantizeOperation(QuantFileType::Q8_0));
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY2(!report.hasErrors(), qPrintable(findingsOf(report)));
        const GgufWriteSpec spec = chimeraSpec(plan, models, report.layout, ChimeraSources::Writer);
        const auto base = GgufModel::open(model("base.gguf"));
        const auto a = GgufModel::open(model("a.gguf"));
        const auto b = GgufModel::open(model("b.gguf"));
        const auto spanOf = [&](const GgufModel& m, const char* file, const std::string& name) {
            const TensorInfo* t = m.findTensor(name);
            return std::tuple{model(file), t->fileOffset, t->bytes};
        };
        int merged = 0;
        int purified = 0;
        int converted = 0;
        for (const TensorToWrite& t : spec.tensors) {
            std::vector<std::tuple<std::string, std::uint64_t, std::uint64_t>> reads;
            for (const FileSpan& span : t.source.reads) {
                reads.emplace_back(span.file->path(), span.offset, span.length);
            }
            if (!t.source.generate) {
                QVERIFY2(reads.empty(), t.name.c_str()); // copied as it is: read by the copy itself
                continue;
            }
            if (t.name.find("attn_") != std::string::npos) {
                ++merged;
                QCOMPARE(reads,
                         (decltype(reads){spanOf(*base, "base.gguf", t.name), spanOf(*b, "b.gguf", t.name),
                                          spanOf(*a, "a.gguf", t.name)}));
            } else {
                ++(t.name == "blk.1.ffn_up.weight" ? purified : converted);
                QCOMPARE(reads, (decltype(reads){spanOf(*base, "base.gguf", t.name)}));
            }
        }
        QCOMPARE(merged, 12);
        QCOMPARE(purified, 1);
        QVERIFY(converted > 0);
        // A tensor from memory names no reads: there is no file to read ahead.
        const std::vector<std::byte> bytes(64);
        TensorSource fromMemory;
        fromMemory.mapping = MappedFile::fromBuffer("buffer", bytes);
        fromMemory.bytes = fromMemory.mapping->bytes();
        QVERIFY(readsOf(fromMemory).empty());
    }

    void planJsonKeepsIt() {
        GraftOperation merge = mergeOperation(R"({"method": "breadcrumbs_ties", "base": "base",
            "models": [{"model": "a", "parameters": {"weight": [0.1, 0.9], "density": 0.8, "gamma": 0.02}}],
            "parameters": {"normalize": true}})");
        merge.select.firstLayer = 1;
        merge.select.lastLayer = 2;
        GraftPlan plan = planOf(model("base.gguf"), {{"a", model("a.gguf")}}, merge);
        const GraftPlan back = graftPlanFromJson(graftPlanToJson(plan), "x");
        QCOMPARE(back.operations.front().merge, plan.operations.front().merge);
        QCOMPARE(back.operations.front().select.firstLayer, std::optional<std::uint32_t>(1));
        QCOMPARE(graftPlanToJson(back), graftPlanToJson(plan));
    }
};

QTEST_APPLESS_MAIN(TestMergePlan)
#include "tst_merge_plan.moc"
