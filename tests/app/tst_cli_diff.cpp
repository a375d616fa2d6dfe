// organ diff as a user runs it: the family's farm fine-tune against its base (every tensor
// changed, the JSON's fields), the base against its own Q4_K_M (types differ, values compared),
// a selection, and bad input refused with the file or the problem named. organ spectral on the
// same models: an α per matrix with the spec's keys, a selection, refusals.
#include "cli_run.h"
#include "fixtures.h"
#include "shared_models.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace organ::testing;

class TestCliDiff : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_base;
    QString m_farm;
    QString m_q4;

private slots:
    void initTestCase() {
        QVERIFY2(!qgetenv("ORGAN_CLI").isEmpty(), "ORGAN_CLI is not set");
        m_base = familyModel("family-base-f16.gguf");
        m_farm = familyModel("family-farm-f16.gguf");
        m_q4 = familyModel("family-base-q4_k_m.gguf");
    }

    void fineTune() {
        ORGAN_REQUIRE_SHARED(m_base);
        const QString json = m_dir.filePath(QStringLiteral("diff.json"));
        const QByteArray before = readAll(m_base);
        const CliRun run =
            runOrganCli({QStringLiteral("diff"), m_base, m_farm, QStringLiteral("--json"), json});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QVERIFY2(run.out.contains(QStringLiteral("57 tensors compared, 0 identical, 57 changed")),
                 qPrintable(run.out));
        QVERIFY(run.out.contains(QStringLiteral("by system")) && run.out.contains(QStringLiteral("layer 5")));
        const QJsonObject doc = QJsonDocument::fromJson(readAll(json)).object();
        QCOMPARE(doc[QStringLiteral("format")].toString(), QStringLiteral("organ-diff"));
        const QJsonArray tensors = doc[QStringLiteral("tensors")].toArray();
        QCOMPARE(tensors.size(), 57);
        for (const auto& value : tensors) {
            const QJsonObject t = value.toObject();
            QVERIFY(!t[QStringLiteral("identical")].toBool());
            const double cosine = t[QStringLiteral("cosine")].toDouble();
            const double error = t[QStringLiteral("relative_error")].toDouble();
            const double sqnr = t[QStringLiteral("sqnr_db")].toDouble();
            QVERIFY(cosine > 0.99 && cosine < 1);
            QVERIFY(error > 0 && error < 0.2);
            // SQNR and the relative error say the same thing: −20·log10(error).
            QVERIFY(std::abs(sqnr + 20 * std::log10(error)) < 1e-9);
            QVERIFY(t[QStringLiteral("changed_share")].toDouble() > 0.9);
            QVERIFY(t[QStringLiteral("max_abs")].toDouble() > 0);
        }
        QCOMPARE(readAll(m_base), before); // inputs untouched
    }

    void otherTypesAndSelection() {
        ORGAN_REQUIRE_SHARED(m_q4);
        const CliRun run =
            runOrganCli({QStringLiteral("diff"), m_base, m_q4, QStringLiteral("--system"),
                         QStringLiteral("organ"), QStringLiteral("--layers"), QStringLiteral("2-3")});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QVERIFY2(run.out.contains(QStringLiteral("6 tensors compared")), qPrintable(run.out));
        QVERIFY(run.out.contains(QStringLiteral("F16→Q4_K")) || run.out.contains(QStringLiteral("F16→Q6_K")));
        QVERIFY(!run.out.contains(QStringLiteral("attn_q")));
    }

    void spectral() {
        ORGAN_REQUIRE_SHARED(m_q4);
        const QString json = m_dir.filePath(QStringLiteral("spectral.json"));
        const CliRun run = runOrganCli({QStringLiteral("spectral"), m_q4, QStringLiteral("--layers"),
                                        QStringLiteral("0-1"), QStringLiteral("--json"), json});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QVERIFY2(run.out.contains(QStringLiteral("14 matrices, spectral v1")), qPrintable(run.out));
        const QJsonObject doc = QJsonDocument::fromJson(readAll(json)).object();
        QCOMPARE(doc[QStringLiteral("spectral")].toString(), QStringLiteral("v1"));
        const QJsonArray matrices = doc[QStringLiteral("matrices")].toArray();
        QCOMPARE(matrices.size(), 14);
        for (const auto& value : matrices) {
            const QJsonObject m = value.toObject();
            const double alpha = m[QStringLiteral("alpha")].toDouble();
            QVERIFY(alpha > 1 && alpha < 20);
            QVERIFY(m[QStringLiteral("tail")].toInt() >= 10);
            QVERIFY(m[QStringLiteral("ks_distance")].toDouble() > 0);
            const QString label = m[QStringLiteral("label")].toString();
            QCOMPARE(label, alpha < 2   ? QStringLiteral("over-trained")
                            : alpha > 6 ? QStringLiteral("under-trained")
                                        : QStringLiteral("well-trained"));
        }
        QCOMPARE(runOrganCli({QStringLiteral("spectral")}).exitCode, 2);
        const CliRun absent =
            runOrganCli({QStringLiteral("spectral"), m_dir.filePath(QStringLiteral("absent.gguf"))});
        QCOMPARE(absent.exitCode, 1);
        QVERIFY(absent.err.contains(QStringLiteral("absent.gguf")));
    }

    void badInput() {
        ORGAN_REQUIRE_SHARED(m_base);
        const CliRun one = runOrganCli({QStringLiteral("diff"), m_base});
        QCOMPARE(one.exitCode, 2);
        QVERIFY(one.err.contains(QStringLiteral("diff needs two models")));
        const QString missing = m_dir.filePath(QStringLiteral("missing.gguf"));
        const CliRun absent = runOrganCli({QStringLiteral("diff"), m_base, missing});
        QCOMPARE(absent.exitCode, 1);
        QVERIFY2(absent.err.contains(QStringLiteral("missing.gguf")), qPrintable(absent.err));
        const QString broken = m_dir.filePath(QStringLiteral("broken.gguf"));
        QVERIFY(writeAll(broken, QByteArray("GGUF\x03\x00\x00\x00 not a model", 24)));
        const CliRun bad = runOrganCli({QStringLiteral("diff"), broken, m_base});
        QCOMPARE(bad.exitCode, 1);
        QVERIFY2(bad.err.contains(QStringLiteral("broken.gguf")), qPrintable(bad.err));
        // The report never goes over an input.
        const QByteArray before = readAll(m_farm);
        const CliRun over =
            runOrganCli({QStringLiteral("diff"), m_base, m_farm, QStringLiteral("--json"), m_farm});
        QCOMPARE(over.exitCode, 1);
        QCOMPARE(readAll(m_farm), before);
    }
};

QTEST_GUILESS_MAIN(TestCliDiff)
#include "tst_cli_diff.moc"
