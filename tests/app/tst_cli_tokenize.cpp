// organ tokenize as a user runs it: the token ids of every kept text equal llama.cpp's on each
// shared vocabulary (tests/data/tokenizer/llama-cpp-token-ids.json), byte-fallback tokens shown as
// bytes, lookups by id, vocabulary string and search, and bad input refused with the reason.
#include "cli_run.h"
#include "fixtures.h"
#include "shared_models.h"
#include "token_ids.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>
#include <nlohmann/json.hpp>

using namespace organ::testing;

namespace {

QJsonObject jsonOf(const CliRun& run) {
    return QJsonDocument::fromJson(run.out.toUtf8()).object();
}

} // namespace

class TestCliTokenize : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

private slots:
    void initTestCase() { QVERIFY2(!qgetenv("ORGAN_CLI").isEmpty(), "ORGAN_CLI is not set"); }

    void matchesLlamaCpp_data() {
        QTest::addColumn<int>("index");
        const nlohmann::json expected = llamaCppTokenIds();
        QVERIFY(!expected.empty());
        for (std::size_t i = 0; i < expected["vocabularies"].size(); ++i) {
            const auto& v = expected["vocabularies"][i];
            if (v["pre"].is_null()) { // the files as they are; other pre-tokenizers: tst_tokenizer
                QTest::newRow(v["file"].get<std::string>().c_str()) << int(i);
            }
        }
    }
    void matchesLlamaCpp() {
        QFETCH(int, index);
        const nlohmann::json expected = llamaCppTokenIds();
        const auto& v = expected["vocabularies"][std::size_t(index)];
        const QString model = sharedModel(QString::fromStdString(v["file"].get<std::string>()));
        ORGAN_REQUIRE_SHARED(model);
        const auto& texts = expected["texts_hex"];
        for (std::size_t t = 0; t < texts.size(); ++t) {
            const QString file = m_dir.filePath(QStringLiteral("text-%1").arg(t));
            QVERIFY(
                writeAll(file, QByteArray::fromHex(QByteArray::fromStdString(texts[t].get<std::string>()))));
            const CliRun run = runOrganCli({QStringLiteral("tokenize"), model, QStringLiteral("--file"), file,
                                            QStringLiteral("--json")});
            QVERIFY2(run.exitCode == 0, qPrintable(run.err));
            std::vector<std::int32_t> got;
            for (const auto& id : jsonOf(run)[QStringLiteral("ids")].toArray()) {
                got.push_back(id.toInt());
            }
            QVERIFY2(got == v["tokens"][t].get<std::vector<std::int32_t>>(),
                     qPrintable(QStringLiteral("text %1").arg(t)));
        }
    }

    // stories260K's SentencePiece vocabulary: BOS first, "ü" as its two byte-fallback tokens.
    void bytesAndLookups() {
        const QString model = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(model);
        const CliRun run = runOrganCli({QStringLiteral("tokenize"), model, QStringLiteral("--text"),
                                        QStringLiteral("Once ü"), QStringLiteral("--json")});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        const QJsonArray tokens = jsonOf(run)[QStringLiteral("tokens")].toArray();
        QCOMPARE(tokens.size(), 5);
        QCOMPARE(tokens[0].toObject()[QStringLiteral("type")].toString(), QStringLiteral("control"));
        QCOMPARE(tokens[0].toObject()[QStringLiteral("id")].toInt(),
                 jsonOf(run)[QStringLiteral("bos")].toInt());
        QCOMPARE(tokens[1].toObject()[QStringLiteral("piece")].toString(), QStringLiteral(" Once"));
        const QJsonObject c3 = tokens[3].toObject();
        QCOMPARE(c3[QStringLiteral("type")].toString(), QStringLiteral("byte"));
        QCOMPARE(c3[QStringLiteral("vocabulary")].toString(), QStringLiteral("<0xC3>"));
        QCOMPARE(c3[QStringLiteral("bytes")].toString(), QStringLiteral("c3"));
        QVERIFY(c3[QStringLiteral("piece")].isNull()); // one byte of a character is not text
        // The table shows the byte as \xC3.
        const CliRun table =
            runOrganCli({QStringLiteral("tokenize"), model, QStringLiteral("--text"), QStringLiteral("ü")});
        QVERIFY(table.out.contains(QStringLiteral("\"\\xC3\"")) &&
                table.out.contains(QStringLiteral("<0xBC>")));
        // Lookups: an id, a vocabulary string, a search.
        const CliRun lookup =
            runOrganCli({QStringLiteral("tokenize"), model, QStringLiteral("--id"), QStringLiteral("265"),
                         QStringLiteral("--piece"), QStringLiteral("▁the"), QStringLiteral("--piece"),
                         QStringLiteral("zzzq"), QStringLiteral("--search"), QStringLiteral("ing"),
                         QStringLiteral("--json")});
        QVERIFY2(lookup.exitCode == 0, qPrintable(lookup.err));
        const QJsonObject doc = jsonOf(lookup);
        QCOMPARE(
            doc[QStringLiteral("lookup")].toArray()[0].toObject()[QStringLiteral("vocabulary")].toString(),
            QStringLiteral("▁the"));
        QCOMPARE(doc[QStringLiteral("pieces")].toObject()[QStringLiteral("▁the")].toInt(), 265);
        QVERIFY(doc[QStringLiteral("pieces")].toObject()[QStringLiteral("zzzq")].isNull());
        for (const auto& t : doc[QStringLiteral("search")].toArray()) {
            QVERIFY(t.toObject()[QStringLiteral("vocabulary")].toString().contains(QStringLiteral("ing")));
        }
        QVERIFY(!doc[QStringLiteral("search")].toArray().isEmpty());
    }

    void badInput() {
        const QString model = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(model);
        QCOMPARE(runOrganCli({QStringLiteral("tokenize"), model}).exitCode, 2);
        const CliRun id =
            runOrganCli({QStringLiteral("tokenize"), model, QStringLiteral("--id"), QStringLiteral("512")});
        QCOMPARE(id.exitCode, 1);
        QVERIFY2(id.err.contains(QStringLiteral("token 512 is not in the vocabulary")), qPrintable(id.err));
        QCOMPARE(
            runOrganCli({QStringLiteral("tokenize"), model, QStringLiteral("--id"), QStringLiteral("x1")})
                .exitCode,
            2);
        const CliRun bert =
            runOrganCli({QStringLiteral("tokenize"), sharedModel(QStringLiteral("ggml-vocab-bert-bge.gguf")),
                         QStringLiteral("--text"), QStringLiteral("x")});
        QCOMPARE(bert.exitCode, 1);
        QVERIFY2(bert.err.contains(QStringLiteral("ggml-vocab-bert-bge.gguf")), qPrintable(bert.err));
        const CliRun missing = runOrganCli({QStringLiteral("tokenize"), model, QStringLiteral("--file"),
                                            m_dir.filePath(QStringLiteral("absent.txt"))});
        QCOMPARE(missing.exitCode, 1);
        QVERIFY2(missing.err.contains(QStringLiteral("absent.txt")), qPrintable(missing.err));
    }
};

QTEST_GUILESS_MAIN(TestCliTokenize)
#include "tst_cli_tokenize.moc"
