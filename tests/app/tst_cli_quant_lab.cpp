// organ quantize's lab as a user runs it on the family base: --report (a table and JSON per
// tensor), --sensitivity (KL per group), --target-bpw (a mix within Q4_K_M's size, written,
// measured, printed as llama-quantize's options), and bad input refused with the file or the
// problem named, nothing written, the inputs untouched.
#include "cli_run.h"
#include "fixtures.h"
#include "gguf/gguf_model.h"
#include "shared_models.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace organ;
using namespace organ::testing;

namespace {

std::uint64_t tensorBytes(const QString& path) {
    std::uint64_t total = 0;
    for (const TensorInfo& t : GgufModel::open(path.toStdString())->tensors()) {
        total += t.bytes;
    }
    return total;
}

} // namespace

class TestCliQuantLab : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_base;
    QString m_text;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() {
        QVERIFY2(!qgetenv("ORGAN_CLI").isEmpty(), "ORGAN_CLI is not set");
        m_base = familyModel("family-base-f16.gguf");
        m_text = familyModel("texts/general.txt");
    }

    void report() {
        ORGAN_REQUIRE_SHARED(m_base);
        const QString json = path(QStringLiteral("report.json"));
        const CliRun run =
            runOrganCli({QStringLiteral("quantize"), QStringLiteral("--report"), m_base,
                         QStringLiteral("--types"), QStringLiteral("q4_k,Q8_0"), QStringLiteral("--imatrix"),
                         familyImatrix(), QStringLiteral("--json"), json});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QVERIFY2(run.out.contains(QStringLiteral("44 tensors llama-quantize would quantize")) &&
                     run.out.contains(QStringLiteral("blk.5.ffn_down.weight")),
                 qPrintable(run.out));
        const QJsonObject doc = QJsonDocument::fromJson(readAll(json)).object();
        QCOMPARE(doc[QStringLiteral("format")].toString(), QStringLiteral("organ-quantize-report"));
        const QJsonArray tensors = doc[QStringLiteral("tensors")].toArray();
        QCOMPARE(tensors.size(), 44);
        for (const auto& t : tensors) {
            const QJsonArray types = t.toObject()[QStringLiteral("types")].toArray();
            QCOMPARE(types.size(), 2);
            const double q4 = types[0].toObject()[QStringLiteral("relative_rms")].toDouble();
            const double q8 = types[1].toObject()[QStringLiteral("relative_rms")].toDouble();
            QVERIFY(q8 < q4 && q4 < 0.2);
            QVERIFY(types[0].toObject()[QStringLiteral("theta")].isDouble());
        }
    }

    void sensitivity() {
        ORGAN_REQUIRE_SHARED(m_base);
        const QString json = path(QStringLiteral("sensitivity.json"));
        const CliRun run = runOrganCli({QStringLiteral("quantize"), QStringLiteral("--sensitivity"), m_base,
                                        QStringLiteral("--text"), m_text, QStringLiteral("--chunk"),
                                        QStringLiteral("128"), QStringLiteral("--groups"),
                                        QStringLiteral("layer"), QStringLiteral("--json"), json});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QVERIFY2(run.out.contains(QStringLiteral("blk.0")) && run.out.contains(QStringLiteral("s a group")),
                 qPrintable(run.out));
        const QJsonObject doc = QJsonDocument::fromJson(readAll(json)).object();
        const QJsonArray groups = doc[QStringLiteral("groups")].toArray();
        QCOMPARE(groups.size(), 8); // token_embd, output, 6 layers
        for (const auto& g : groups) {
            const QJsonObject q2 = g.toObject()[QStringLiteral("types")].toArray()[0].toObject();
            QCOMPARE(q2[QStringLiteral("type")].toString(), QStringLiteral("Q2_K"));
            QVERIFY(q2[QStringLiteral("kl_mean")].toDouble() > 0);
        }
    }

    // The KL table of --sensitivity reused for a budget; a table that is not the model's, or is
    // damaged, refused with the file and the problem named.
    void sensitivityFrom() {
        ORGAN_REQUIRE_SHARED(m_base);
        const QString table = path(QStringLiteral("sensitivity.json"));
        QVERIFY(QFile::exists(table)); // sensitivity() wrote it: layer groups, Q2_K
        const QString out = path(QStringLiteral("from-table.gguf"));
        const QStringList options{
            QStringLiteral("quantize"), m_base, QStringLiteral("--target-bpw"),      QStringLiteral("3.5"),
            QStringLiteral("--text"),   m_text, QStringLiteral("--chunk"),           QStringLiteral("128"),
            QStringLiteral("-o"),       out,    QStringLiteral("--sensitivity-from")};
        const CliRun run = runOrganCli(options + QStringList{table});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QVERIFY2(!run.out.contains(QStringLiteral("Q4_K")) && run.out.contains(QStringLiteral("blk.5  ")),
                 qPrintable(run.out));
        QVERIFY(QFile::remove(out));
        const CliRun withMatrix =
            runOrganCli(options + QStringList{table, QStringLiteral("--imatrix"), familyImatrix()});
        QVERIFY2(withMatrix.exitCode == 1 &&
                     withMatrix.err.contains(QStringLiteral("without an importance matrix")),
                 qPrintable(withMatrix.err));
        const QByteArray text = readAll(table);
        const struct {
            const char* from;
            const char* to;
            const char* message;
        } damages[] = {
            {"\"kl_mean\": ", "\"kl_mean\": -", "kl_mean is not a number of 0 or more"},
            {"organ-quantize-sensitivity", "organ-quantize-report", "not a sensitivity report"},
            {"\"group\": \"blk.3\"", "\"group\": \"blk.9\"", "group 'blk.9' where the model has 'blk.3'"},
            {"\"grouping\": \"layer\"", "\"grouping\": \"tensor\"", "groups are not the 44 tensor groups"},
            {"\"type\": \"Q2_K\"", "\"type\": \"Q9_K\"", "type 'Q9_K' cannot be its"},
            {"{", "[", "not JSON"},
        };
        for (const auto& damage : damages) {
            QByteArray broken = text;
            broken.replace(damage.from, damage.to);
            const QString file = path(QStringLiteral("damaged.json"));
            QVERIFY(writeAll(file, broken));
            const CliRun r = runOrganCli(options + QStringList{file});
            QVERIFY2(r.exitCode == 1 && r.err.contains(QStringLiteral("damaged.json")) &&
                         r.err.contains(QLatin1String(damage.message)),
                     qPrintable(QLatin1String(damage.message) + u'\n' + r.err));
            QVERIFY(!QFile::exists(out));
        }
    }

    // Within Q4_K_M's size (organ quantize --type Q4_K_M's bytes), never above it.
    void targetBitsPerWeight() {
        ORGAN_REQUIRE_SHARED(m_base);
        const QString reference = familyModel("family-base-q4_k_m.gguf");
        ORGAN_REQUIRE_SHARED(reference);
        const QString out = path(QStringLiteral("mix.gguf"));
        const QString json = path(QStringLiteral("mix.json"));
        const CliRun run = runOrganCli(
            {QStringLiteral("quantize"), m_base, QStringLiteral("--target-bpw"), QStringLiteral("Q4_K_M"),
             QStringLiteral("--types"), QStringLiteral("Q3_K,Q4_K,Q6_K"), QStringLiteral("--groups"),
             QStringLiteral("layer"), QStringLiteral("--text"), m_text, QStringLiteral("--eval-text"),
             familyModel("texts/sea.txt"), QStringLiteral("--chunk"), QStringLiteral("128"),
             QStringLiteral("-o"), out, QStringLiteral("--json"), json});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QVERIFY2(run.out.contains(QStringLiteral("predicted KL")) &&
                     run.out.contains(QStringLiteral("(held out)")) &&
                     run.out.contains(QStringLiteral("llama-quantize ")) &&
                     run.out.contains(QStringLiteral("--tensor-type '^blk\\.0\\.attn_q\\.weight$=")),
                 qPrintable(run.out));
        QVERIFY(tensorBytes(out) <= tensorBytes(reference));
        const QJsonObject mix =
            QJsonDocument::fromJson(readAll(json)).object()[QStringLiteral("mix")].toObject();
        QCOMPARE(std::uint64_t(mix[QStringLiteral("tensor_bytes")].toDouble()), tensorBytes(out));
        QCOMPARE(std::uint64_t(mix[QStringLiteral("budget_bytes")].toDouble()), tensorBytes(reference));
        QCOMPARE(QJsonDocument::fromJson(readAll(json)).object()[QStringLiteral("measured")].toArray().size(),
                 2);
    }

    void refused_data() {
        QTest::addColumn<QStringList>("options");
        QTest::addColumn<QString>("message");
        QTest::addColumn<int>("code");
        const QString absent = QDir::tempPath() + QStringLiteral("/organ-no-such-text.txt");
        const QString out = QStringLiteral("refused.gguf");
        QTest::newRow("missing text") << QStringList{QStringLiteral("--target-bpw"), QStringLiteral("4.5"),
                                                     QStringLiteral("--text"),       absent,
                                                     QStringLiteral("-o"),           out}
                                      << QStringLiteral("organ-no-such-text.txt") << 1;
        QTest::newRow("sensitivity without text") << QStringList{QStringLiteral("--sensitivity")}
                                                  << QStringLiteral("needs one model and --text") << 2;
        for (const char* bits : {"0", "-1", "33", "nan", "4.5x", "Q4_K_X"}) {
            QTest::newRow(qPrintable(QStringLiteral("bpw ") + QLatin1String(bits)))
                << QStringList{QStringLiteral("--target-bpw"), QLatin1String(bits), QStringLiteral("-o"), out}
                << QStringLiteral("--target-bpw is a number") << 2;
        }
        QTest::newRow("bpw below the smallest mix")
            << QStringList{QStringLiteral("--target-bpw"), QStringLiteral("1"),
                           QStringLiteral("--types"),      QStringLiteral("Q4_K"),
                           QStringLiteral("--groups"),     QStringLiteral("layer"),
                           QStringLiteral("-o"),           out}
            << QStringLiteral("below the smallest mix") << 1;
        QTest::newRow("unknown type")
            << QStringList{QStringLiteral("--report"), QStringLiteral("--types"), QStringLiteral("Q4_K,Q9_K")}
            << QStringLiteral("'Q9_K' is not a type the engine writes") << 2;
        QTest::newRow("type the engine cannot write")
            << QStringList{QStringLiteral("--report"), QStringLiteral("--types"), QStringLiteral("IQ2_XXS")}
            << QStringLiteral("'IQ2_XXS' is not a type the engine writes") << 2;
        QTest::newRow("unknown grouping")
            << QStringList{QStringLiteral("--sensitivity"), QStringLiteral("--text"), absent,
                           QStringLiteral("--groups"), QStringLiteral("block")}
            << QStringLiteral("--groups is tensor, layer or role") << 2;
        QTest::newRow("absent matrix")
            << QStringList{QStringLiteral("--report"), QStringLiteral("--imatrix"), absent}
            << QStringLiteral("organ-no-such-text.txt") << 1;
        QTest::newRow("output over the model")
            << QStringList{QStringLiteral("--target-bpw"), QStringLiteral("5"), QStringLiteral("-o"),
                           QString()}
            << QStringLiteral("organ quantize") << 1;
    }
    void refused() {
        QFETCH(QStringList, options);
        QFETCH(QString, message);
        QFETCH(int, code);
        ORGAN_REQUIRE_SHARED(m_base);
        const QString out = path(QStringLiteral("refused.gguf"));
        for (QString& o : options) {
            o = o == QStringLiteral("refused.gguf") ? out : o.isEmpty() ? m_base : o;
        }
        const QByteArray before = readAll(m_base);
        const CliRun run = runOrganCli(QStringList{QStringLiteral("quantize"), m_base} + options);
        QVERIFY2(run.exitCode == code && run.err.contains(message),
                 qPrintable(options.join(u' ') + u'\n' + run.err));
        QVERIFY(!QFile::exists(out));
        QVERIFY(readAll(m_base) == before);
    }
};

QTEST_GUILESS_MAIN(TestCliQuantLab)
#include "tst_cli_quant_lab.moc"
