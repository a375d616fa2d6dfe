// The family (../shared/models/family) merged for real: family-farm and family-sea on
// family-base with each method, from F16 inputs and from Q8_0 and Q4_K_M inputs made with organ
// quantize, written, and scored on the family's farm and sea texts as organ vitals --chunk 128
// scores them. The perplexities are those of the table in docs/merging.md (measured with
// tests/tools/merge_family.py), to the 4 decimals it gives. The README's mergekit configuration
// runs unchanged and gives its row.
#include "fixtures.h"
#include "graft/assembly.h"
#include "graft/merge_plan.h"
#include "quant/quantize_model.h"
#include "shared_models.h"
#include "vitals/vitals_report.h"

#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>

using namespace organ;
using namespace organ::testing;

namespace {

struct Scores {
    double farm = 0;
    double sea = 0;
    double general = -1; // not checked when negative
};

std::string textOf(const char* name) {
    QFile file(sharedModel(QStringLiteral("family/texts/%1.txt").arg(QLatin1String(name))));
    return file.open(QIODevice::ReadOnly) ? file.readAll().toStdString() : std::string();
}

double perplexity(const std::string& model, const char* text) {
    VitalsRequest request;
    request.text = textOf(text);
    request.continuation = 0;
    request.layerImportance = false;
    request.chunk = 128;
    const auto report = takeVitals(ModelWeights::ofModel(GgufModel::open(model)), {}, request);
    return report ? report->perplexity.perplexity : -1;
}

void checkScores(const std::string& model, const Scores& want) {
    const std::vector<std::pair<const char*, double>> texts{
        {"farm", want.farm}, {"sea", want.sea}, {"general", want.general}};
    for (const auto& [text, expected] : texts) {
        if (expected < 0) {
            continue;
        }
        const double got = perplexity(model, text);
        qInfo("%s on %s: %.4f (table: %.4f)",
              QFileInfo(QString::fromStdString(model)).fileName().toUtf8().constData(), text, got, expected);
        QVERIFY2(std::abs(got - expected) <= 1.5e-4,
                 qPrintable(QStringLiteral("%1 on %2: %3, the table says %4")
                                .arg(QString::fromStdString(model), QLatin1String(text))
                                .arg(got, 0, 'f', 5)
                                .arg(expected, 0, 'f', 4)));
    }
}

} // namespace

class TestMergeFamily : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::string path(const QString& name) const { return m_dir.filePath(name).toStdString(); }
    // The family's model `name` (base, farm, sea) in `type`: the shared F16 file, or organ quantize's.
    std::string input(const char* name, const QString& type) const {
        const QString f16 =
            familyModel(QStringLiteral("family-%1-f16.gguf").arg(QLatin1String(name)).toLatin1().constData());
        return type == QStringLiteral("F16")
                   ? f16.toStdString()
                   : path(QStringLiteral("family-%1-%2.gguf").arg(QLatin1String(name), type));
    }

