// The organ command line, run as a user runs it: exit codes, text, JSON parsed back.
#include "fixtures.h"
#include "shared_models.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

using namespace organ::testing;

namespace {

struct Run {
    int exitCode = -1;
    QString out;
    QString err;
};

Run runOrgan(const QStringList& args) {
    QProcess process;
    process.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")), args);
    Run run;
    if (!process.waitForFinished(60000)) {
        return run;
    }
    run.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -2;
    run.out = QString::fromUtf8(process.readAllStandardOutput());
    run.err = QString::fromUtf8(process.readAllStandardError());
    return run;
}

} // namespace

class TestCli : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

private slots:
    void initTestCase() { QVERIFY2(!qgetenv("ORGAN_CLI").isEmpty(), "ORGAN_CLI is not set"); }

    void usage() {
        QCOMPARE(runOrgan({}).exitCode, 2);
        QCOMPARE(runOrgan({QStringLiteral("frobnicate")}).exitCode, 2);
        QCOMPARE(runOrgan({QStringLiteral("inspect")}).exitCode, 2);
        const Run unknown =
            runOrgan({QStringLiteral("inspect"), QStringLiteral("--bogus"), QStringLiteral("x.gguf")});
        QCOMPARE(unknown.exitCode, 2);
        QVERIFY(unknown.err.contains(QStringLiteral("unknown option --bogus")));
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
