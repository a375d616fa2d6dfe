// The organ command line, run as a user runs it: exit codes, text, JSON parsed back.
#include "cli_run.h"
#include "fixtures.h"
#include "gguf/gguf_model.h"
#include "quant/imatrix_file.h"
#include "shared_models.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

using namespace organ;
using namespace organ::testing;

namespace {

using Run = CliRun;

Run runOrgan(const QStringList& args) {
    return runOrganCli(args);
}

} // namespace

class TestCli : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

private slots:
    void initTestCase() {
        QVERIFY2(!qgetenv("ORGAN_CLI").isEmpty(), "ORGAN_CLI is not set");
        // Never the user's own cache: the child processes inherit this.
        qputenv("ORGAN_CACHE_DIR", m_dir.filePath(QStringLiteral("cache")).toLocal8Bit());
    }

    void usage() {
        QCOMPARE(runOrgan({}).exitCode, 2);
        QCOMPARE(runOrgan({QStringLiteral("frobnicate")}).exitCode, 2);
        QCOMPARE(runOrgan({QStringLiteral("inspect")}).exitCode, 2);
        const Run unknown =
            runOrgan({QStringLiteral("inspect"), QStringLiteral("--bogus"), QStringLiteral("x.gguf")});
        QCOMPARE(unknown.exitCode, 2);
        QVERIFY(unknown.err.contains(QStringLiteral("unknown option --bogus")));
        // An option of one value given twice is refused, never the last one silently winning.
        const QString specimen = m_dir.filePath(QStringLiteral("twice.gguf"));
        QCOMPARE(runOrgan({QStringLiteral("specimen"), specimen}).exitCode, 0);
        const QString out = m_dir.filePath(QStringLiteral("twice-out.gguf"));
        const Run twice =
            runOrgan({QStringLiteral("quantize"), specimen, QStringLiteral("--type"), QStringLiteral("Q8_0"),
                      QStringLiteral("--type=Q4_0"), QStringLiteral("-o"), out});
        QCOMPARE(twice.exitCode, 2);
        QVERIFY2(twice.err.contains(QStringLiteral("--type is given twice ('Q8_0', then 'Q4_0')")),
                 qPrintable(twice.err));
        const Run aliases =
            runOrgan({QStringLiteral("quantize"), specimen, QStringLiteral("--type"), QStringLiteral("Q8_0"),
                      QStringLiteral("-o"), out, QStringLiteral("--output"),
                      m_dir.filePath(QStringLiteral("other.gguf"))});
        QCOMPARE(aliases.exitCode, 2);
        QVERIFY2(aliases.err.contains(QStringLiteral("-o and --output are given twice")),
                 qPrintable(aliases.err));
        QVERIFY(!QFileInfo::exists(out));
        const Run once = runOrgan({QStringLiteral("quantize"), specimen, QStringLiteral("--type"),
                                   QStringLiteral("F16"), QStringLiteral("-o"), out});
        QVERIFY2(once.exitCode == 0, qPrintable(once.err));

        const Run help = runOrgan({QStringLiteral("help")});
        QCOMPARE(help.exitCode, 0);
        QVERIFY(help.out.contains(QStringLiteral("organ inspect FILE...")));
    }

    void inspectSummary() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const Run run = runOrgan({QStringLiteral("inspect"), path});
        QCOMPARE(run.exitCode, 0);
        for (const char* expected :
             {"architecture   llama", "parameters     292.80 K (292 800)", "layers         5",
              "tensors        48, metadata keys 19", "quantization   F32 100.0%", "bits/weight    32.00",
              "organ           15"}) {
            QVERIFY2(run.out.contains(QString::fromUtf8(expected)), expected);
        }
    }

    void inspectTensorsAndMetadata() {
        const QString path = sharedModel(QStringLiteral("stories260K-q8_0.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const Run run = runOrgan(
            {QStringLiteral("inspect"), QStringLiteral("--tensors"), QStringLiteral("--metadata"), path});
        QCOMPARE(run.exitCode, 0);
        QVERIFY(run.out.contains(QRegularExpression(
            QStringLiteral("blk\\.4\\.ffn_down\\.weight +organ +ffn_down +4  F16 +172 × 64"))));
        QVERIFY(run.out.contains(QRegularExpression(
            QStringLiteral("tokenizer\\.ggml\\.tokens +array +\\[512 × string\\] <unk>, <s>"))));
        QCOMPARE(run.out.count(QStringLiteral(".weight ")), 48);
    }

    void inspectJson() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const Run run = runOrgan({QStringLiteral("inspect"), QStringLiteral("--json"), path});
        QCOMPARE(run.exitCode, 0);
        QJsonParseError error;
        const QJsonObject doc = QJsonDocument::fromJson(run.out.toUtf8(), &error).object();
        QCOMPARE(error.error, QJsonParseError::NoError);
        QCOMPARE(doc[QStringLiteral("format")].toString(), QStringLiteral("organ-inspect"));
        QCOMPARE(doc[QStringLiteral("architecture")].toString(), QStringLiteral("llama"));
        QCOMPARE(doc[QStringLiteral("parameters")].toInteger(), 292800);
        QCOMPARE(doc[QStringLiteral("tensors")].toArray().size(), 48);
        QCOMPARE(doc[QStringLiteral("per_layer")].toArray().size(), 5);
        QCOMPARE(doc[QStringLiteral("systems")]
                     .toObject()[QStringLiteral("organ")]
                     .toObject()[QStringLiteral("tensors")]
                     .toInt(),
                 15);
        const QJsonObject first = doc[QStringLiteral("tensors")].toArray().first().toObject();
        QCOMPARE(first[QStringLiteral("name")].toString(), QStringLiteral("token_embd.weight"));
        QCOMPARE(first[QStringLiteral("offset")].toInteger(), 14176);
        QCOMPARE(first[QStringLiteral("shape")].toArray(), (QJsonArray{64, 512}));
        bool sawTokens = false;
        for (const auto& entry : doc[QStringLiteral("metadata")].toArray()) {
            const QJsonObject kv = entry.toObject();
            if (kv[QStringLiteral("key")].toString() == QStringLiteral("tokenizer.ggml.tokens")) {
                const QJsonObject value = kv[QStringLiteral("value")].toObject();
                QCOMPARE(value[QStringLiteral("length")].toInt(), 512);
                QCOMPARE(value[QStringLiteral("items")].toArray().size(), 512); // everything by default
                sawTokens = true;
            }
        }
        QVERIFY(sawTokens);
        const Run capped = runOrgan({QStringLiteral("inspect"), QStringLiteral("--json"),
                                     QStringLiteral("--max-array=2"), path, path});
        const QJsonArray both = QJsonDocument::fromJson(capped.out.toUtf8()).array();
        QCOMPARE(both.size(), 2);
    }

    void invalidFileExitsOne() {
        const QString bad = m_dir.filePath(QStringLiteral("bad.gguf"));
        QVERIFY(writeAll(bad, QByteArray("GGUF\x03\0\0\0", 8)));
        const Run run = runOrgan({QStringLiteral("inspect"), bad});
        QCOMPARE(run.exitCode, 1);
        QVERIFY2(run.err.startsWith(QStringLiteral("organ inspect: bad.gguf: tensor count at byte 8")),
                 qPrintable(run.err));
        QVERIFY(run.out.isEmpty());
        const Run missing =
            runOrgan({QStringLiteral("inspect"), m_dir.filePath(QStringLiteral("nope.gguf"))});
        QCOMPARE(missing.exitCode, 1);
        QVERIFY(missing.err.contains(QStringLiteral("nope.gguf: cannot open")));
    }

    // Several files: one that cannot be read is said and makes the exit 1, the others are still read
    // in order; with --json their documents form one array.
    void severalFiles() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const QString missing = m_dir.filePath(QStringLiteral("nope.gguf"));
        const Run text = runOrgan({QStringLiteral("inspect"), missing, path});
        QCOMPARE(text.exitCode, 1);
        QVERIFY2(text.err.startsWith(QStringLiteral("organ inspect: ")), qPrintable(text.err));
        QVERIFY(text.err.contains(QStringLiteral("nope.gguf: cannot open")));
        QVERIFY(text.out.startsWith(QStringLiteral("llama  (stories260K-f32.gguf)")));
        const Run json =
            runOrgan({QStringLiteral("validate"), QStringLiteral("--json"), path, missing, path});
        QCOMPARE(json.exitCode, 1);
        QVERIFY2(json.err.startsWith(QStringLiteral("organ validate: ")), qPrintable(json.err));
        QJsonParseError error;
        const QJsonDocument documents = QJsonDocument::fromJson(json.out.toUtf8(), &error);
        QCOMPARE(error.error, QJsonParseError::NoError);
        QCOMPARE(documents.array().size(), 2);
        const Run valid = runOrgan({QStringLiteral("validate"), path, path});
        QCOMPARE(valid.exitCode, 0);
        QCOMPARE(valid.out.count(QStringLiteral("0 error(s), 0 warning(s)")), 2);
    }

    void measureReports() {
        const QString healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        const QString damaged = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        ORGAN_REQUIRE_SHARED(healthy);
        ORGAN_REQUIRE_SHARED(damaged);
        const QString json = m_dir.filePath(QStringLiteral("m.json"));
        const QString csv = m_dir.filePath(QStringLiteral("m.csv"));
        const QString markdown = m_dir.filePath(QStringLiteral("m.md"));
        const Run run = runOrgan({QStringLiteral("measure"), damaged, healthy, QStringLiteral("--json"), json,
                                  QStringLiteral("--csv"), csv, QStringLiteral("--markdown"), markdown,
                                  QStringLiteral("--no-cache")});
        QCOMPARE(run.exitCode, 0);
        QVERIFY(run.out.contains(QRegularExpression(
            QStringLiteral("blk\\.1\\.ffn_up\\.weight +organ +ffn_up +1  F32 +\\d+\\.\\d\\d"))));
        QVERIFY(run.out.contains(QStringLiteral("Z-ranking")));
        QVERIFY(run.out.contains(QRegularExpression(QStringLiteral("  1  llama +36\\.6\\d°"))));
        QVERIFY(run.err.contains(QStringLiteral("measuring 100%")));

        const QJsonObject doc = QJsonDocument::fromJson(readAll(json)).object();
        QCOMPARE(doc[QStringLiteral("z_measure")].toString(), QStringLiteral("v1"));
        QCOMPARE(doc[QStringLiteral("parameters")].toObject()[QStringLiteral("sample")].toInt(), 100000);
        const QJsonArray models = doc[QStringLiteral("models")].toArray();
        QCOMPARE(models.size(), 2);
        const QJsonArray tensors = models[0].toObject()[QStringLiteral("tensors")].toArray();
        QCOMPARE(tensors.size(), 48);
        for (const auto& t : tensors) {
            QVERIFY(t.toObject()[QStringLiteral("theta")].isDouble());
        }
        const QJsonArray ranking = doc[QStringLiteral("ranking")].toArray();
        QCOMPARE(ranking[0].toObject()[QStringLiteral("name")].toString(), QStringLiteral("llama"));
        QCOMPARE(ranking[1].toObject()[QStringLiteral("name")].toString(),
                 QStringLiteral("stories260K-damaged"));

        const QStringList lines = QString::fromUtf8(readAll(csv)).split(u'\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 1 + 96);
        QVERIFY(lines[0].startsWith(QStringLiteral("model,tensor,system,role,layer,dtype,n,N,H,K,C")));
        QCOMPARE(lines[1].count(u','), lines[0].count(u','));
        QVERIFY(lines[1].endsWith(QStringLiteral(",v1,100000")));
        QVERIFY(run.out.contains(QStringLiteral(
            "Z-measure v1 · 100 000 values per tensor · θ mean 34.78° over 48 of 48 tensors")));

        const QString report = QString::fromUtf8(readAll(markdown));
        QVERIFY(report.startsWith(QStringLiteral("# Z-measure report")));
        QVERIFY(report.contains(QStringLiteral("| 1 | llama | 36.")));
        QVERIFY(report.contains(QStringLiteral("| 2 | stories260K-damaged | 34.")));
        QVERIFY(report.contains(QStringLiteral("### Lowest θ")));
    }

    void measureCache() {
        const QString path = sharedModel(QStringLiteral("stories260K-q8_0.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const Run first = runOrgan({QStringLiteral("measure"), path});
        QCOMPARE(first.exitCode, 0);
        QVERIFY(!first.out.contains(QStringLiteral("from cache")));
        const Run second = runOrgan({QStringLiteral("measure"), path});
        QCOMPARE(second.exitCode, 0);
        QVERIFY(second.out.contains(QStringLiteral("[from cache; --no-cache measures afresh]")));
        QVERIFY(second.err.isEmpty()); // nothing measured: no progress
        QCOMPARE(second.out.section(QStringLiteral("\n"), 1), first.out.section(QStringLiteral("\n"), 1));
        const Run fresh = runOrgan({QStringLiteral("measure"), QStringLiteral("--no-cache"), path});
        QVERIFY(!fresh.out.contains(QStringLiteral("from cache")));
        const Run other =
            runOrgan({QStringLiteral("measure"), QStringLiteral("--sample"), QStringLiteral("all"), path});
        QVERIFY(!other.out.contains(QStringLiteral("from cache")));
    }

    void measureErrors() {
        QCOMPARE(runOrgan({QStringLiteral("measure")}).exitCode, 2);
        QCOMPARE(runOrgan({QStringLiteral("measure"), QStringLiteral("--sample"), QStringLiteral("lots"),
                           QStringLiteral("x.gguf")})
                     .exitCode,
                 2);
        QCOMPARE(runOrgan({QStringLiteral("measure"), QStringLiteral("--sample"), QStringLiteral("0"),
                           QStringLiteral("x.gguf")})
                     .exitCode,
                 2);
        const Run missing =
            runOrgan({QStringLiteral("measure"), m_dir.filePath(QStringLiteral("none.gguf"))});
        QCOMPARE(missing.exitCode, 1);
        QVERIFY(missing.err.contains(QStringLiteral("none.gguf: cannot open")));
    }

    void graftHealsDamagedModel() {
        const QString damaged = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        const QString healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(damaged);
        ORGAN_REQUIRE_SHARED(healthy);
        const QString out = m_dir.filePath(QStringLiteral("healed.gguf"));
        const QString plan = m_dir.filePath(QStringLiteral("healing.json"));
        const Run run = runOrgan({QStringLiteral("graft"), QStringLiteral("--base"), damaged,
                                  QStringLiteral("--donor"), healthy, QStringLiteral("--layers"),
                                  QStringLiteral("1-3"), QStringLiteral("--system"), QStringLiteral("organ"),
                                  QStringLiteral("-o"), out, QStringLiteral("--save-plan"), plan});
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(run.out.contains(QStringLiteral("48 tensors, 9 from donors")), qPrintable(run.out));
        QVERIFY(run.out.contains(QStringLiteral("validation of healed.gguf: 0 error(s), 0 warning(s)")));
        QVERIFY(run.err.contains(QStringLiteral("100%")));
        // The healed organs measure like the healthy ones.
        const Run measured =
            runOrgan({QStringLiteral("measure"), QStringLiteral("--no-cache"), out, healthy});
        QVERIFY(measured.out.contains(QRegularExpression(QStringLiteral("  1  \\S+ +36\\.65°"))));
        QVERIFY(measured.out.contains(QRegularExpression(QStringLiteral("  2  \\S+ +36\\.65°"))));
        // The saved plan checks and runs the same from the command line.
        const Run check = runOrgan({QStringLiteral("plan"), QStringLiteral("check"), plan});
        QCOMPARE(check.exitCode, 0);
        QVERIFY(check.out.contains(QStringLiteral("0 error(s), 0 warning(s)")));
        const QString again = m_dir.filePath(QStringLiteral("again.gguf"));
        QCOMPARE(runOrgan({QStringLiteral("assemble"), QStringLiteral("--plan"), plan, QStringLiteral("-o"),
                           again})
                     .exitCode,
                 0);
        QCOMPARE(readAll(again), readAll(out));
        QCOMPARE(runOrgan({QStringLiteral("validate"), out}).exitCode, 0);
    }

    void graftRefusals() {
        const QString healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        const QString other = sharedModel(QStringLiteral("llama-2-tiny-random-f16.gguf"));
        ORGAN_REQUIRE_SHARED(healthy);
        ORGAN_REQUIRE_SHARED(other);
        const QString out = m_dir.filePath(QStringLiteral("refused.gguf"));
        const Run shape =
            runOrgan({QStringLiteral("graft"), QStringLiteral("--base"), healthy, QStringLiteral("--donor"),
                      other, QStringLiteral("--map"), QStringLiteral("0:2"), QStringLiteral("--system"),
                      QStringLiteral("organ"), QStringLiteral("-o"), out});
        QCOMPARE(shape.exitCode, 1);
        QVERIFY(shape.out.contains(QStringLiteral(
            "error: [operation 1 map_layer] blk.2.ffn_up.weight: shape 8 × 32 (donor) ≠ 64 × 172 (base)")));
        QVERIFY(shape.err.contains(QStringLiteral("refused.gguf not written")));
        QVERIFY(!QFileInfo::exists(out));
        const Run self = runOrgan({QStringLiteral("graft"), QStringLiteral("--base"), healthy,
                                   QStringLiteral("--donor"), healthy, QStringLiteral("--layers"),
                                   QStringLiteral("1"), QStringLiteral("-o"), healthy});
        QCOMPARE(self.exitCode, 1);
        QVERIFY2(self.err.contains(QStringLiteral("refusing to write over a file that is also an input")),
                 qPrintable(self.err));
        QCOMPARE(runOrgan({QStringLiteral("graft"), QStringLiteral("--base"), healthy,
                           QStringLiteral("--donor"), healthy, QStringLiteral("-o"), out})
                     .exitCode,
                 2); // nothing selected
        QCOMPARE(
            runOrgan({QStringLiteral("graft"), QStringLiteral("--base"), healthy, QStringLiteral("--donor"),
                      healthy, QStringLiteral("--map"), QStringLiteral("x"), QStringLiteral("-o"), out})
                .exitCode,
            2);
        QCOMPARE(runOrgan({QStringLiteral("assemble")}).exitCode, 2);
        QCOMPARE(runOrgan({QStringLiteral("plan"), QStringLiteral("draw")}).exitCode, 2);
        const QString badPlan = m_dir.filePath(QStringLiteral("bad-plan.json"));
        QVERIFY(writeAll(badPlan,
                         QByteArray(R"({"format": "organ-graft-plan", "version": 1, "operations": []})")));
        const Run bad = runOrgan({QStringLiteral("plan"), QStringLiteral("check"), badPlan});
        QCOMPARE(bad.exitCode, 1);
        QVERIFY(bad.err.contains(QStringLiteral("bad-plan.json: plan: lacks \"base\"")));

        // A plan whose output is the plan itself: the check says what assemble would refuse.
        const QString selfPlan = m_dir.filePath(QStringLiteral("self-plan.json"));
        QVERIFY(writeAll(
            selfPlan,
            R"({"format": "organ-graft-plan", "version": 1, "base": ")" + healthy.toUtf8() +
                R"(", "output": "self-plan.json", "operations": [{"op": "remove_layer", "layer": 0}]})"));
        const QByteArray selfBytes = readAll(selfPlan);
        const Run selfCheck = runOrgan({QStringLiteral("plan"), QStringLiteral("check"), selfPlan});
        QCOMPARE(selfCheck.exitCode, 1);
        QVERIFY2(selfCheck.out.contains(
                     QStringLiteral("self-plan.json: refusing to write over a file that is also an input")),
                 qPrintable(selfCheck.out));
        QCOMPARE(runOrgan({QStringLiteral("assemble"), QStringLiteral("--plan"), selfPlan}).exitCode, 1);
        QCOMPARE(readAll(selfPlan), selfBytes);
    }

    // A plan whose chimera llama.cpp would refuse writes nothing; --keep-invalid writes it,
    // says it is invalid and still exits 1. Per-layer arrays follow a layer removal.
    void invalidChimerasAndKeepInvalid() {
        const QString base = m_dir.filePath(QStringLiteral("per-layer.gguf"));
        QVERIFY(writeFixture(base, perLayerLlama(1)));
        const QString out = m_dir.filePath(QStringLiteral("pruned.gguf"));
        const QString plan = m_dir.filePath(QStringLiteral("prune.json"));
        auto writePlan = [&](const QByteArray& extra) {
            return writeAll(plan, R"({"format": "organ-graft-plan", "version": 1, "base": ")" +
                                      base.toUtf8() + R"(", "output": ")" + out.toUtf8() +
                                      R"(", "operations": [{"op": "remove_layer", "layer": 0})" + extra +
                                      "]}");
        };
        QVERIFY(writePlan(QByteArray()));
        const Run pruned = runOrgan({QStringLiteral("assemble"), QStringLiteral("--plan"), plan});
        QCOMPARE(pruned.exitCode, 0);
        QVERIFY2(
            pruned.out.contains(QStringLiteral("info: llama.feed_forward_length: array of 5 → 4 entries")),
            qPrintable(pruned.out));
        QVERIFY(pruned.out.contains(QStringLiteral("validation of pruned.gguf: 0 error(s)")));
        const Run shown = runOrgan({QStringLiteral("inspect"), QStringLiteral("--metadata"), out});
        QVERIFY2(shown.out.contains(
                     QRegularExpression(QStringLiteral("llama.feed_forward_length +array +\\[4 × u32\\]"))),
                 qPrintable(shown.out));
        QVERIFY(QFile::remove(out));

        QVERIFY(
            writePlan(R"(, {"op": "set_metadata", "key": "llama.block_count", "type": "u64", "value": 4})"));
        const Run refused = runOrgan({QStringLiteral("assemble"), QStringLiteral("--plan"), plan});
        QCOMPARE(refused.exitCode, 1);
        QVERIFY2(refused.out.contains(
                     QStringLiteral("error: the chimera would not load: the key llama.block_count is u64")),
                 qPrintable(refused.out));
        QVERIFY(refused.err.contains(QStringLiteral("pruned.gguf not written")));
        QVERIFY(!QFileInfo::exists(out));
        const Run kept = runOrgan(
            {QStringLiteral("assemble"), QStringLiteral("--plan"), plan, QStringLiteral("--keep-invalid")});
        QCOMPARE(kept.exitCode, 1);
        QVERIFY2(kept.err.contains(
                     QStringLiteral("pruned.gguf is invalid (llama.cpp will not load it) and was kept "
                                    "because of --keep-invalid")),
                 qPrintable(kept.err));
        QVERIFY(QFileInfo::exists(out));
        QCOMPARE(runOrgan({QStringLiteral("validate"), out}).exitCode, 1);
    }

    void validateReportsErrors() {
        const QString broken = m_dir.filePath(QStringLiteral("broken.gguf"));
        GgufWriteSpec spec;
        spec.set("general.architecture", MetaValue::fromString("llama"));
        spec.set("llama.block_count", MetaValue::fromU32(2));
        spec.tensors.push_back(patternTensor("blk.0.attn_norm.weight", TensorType::F32, {8}, 1));
        QVERIFY(writeFixture(broken, spec));
        const Run run = runOrgan({QStringLiteral("validate"), broken});
        QCOMPARE(run.exitCode, 1);
        QVERIFY(run.out.contains(QStringLiteral("error: block 1 has no tensors")));
        QVERIFY(run.out.contains(QStringLiteral("error: the model lacks token_embd.weight")));
    }

    // organ vitals: a model against its parent, a planned chimera (nothing written), the
    // refusals.
    void vitals() {
        const QString healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        const QString damaged = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        ORGAN_REQUIRE_SHARED(healthy);
        ORGAN_REQUIRE_SHARED(damaged);
        const QString json = m_dir.filePath(QStringLiteral("vitals.json"));
        const Run run =
            runOrgan({QStringLiteral("vitals"), damaged, QStringLiteral("--parent"), healthy,
                      QStringLiteral("--tokens"), QStringLiteral("8"), QStringLiteral("--json"), json});
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(run.out.contains(QStringLiteral("stories260K-f32.gguf")), qPrintable(run.out));
        QVERIFY(run.out.contains(QStringLiteral("least needed:")));
        QFile file(json);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonObject doc = QJsonDocument::fromJson(file.readAll()).object();
        QCOMPARE(doc[QStringLiteral("format")].toString(), QStringLiteral("organ-vitals"));
        QCOMPARE(doc[QStringLiteral("layers")].toArray().size(), 5);
        QVERIFY(doc[QStringLiteral("perplexity")].toDouble() > 1000); // the damaged model
        const QJsonObject parent = doc[QStringLiteral("parents")].toArray().at(0).toObject();
        QVERIFY(parent[QStringLiteral("kl_mean")].toDouble() > 1);
        QVERIFY(parent[QStringLiteral("perplexity")].toDouble() < 10);

        // The healing plan, planned only: it speaks like the healthy model, and writes nothing.
        const QString planPath = m_dir.filePath(QStringLiteral("heal.json"));
        QVERIFY(
            writeAll(planPath, QStringLiteral(R"({"format": "organ-graft-plan", "version": 1, "base": "%1",
                             "donors": {"healthy": "%2"}, "output": "%3",
                             "operations": [{"op": "replace", "donor": "healthy", "system": "organ", "layers": "1-3"}]})")
                                   .arg(damaged, healthy, m_dir.filePath(QStringLiteral("never.gguf")))
                                   .toUtf8()));
        const Run planned = runOrgan({QStringLiteral("vitals"), QStringLiteral("--plan"), planPath});
        QCOMPARE(planned.exitCode, 0);
        QVERIFY2(planned.out.contains(QStringLiteral("never.gguf (planned)")), qPrintable(planned.out));
        QVERIFY(planned.out.contains(QStringLiteral("there was a little girl")));
        QVERIFY(QRegularExpression(QStringLiteral("stories260K-f32.gguf +[0-9.]+ +0.0000 +0.0000 +100.0 %"))
                    .match(planned.out)
                    .hasMatch());
        QVERIFY(!QFileInfo::exists(m_dir.filePath(QStringLiteral("never.gguf"))));

        const QString mamba = sharedModel(QStringLiteral("zoo/tiny-mamba-f32.gguf"));
        ORGAN_REQUIRE_SHARED(mamba);
        const Run refused = runOrgan({QStringLiteral("vitals"), mamba});
        QCOMPARE(refused.exitCode, 1);
        QVERIFY2(refused.err.contains(QStringLiteral("not available for architecture 'mamba'")),
                 qPrintable(refused.err));
        QCOMPARE(runOrgan({QStringLiteral("vitals")}).exitCode, 2);
        QCOMPARE(
            runOrgan({QStringLiteral("vitals"), healthy, QStringLiteral("--tokens"), QStringLiteral("99999")})
                .exitCode,
            2);
        // A model whose context is shorter than the built-in text (the specimen's 256 tokens):
        // the text is cut to fit and the report says so; a --text that long is refused.
        const QString specimen = m_dir.filePath(QStringLiteral("short-context.gguf"));
        QCOMPARE(runOrgan({QStringLiteral("specimen"), specimen}).exitCode, 0);
        const Run clipped = runOrgan({QStringLiteral("vitals"), specimen, QStringLiteral("--tokens"),
                                      QStringLiteral("4"), QStringLiteral("--json"), json});
        QCOMPARE(clipped.exitCode, 0);
        QVERIFY2(clipped.out.contains(QStringLiteral("256 tokens: the first of the built-in text's")),
                 qPrintable(clipped.out));
        QFile clippedJson(json);
        QVERIFY(clippedJson.open(QIODevice::ReadOnly));
        const QJsonObject clippedDoc = QJsonDocument::fromJson(clippedJson.readAll()).object();
        QCOMPARE(clippedDoc[QStringLiteral("tokens")].toInt(), 256);
        QVERIFY(clippedDoc[QStringLiteral("clipped_from")].toInt() > 256);
        const QString longText = m_dir.filePath(QStringLiteral("long.txt"));
        QVERIFY(writeAll(longText, QByteArray("Tom had a small red boat. ").repeated(100)));
        const Run tooLong =
            runOrgan({QStringLiteral("vitals"), specimen, QStringLiteral("--text"), longText});
        QCOMPARE(tooLong.exitCode, 1);
        QVERIFY2(tooLong.err.contains(QStringLiteral("vital signs take at most 256: shorten it")),
                 qPrintable(tooLong.err));
        const Run overInput =
            runOrgan({QStringLiteral("vitals"), healthy, QStringLiteral("--json"), healthy});
        QCOMPARE(overInput.exitCode, 1);
        QVERIFY(readAll(healthy).startsWith("GGUF"));
    }

    // organ imatrix: the matrix written in the format llama-quantize reads, the run as JSON; the
    // refusals; SIGTERM (as Ctrl-C) mid-run cancels with nothing written.
    void imatrix() {
        const QString base = sharedModel(QStringLiteral("family/family-base-f16.gguf"));
        const QString text = sharedModel(QStringLiteral("family/texts/sea.txt"));
        ORGAN_REQUIRE_SHARED(base);
        const QString out = m_dir.filePath(QStringLiteral("sea-imatrix.gguf"));
        const QString json = m_dir.filePath(QStringLiteral("imatrix.json"));
        const Run run = runOrgan({QStringLiteral("imatrix"), base, QStringLiteral("--text"), text,
                                  QStringLiteral("--chunk"), QStringLiteral("64"), QStringLiteral("-o"), out,
                                  QStringLiteral("--json"), json});
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(
            run.out.contains(QStringLiteral("importance matrix of 42 weights from 34 chunks of 64 tokens")),
            qPrintable(run.out));
        const ImatrixData written = readImatrix(out.toStdString());
        QCOMPARE(written.chunkSize, 64u);
        QCOMPARE(written.chunkCount, 34u);
        QCOMPARE(written.datasets, std::vector<std::string>{text.toStdString()});
        QCOMPARE(written.entries.at("blk.3.ffn_down.weight").counts, std::vector<float>{34.0f * 64});
        QFile file(json);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonObject doc = QJsonDocument::fromJson(file.readAll()).object();
        QCOMPARE(doc[QStringLiteral("chunks")].toInt(), 34);
        QCOMPARE(doc[QStringLiteral("weights")].toInt(), 42);
        QVERIFY(doc[QStringLiteral("written")].toBool());
        QVERIFY(doc[QStringLiteral("perplexity")].toDouble() > 1);

        QCOMPARE(runOrgan({QStringLiteral("imatrix"), base, QStringLiteral("-o"), out}).exitCode, 2);
        QCOMPARE(runOrgan({QStringLiteral("imatrix"), base, QStringLiteral("--text"), text,
                           QStringLiteral("--chunk"), QStringLiteral("8"), QStringLiteral("-o"), out})
                     .exitCode,
                 2);
        const Run overInput = runOrgan(
            {QStringLiteral("imatrix"), base, QStringLiteral("--text"), text, QStringLiteral("-o"), text});
        QCOMPARE(overInput.exitCode, 1);
        QVERIFY(readAll(text).startsWith("Mia went"));
        const Run tooShort = runOrgan({QStringLiteral("imatrix"), base, QStringLiteral("--text"), text,
                                       QStringLiteral("--chunk"), QStringLiteral("2048"),
                                       QStringLiteral("-o"), m_dir.filePath(QStringLiteral("short.gguf"))});
        QCOMPARE(tooShort.exitCode, 1);
        QVERIFY2(tooShort.err.contains(QStringLiteral("chunks of 2048 need at least 4096")),
                 qPrintable(tooShort.err));
        QVERIFY(!QFileInfo::exists(m_dir.filePath(QStringLiteral("short.gguf"))));

        // Cancelled once it reports its first chunks: nothing at the target, no partial file.
        const QString cancelled = m_dir.filePath(QStringLiteral("cancelled/imatrix.gguf"));
        QVERIFY(QDir().mkpath(QFileInfo(cancelled).path()));
        QProcess process;
        const QByteArray err = interruptOrganCliWhen(
            process,
            {QStringLiteral("imatrix"), base, QStringLiteral("--text"), text, QStringLiteral("--chunk"),
             QStringLiteral("16"), QStringLiteral("-o"), cancelled},
            "running chunks");
        QCOMPARE(process.state(), QProcess::NotRunning);
        QCOMPARE(process.exitStatus(), QProcess::NormalExit);
        QCOMPARE(process.exitCode(), 1);
        QVERIFY2(err.contains("cancelled; nothing written"), err.constData());
        QVERIFY(QDir(QFileInfo(cancelled).path()).isEmpty());
        // The same when its terminal goes away (SIGHUP: a closed window, a dropped ssh session).
        QProcess hungUp;
        const QByteArray hungUpErr = interruptOrganCliWhen(
            hungUp,
            {QStringLiteral("imatrix"), base, QStringLiteral("--text"), text, QStringLiteral("--chunk"),
             QStringLiteral("16"), QStringLiteral("-o"), cancelled},
            "running chunks", SIGHUP);
        QCOMPARE(hungUp.exitStatus(), QProcess::NormalExit);
        QCOMPARE(hungUp.exitCode(), 1);
        QVERIFY2(hungUpErr.contains("cancelled; nothing written"), hungUpErr.constData());
        QVERIFY(QDir(QFileInfo(cancelled).path()).isEmpty());
    }

    // organ extract / organ assemble --organs: byte for byte back, a changed organ refused.
    void organDirectories() {
        const QString healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(healthy);
        const QString directory = m_dir.filePath(QStringLiteral("stories-organs"));
        const Run extracted = runOrgan({QStringLiteral("extract"), healthy, QStringLiteral("-o"), directory});
        QCOMPARE(extracted.exitCode, 0);
        QVERIFY2(extracted.out.contains(QStringLiteral("48 tensors")), qPrintable(extracted.out));
        QVERIFY(QFileInfo::exists(directory + QStringLiteral("/organs/blk_1_ffn_gate.bin")));
        const QString back = m_dir.filePath(QStringLiteral("stories-back.gguf"));
        const Run assembled = runOrgan(
            {QStringLiteral("assemble"), QStringLiteral("--organs"), directory, QStringLiteral("-o"), back});
        QCOMPARE(assembled.exitCode, 0);
        QVERIFY(readAll(back) == readAll(healthy));
        // Again into the same directory: refused, the directory untouched.
        QCOMPARE(runOrgan({QStringLiteral("extract"), healthy, QStringLiteral("-o"), directory}).exitCode, 1);
        QByteArray organ = readAll(directory + QStringLiteral("/organs/blk_1_ffn_gate.bin"));
        organ[organ.size() - 1] = char(organ[organ.size() - 1] ^ 1);
        QVERIFY(writeAll(directory + QStringLiteral("/organs/blk_1_ffn_gate.bin"), organ));
        const QString refusedOut = m_dir.filePath(QStringLiteral("never-organs.gguf"));
        const Run refused = runOrgan({QStringLiteral("assemble"), QStringLiteral("--organs"), directory,
                                      QStringLiteral("-o"), refusedOut});
        QCOMPARE(refused.exitCode, 1);
        QVERIFY2(refused.err.contains(QStringLiteral("organs/blk_1_ffn_gate.bin: its data does not match")),
                 qPrintable(refused.err));
        QVERIFY(!QFileInfo::exists(refusedOut));
        QCOMPARE(runOrgan({QStringLiteral("extract"), healthy}).exitCode, 2);
        QCOMPARE(runOrgan({QStringLiteral("assemble"), QStringLiteral("--organs"), directory}).exitCode, 2);
    }

    // Directories wherever a model goes: inspect, measure, graft (with --purify) from directories
    // into a directory, purify of a directory into a directory; each assembles to a GGUF.
    void organDirectoriesAsModels() {
        const QString healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        const QString damaged = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        ORGAN_REQUIRE_SHARED(damaged);
        const QString a = m_dir.filePath(QStringLiteral("dm-damaged"));
        const QString b = m_dir.filePath(QStringLiteral("dm-healthy"));
        QCOMPARE(runOrgan({QStringLiteral("extract"), damaged, QStringLiteral("-o"), a}).exitCode, 0);
        QCOMPARE(runOrgan({QStringLiteral("extract"), healthy, QStringLiteral("-o"), b}).exitCode, 0);
        const Run inspect = runOrgan({QStringLiteral("inspect"), a});
        QCOMPARE(inspect.exitCode, 0);
        QVERIFY2(inspect.out.contains(QStringLiteral("tensors        48")), qPrintable(inspect.out));
        QCOMPARE(runOrgan({QStringLiteral("measure"), b}).exitCode, 0);
        const QString chimera = m_dir.filePath(QStringLiteral("dm-chimera"));
        const Run grafted =
            runOrgan({QStringLiteral("graft"), QStringLiteral("--base"), a, QStringLiteral("--donor"), b,
                      QStringLiteral("--layers"), QStringLiteral("2-3"), QStringLiteral("--system"),
                      QStringLiteral("organ"), QStringLiteral("--purify"), QStringLiteral("haar"),
                      QStringLiteral("--threshold"), QStringLiteral("0.5"), QStringLiteral("-o"), chimera});
        QCOMPARE(grafted.exitCode, 0);
        QVERIFY2(grafted.out.contains(QStringLiteral("(an organ directory)")), qPrintable(grafted.out));
        QVERIFY2(
            grafted.out.contains(QStringLiteral("purified 6 tensors (haar, threshold 0.5 · attenuation 0)")),
            qPrintable(grafted.out));
        QVERIFY(grafted.out.contains(QStringLiteral("blk.3.ffn_up.weight")));
        QVERIFY(QFileInfo::exists(chimera + QStringLiteral("/manifest.json")));
        const QString back = m_dir.filePath(QStringLiteral("dm-chimera.gguf"));
        QCOMPARE(runOrgan({QStringLiteral("assemble"), QStringLiteral("--organs"), chimera,
                           QStringLiteral("-o"), back})
                     .exitCode,
                 0);
        QCOMPARE(runOrgan({QStringLiteral("validate"), back}).exitCode, 0);
        const QString purified = m_dir.filePath(QStringLiteral("dm-purified"));
        const Run purify =
            runOrgan({QStringLiteral("purify"), b, QStringLiteral("--method"), QStringLiteral("fft"),
                      QStringLiteral("--layers"), QStringLiteral("1"), QStringLiteral("-o"), purified});
        QCOMPARE(purify.exitCode, 0);
        QVERIFY2(purify.out.contains(QStringLiteral("(an organ directory)")), qPrintable(purify.out));
        QVERIFY(purify.out.contains(QStringLiteral("perplexity on the built-in text")));
        // A parameter without its method is a usage error.
        QCOMPARE(
            runOrgan({QStringLiteral("graft"), QStringLiteral("--base"), a, QStringLiteral("--donor"), b,
                      QStringLiteral("--layers"), QStringLiteral("2"), QStringLiteral("--keep"),
                      QStringLiteral("0.5"), QStringLiteral("-o"), m_dir.filePath(QStringLiteral("x.gguf"))})
                .exitCode,
            2);
    }

    // organ purify: the selected tensors, θ and perplexity before → after, refusals.
    void purify() {
        const QString healthy = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(healthy);
        const QString out = m_dir.filePath(QStringLiteral("purified.gguf"));
        const Run run =
            runOrgan({QStringLiteral("purify"), healthy, QStringLiteral("--method"), QStringLiteral("fft"),
                      QStringLiteral("--keep"), QStringLiteral("0.95"), QStringLiteral("--system"),
                      QStringLiteral("organ"), QStringLiteral("--layers"), QStringLiteral("1-2"),
                      QStringLiteral("-o"), out});
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(run.out.contains(QStringLiteral("purified 6 tensors")), qPrintable(run.out));
        QVERIFY(run.out.contains(QStringLiteral("blk.2.ffn_down.weight")));
        QVERIFY(QRegularExpression(
                    QStringLiteral("perplexity on the built-in text \\(412 tokens\\): 4\\.4163 → [0-9.]+"))
                    .match(run.out)
                    .hasMatch());
        QVERIFY(readAll(out).startsWith("GGUF"));
        QCOMPARE(
            runOrgan({QStringLiteral("purify"), healthy, QStringLiteral("--method"), QStringLiteral("fft"),
                      QStringLiteral("--threshold"), QStringLiteral("2"), QStringLiteral("-o"), out})
                .exitCode,
            2); // --threshold is haar's
        QCOMPARE(runOrgan({QStringLiteral("purify"), healthy, QStringLiteral("--method"),
                           QStringLiteral("wavelet"), QStringLiteral("-o"), out})
                     .exitCode,
                 2);
        QCOMPARE(
            runOrgan({QStringLiteral("purify"), healthy, QStringLiteral("--method"), QStringLiteral("fft"),
                      QStringLiteral("--keep"), QStringLiteral("1.5"), QStringLiteral("-o"), out})
                .exitCode,
            2);
        const Run overInput = runOrgan({QStringLiteral("purify"), healthy, QStringLiteral("--method"),
                                        QStringLiteral("haar"), QStringLiteral("-o"), healthy});
        QCOMPARE(overInput.exitCode, 1);
        QVERIFY(readAll(healthy).startsWith("GGUF"));
    }

    // organ quantize: llama-quantize's file types and options, its bytes, refusals.
    void quantize() {
        const QString base = sharedModel(QStringLiteral("family/family-base-f16.gguf"));
        const QString reference = sharedModel(QStringLiteral("family/family-base-q4_k_m.gguf"));
        ORGAN_REQUIRE_SHARED(base);
        ORGAN_REQUIRE_SHARED(reference);
        const QString out = m_dir.filePath(QStringLiteral("q4km.gguf"));
        const QString json = m_dir.filePath(QStringLiteral("q4km.json"));
        const Run run =
            runOrgan({QStringLiteral("quantize"), base, QStringLiteral("--type"), QStringLiteral("q4_k_m"),
                      QStringLiteral("-o"), out, QStringLiteral("--json"), json});
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(run.out.contains(QStringLiteral("to Q4_K_M")) &&
                     run.out.contains(QStringLiteral("44 of 57 tensors")),
                 qPrintable(run.out));
        QVERIFY(readAll(out) == readAll(reference));
        const QJsonObject report = QJsonDocument::fromJson(readAll(json)).object();
        QCOMPARE(report[QStringLiteral("file_type")].toString(), QStringLiteral("Q4_K_M"));
        QCOMPARE(report[QStringLiteral("tensors")].toArray().size(), 57);

        const Run requantized =
            runOrgan({QStringLiteral("quantize"), reference, QStringLiteral("--type"), QStringLiteral("Q8_0"),
                      QStringLiteral("-o"), m_dir.filePath(QStringLiteral("q8.gguf"))});
        QCOMPARE(requantized.exitCode, 0);
        QVERIFY2(requantized.err.contains(QStringLiteral("quantized already and quantized again")),
                 qPrintable(requantized.err));

        const auto refused = [&](const QStringList& options, const QString& message, int code) {
            const Run r = runOrgan(QStringList{QStringLiteral("quantize"), base} + options);
            QVERIFY2(r.exitCode == code && r.err.contains(message),
                     qPrintable(options.join(u' ') + u'\n' + r.err));
        };
        const QString x = m_dir.filePath(QStringLiteral("x.gguf"));
        refused({QStringLiteral("--type"), QStringLiteral("Q4_K_X"), QStringLiteral("-o"), x},
                QStringLiteral("--type must be one of Q2_K"), 2);
        refused({QStringLiteral("--type"), QStringLiteral("Q4_K_M"), QStringLiteral("--tensor-type"),
                 QStringLiteral("attn_v"), QStringLiteral("-o"), x},
                QStringLiteral("REGEX=TYPE"), 2);
        refused({QStringLiteral("--type"), QStringLiteral("Q4_K_M"), QStringLiteral("--output-tensor-type"),
                 QStringLiteral("iq1_s"), QStringLiteral("-o"), x},
                QStringLiteral("does not write IQ1_S"), 2);
        refused({QStringLiteral("--type"), QStringLiteral("Q4_K_M"), QStringLiteral("--imatrix"),
                 m_dir.filePath(QStringLiteral("absent.imatrix")), QStringLiteral("-o"), x},
                QStringLiteral("absent.imatrix"), 1);
        refused({QStringLiteral("--type"), QStringLiteral("Q4_K_M"), QStringLiteral("-o"), base},
                QStringLiteral("organ quantize"), 1);
        QVERIFY(!QFile::exists(x));
        QVERIFY(readAll(base).startsWith("GGUF"));
    }

    // A graft plan that quantizes: organ graft --quantize saves it, plan check reports it, organ
    // assemble --plan runs it to the same file; a plan that only quantizes gives organ quantize's
    // tensors; an importance matrix that is not one is refused naming the file.
    void quantizeInPlans() {
        const QString base = familyModel("family-base-f16.gguf");
        const QString farm = familyModel("family-farm-f16.gguf");
        const QString imatrix = familyImatrix();
        for (const QString& f : {base, farm, imatrix}) {
            ORGAN_REQUIRE_SHARED(f);
        }
        const QString out = m_dir.filePath(QStringLiteral("farm-graft-q4_k_m.gguf"));
        const QString plan = m_dir.filePath(QStringLiteral("farm-graft-q4_k_m.json"));
        const Run run =
            runOrgan({QStringLiteral("graft"), QStringLiteral("--base"), base, QStringLiteral("--donor"),
                      farm, QStringLiteral("--layers"), QStringLiteral("1-3"), QStringLiteral("--quantize"),
                      QStringLiteral("q4_k_m"), QStringLiteral("--imatrix"), imatrix, QStringLiteral("-o"),
                      out, QStringLiteral("--save-plan"), plan});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        const auto chimera = GgufModel::open(out.toStdString());
        QCOMPARE(chimera->find("general.file_type")->asUInt().value_or(0), std::uint64_t(15));
        QCOMPARE(chimera->findTensor("blk.2.attn_q.weight")->type, TensorType::Q4_K);
        QCOMPARE(chimera->findTensor("output.weight")->type, TensorType::Q6_K);
        QVERIFY(chimera->find("quantize.imatrix.file") != nullptr);
        const QJsonObject saved = QJsonDocument::fromJson(readAll(plan)).object();
        const QJsonObject quantize = saved[QStringLiteral("operations")].toArray().last().toObject();
        QCOMPARE(quantize[QStringLiteral("op")].toString(), QStringLiteral("quantize"));
        QCOMPARE(quantize[QStringLiteral("type")].toString(), QStringLiteral("Q4_K_M"));
        QVERIFY(quantize[QStringLiteral("imatrix")].toString().endsWith(
            QStringLiteral("family-base-imatrix.gguf")));

        const Run check = runOrgan({QStringLiteral("plan"), QStringLiteral("check"), plan});
        QCOMPARE(check.exitCode, 0);
        QVERIFY2(check.out.contains(QStringLiteral("converted from F16 to Q4_K")), qPrintable(check.out));
        const QString again = m_dir.filePath(QStringLiteral("farm-graft-again.gguf"));
        QCOMPARE(runOrgan({QStringLiteral("assemble"), QStringLiteral("--plan"), plan, QStringLiteral("-o"),
                           again})
                     .exitCode,
                 0);
        QCOMPARE(readAll(again), readAll(out));

        // Only a quantize: the tensors organ quantize writes, in its order.
        const QString onlyPlan = m_dir.filePath(QStringLiteral("only-quantize.json"));
        QVERIFY(writeAll(
            onlyPlan,
            QJsonDocument(
                QJsonObject{{QStringLiteral("format"), QStringLiteral("organ-graft-plan")},
                            {QStringLiteral("version"), 1},
                            {QStringLiteral("base"), base},
                            {QStringLiteral("operations"),
                             QJsonArray{QJsonObject{{QStringLiteral("op"), QStringLiteral("quantize")},
                                                    {QStringLiteral("type"), QStringLiteral("IQ4_XS")},
                                                    {QStringLiteral("imatrix"), imatrix}}}}})
                .toJson()));
        const QString viaPlan = m_dir.filePath(QStringLiteral("via-plan-iq4_xs.gguf"));
        const QString viaQuantize = m_dir.filePath(QStringLiteral("via-quantize-iq4_xs.gguf"));
        QCOMPARE(runOrgan({QStringLiteral("assemble"), QStringLiteral("--plan"), onlyPlan,
                           QStringLiteral("-o"), viaPlan})
                     .exitCode,
                 0);
        QCOMPARE(
            runOrgan({QStringLiteral("quantize"), base, QStringLiteral("--type"), QStringLiteral("IQ4_XS"),
                      QStringLiteral("--imatrix"), imatrix, QStringLiteral("-o"), viaQuantize})
                .exitCode,
            0);
        const auto a = GgufModel::open(viaPlan.toStdString());
        const auto b = GgufModel::open(viaQuantize.toStdString());
        QCOMPARE(a->tensors().size(), b->tensors().size());
        for (std::size_t i = 0; i < a->tensors().size(); ++i) {
            QCOMPARE(a->tensors()[i].name, b->tensors()[i].name);
            QVERIFY2(a->tensors()[i].type == b->tensors()[i].type, a->tensors()[i].name.c_str());
            QVERIFY2(std::ranges::equal(a->tensorData(a->tensors()[i]), b->tensorData(b->tensors()[i])),
                     a->tensors()[i].name.c_str());
        }

        // A plan whose matrix is a model, not a matrix: refused, the file named, nothing written.
        QByteArray wrong = readAll(onlyPlan);
        wrong.replace(imatrix.toUtf8(), farm.toUtf8());
        QVERIFY(writeAll(onlyPlan, wrong));
        const Run refused = runOrgan({QStringLiteral("plan"), QStringLiteral("check"), onlyPlan});
        QCOMPARE(refused.exitCode, 1);
        QVERIFY2(refused.err.contains(QStringLiteral("family-farm-f16.gguf")), qPrintable(refused.err));
        const QString never = m_dir.filePath(QStringLiteral("never.gguf"));
        QVERIFY(runOrgan({QStringLiteral("assemble"), QStringLiteral("--plan"), onlyPlan,
                          QStringLiteral("-o"), never})
                    .exitCode != 0);
        QVERIFY(!QFile::exists(never));
        QCOMPARE(runOrgan({QStringLiteral("graft"), QStringLiteral("--base"), base, QStringLiteral("--donor"),
                           farm, QStringLiteral("--layers"), QStringLiteral("1"), QStringLiteral("--imatrix"),
                           imatrix, QStringLiteral("-o"), never})
                     .exitCode,
                 2); // --imatrix goes with --quantize
    }

    void specimen() {
        const QString out = m_dir.filePath(QStringLiteral("s.gguf"));
        const Run run =
            runOrgan({QStringLiteral("specimen"), out, QStringLiteral("--seed"), QStringLiteral("7")});
        QCOMPARE(run.exitCode, 0);
        QVERIFY(run.err.contains(QStringLiteral("100%"))); // plain progress lines when not a terminal
        const Run inspect = runOrgan({QStringLiteral("inspect"), out});
        QCOMPARE(inspect.exitCode, 0);
        QVERIFY(inspect.out.contains(QStringLiteral("organ-specimen")));
        QCOMPARE(runOrgan({QStringLiteral("specimen"), out, QStringLiteral("--seed"), QStringLiteral("x")})
                     .exitCode,
                 2);
        QCOMPARE(
            runOrgan({QStringLiteral("specimen"), m_dir.filePath(QStringLiteral("no/dir/s.gguf"))}).exitCode,
            1);
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