private slots:
    void initTestCase() {
        for (const char* m : {"base", "farm", "sea"}) {
            ORGAN_REQUIRE_SHARED(familyModel(
                QStringLiteral("family-%1-f16.gguf").arg(QLatin1String(m)).toLatin1().constData()));
        }
        for (const char* t : {"farm", "sea", "general"}) {
            ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("family/texts/%1.txt").arg(QLatin1String(t))));
        }
        for (const QString& type : {QStringLiteral("Q8_0"), QStringLiteral("Q4_K_M")}) {
            for (const char* m : {"base", "farm", "sea"}) {
                QuantizeRecipe recipe;
                recipe.fileType = *quantFileTypeFromName(type.toStdString());
                QVERIFY(quantizeModel(*GgufModel::open(input(m, QStringLiteral("F16"))), recipe, nullptr,
                                      input(m, type))
                            .written.isOk());
            }
        }
    }

    void merges_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("merge");
        QTest::addColumn<double>("farm");
        QTest::addColumn<double>("sea");
        const auto row = [](const char* name, const char* type, const char* merge, double farm, double sea) {
            QTest::newRow(name) << QString::fromLatin1(type) << QString::fromLatin1(merge) << farm << sea;
        };
        const char* equalTies = R"({"method": "ties", "base": "base", "models": [
            {"model": "farm", "parameters": {"weight": 1, "density": 0.5}},
            {"model": "sea", "parameters": {"weight": 1, "density": 0.5}}]})";
        row("F16 linear", "F16", R"({"method": "linear", "models": [
            {"model": "farm", "parameters": {"weight": 0.5}}, {"model": "sea", "parameters": {"weight": 0.5}}]})",
            1.6507, 1.3261);
        row("F16 slerp", "F16", R"({"method": "slerp", "base": "farm", "models": [{"model": "sea"}],
            "parameters": {"t": 0.5}})",
            1.6524, 1.3269);
        row("F16 task_arithmetic", "F16", R"({"method": "task_arithmetic", "base": "base", "models": [
            {"model": "farm", "parameters": {"weight": 1}}, {"model": "sea", "parameters": {"weight": 1}}]})",
            1.6457, 1.3245);
        row("F16 ties", "F16", equalTies, 1.6407, 1.3241);
        row("F16 dare_linear", "F16", R"({"method": "dare_linear", "base": "base", "models": [
            {"model": "farm", "parameters": {"weight": 1, "density": 0.5}},
            {"model": "sea", "parameters": {"weight": 1, "density": 0.5}}]})",
            1.6599, 1.3210);
        row("F16 dare_ties", "F16", R"({"method": "dare_ties", "base": "base", "models": [
            {"model": "farm", "parameters": {"weight": 1, "density": 0.5}},
            {"model": "sea", "parameters": {"weight": 1, "density": 0.5}}]})",
            1.6665, 1.3288);
        row("F16 breadcrumbs", "F16", R"({"method": "breadcrumbs", "base": "base", "models": [
            {"model": "farm", "parameters": {"weight": 1, "density": 0.9, "gamma": 0.01}},
            {"model": "sea", "parameters": {"weight": 1, "density": 0.9, "gamma": 0.01}}]})",
            1.6388, 1.3157);
        row("F16 breadcrumbs_ties 1 ½", "F16", R"({"method": "breadcrumbs_ties", "base": "base", "models": [
            {"model": "farm", "parameters": {"weight": 1, "density": 0.9, "gamma": 0.01}},
            {"model": "sea", "parameters": {"weight": 0.5, "density": 0.9, "gamma": 0.01}}]})",
            1.6143, 1.3470);
        row("F16 model_stock", "F16", R"({"method": "model_stock", "base": "base",
            "models": [{"model": "farm"}, {"model": "sea"}]})",
            1.6316, 1.3579);
        row("Q8_0 ties", "Q8_0", equalTies, 1.6391, 1.3239);
        row("Q4_K_M ties", "Q4_K_M", equalTies, 1.6482, 1.3263);
    }
    void merges() {
        QFETCH(QString, type);
        QFETCH(QString, merge);
        QFETCH(double, farm);
        QFETCH(double, sea);
        GraftPlan plan;
        plan.base = input("base", type);
        plan.donors = {{"farm", input("farm", type)}, {"sea", input("sea", type)}};
        GraftOperation o;
        o.kind = GraftOperation::Kind::Merge;
        o.merge = mergeSpecFromJson(nlohmann::json::parse(merge.toStdString()), "merge");
        plan.operations.push_back(o);
        const GraftModels models = GraftModels::open(plan);
        const std::string out =
            path(QString::fromLatin1(QTest::currentDataTag()).replace(u' ', u'-') + u".gguf");
        const GraftOutcome outcome = graftChimera(plan, models, out);
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());
        const auto written = GgufModel::open(out);
        const auto base = GgufModel::open(plan.base);
        for (const TensorInfo& t : written->tensors()) {
            QCOMPARE(t.type, base->findTensor(t.name)->type); // the base's types
        }
        checkScores(out, {farm, sea});
    }

    // The configuration in README.md's merging section, as it stands, beside the family's files.
    void readmeConfiguration() {
        QFile readme(QStringLiteral(ORGAN_SOURCE_DIR "/README.md"));
        QVERIFY(readme.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(readme.readAll());
        const qsizetype section = text.indexOf(QStringLiteral("### Merges: `organ merge`"));
        QVERIFY(section >= 0);
        const QRegularExpression block(QStringLiteral("```yaml\\n(.*?)```"),
                                       QRegularExpression::DotMatchesEverythingOption);
        const QRegularExpressionMatch match = block.match(text, section);
        QVERIFY(match.hasMatch());
        const QString folder = m_dir.filePath(QStringLiteral("readme"));
        QVERIFY(QDir().mkpath(folder));
        for (const char* m : {"base", "farm", "sea"}) {
            const QString name = QStringLiteral("family-%1-f16.gguf").arg(QLatin1String(m));
            QVERIFY(
                QFile::link(QString::fromStdString(input(m, QStringLiteral("F16"))), folder + u'/' + name));
        }
        const QString config = folder + QStringLiteral("/farm-sea.yaml");
        QVERIFY(writeAll(config, match.captured(1).toUtf8()));
        const MergeConfig parsed = readMergeConfig(config.toStdString());
        const std::string out = QString(folder + QStringLiteral("/farm-sea.gguf")).toStdString();
        const GraftPlan plan = mergePlanOf(parsed, out);
        const GraftModels models = GraftModels::open(plan);
        QVERIFY(!mergeConfigProblem(parsed, models));
        const GraftOutcome outcome = graftChimera(plan, models, out);
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());
        // The farm fine-tune's gain on farm kept, and most of the sea's on sea: better than the base on both.
        checkScores(out, {1.6180, 1.3468, 1.5794});
    }
};

QTEST_APPLESS_MAIN(TestMergeFamily)
#include "tst_merge_family.moc"
