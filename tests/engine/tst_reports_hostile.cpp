// Shard and fleet reports as an adversary writes them: numbers no measurement gives, counts that
// are negative or past what a set has, and text that a spreadsheet would run as a formula.
#include "fixtures.h"
#include "shared_models.h"

#include "fleet/fleet.h"
#include "measure/shard_report.h"
#include "support/text_safety.h"

#include <QTemporaryDir>
#include <QTest>
#include <cmath>

using namespace organ;
using namespace organ::testing;

namespace {

// What a call throws, "" when it does not.
template <typename F> std::string thrown(F&& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

FleetRow measuredRow(const std::string& name, std::uint64_t parameters, double theta) {
    FleetRow r;
    r.path = "/m/" + name + ".gguf";
    r.name = name;
    r.architecture = "llama";
    r.parameters = parameters;
    r.thetaMean = theta;
    r.signalMean = 0.5;
    r.tensors = 1;
    r.measured = 1;
    return r;
}

} // namespace

class TestReportsHostile : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::vector<ShardReport> m_parts;

    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() {
        const QString source = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(source);
        const QStringList parts = writeSplitFixture(source, path(QStringLiteral("story")), 2);
        QCOMPARE(parts.size(), 2);
        for (const QString& part : parts) {
            ShardReport r;
            QVERIFY(measureShard(part.toStdString(), {}, r).isOk());
            m_parts.push_back(std::move(r));
        }
    }

    // A θ no measurement gives, or a count below zero, is refused naming the tensor or the key:
    // θ = -1e9 merged into the model's mean unnoticed, N = -5 became 18446744073709551611.
    void shardNumbersAreChecked_data() {
        QTest::addColumn<QString>("key");
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("message");
        QTest::newRow("theta -1e9") << QStringLiteral("theta") << -1e9
                                    << QStringLiteral("scores or θ that do not follow from H, K and C");
        QTest::newRow("theta 1e308") << QStringLiteral("theta") << 1e308
                                     << QStringLiteral("scores or θ that do not follow from H, K and C");
        QTest::newRow("N -5") << QStringLiteral("N") << -5.0
                              << QStringLiteral("N is -5, not a whole number of 0 or more");
        QTest::newRow("n 2.5") << QStringLiteral("n") << 2.5
                               << QStringLiteral("n is 2.5, not a whole number");
    }
    void shardNumbersAreChecked() {
        QFETCH(QString, key);
        QFETCH(double, value);
        QFETCH(QString, message);
        nlohmann::json report = shardReportToJson(m_parts[1]);
        auto& tensor = report["tensors"][0];
        if (value == std::floor(value) && value < 0) {
            tensor[key.toStdString()] = static_cast<std::int64_t>(value);
        } else {
            tensor[key.toStdString()] = value;
        }
        const QString error = QString::fromStdString(thrown([&] { shardReportFromJson(report); }));
        QVERIFY2(error.contains(message), qPrintable(error));
        if (key == QStringLiteral("theta")) {
            QVERIFY2(error.contains(QString::fromStdString(m_parts[1].tensors[0].first)), qPrintable(error));
        }
    }

    // A set that claims 65 535 parts names the missing ones in a line, not in 447 KB.
    void missingPartsAreNamedShortly() {
        ShardReport claim = m_parts[0];
        claim.count = 65535;
        const std::string error = thrown([&] { mergeShardReports({claim}); });
        QVERIFY2(error.find("missing parts 2-65535 of 65535") != std::string::npos, error.c_str());
        QVERIFY2(error.size() < 400, error.c_str());
        ShardReport scattered = m_parts[0];
        scattered.count = 200;
        std::vector<ShardReport> every{scattered};
        for (unsigned p = 4; p <= 200; p += 2) { // leaves 2, 3, 5, 7, … missing: 99 runs
            ShardReport r = scattered;
            r.part = p;
            every.push_back(r);
        }
        const std::string runs = thrown([&] { mergeShardReports(every); });
        QVERIFY2(runs.find("missing parts 2-3, 5, 7, 9,") != std::string::npos, runs.c_str());
        QVERIFY2(runs.find("and 79 more") != std::string::npos, runs.c_str());
    }

    // θ means outside 0°–90°, signals outside 0–1 and negative counts are refused by name; the
    // scale law never claims a fit it could not compute (θ 1e308 gave "fitted": true, slope null).
    void fleetNumbersAreChecked_data() {
        QTest::addColumn<QString>("key");
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("message");
        QTest::newRow("theta 1e308")
            << QStringLiteral("theta_mean") << 1e308
            << QStringLiteral("model '/m/b.gguf': theta_mean is 1e+308, not a number in [0, 90]");
        QTest::newRow("theta -1") << QStringLiteral("theta_mean") << -1.0
                                  << QStringLiteral("theta_mean is -1.0");
        QTest::newRow("signal 2") << QStringLiteral("signal_mean") << 2.0
                                  << QStringLiteral("signal_mean is 2.0");
        QTest::newRow("parameters -5")
            << QStringLiteral("parameters") << -5.0
            << QStringLiteral("model '/m/b.gguf': parameters is -5, not a whole number");
        QTest::newRow("tensors 1.5") << QStringLiteral("tensors") << 1.5
                                     << QStringLiteral("tensors is 1.5, not a whole number");
    }
    void fleetNumbersAreChecked() {
        QFETCH(QString, key);
        QFETCH(double, value);
        QFETCH(QString, message);
        FleetReport fleet;
        fleet.rows = {measuredRow("a", 1000, 20), measuredRow("b", 100000, 30),
                      measuredRow("c", 10000000, 40)};
        nlohmann::json document = fleetToJson(fleet);
        QCOMPARE(fleetFromJson(document).rows.size(), std::size_t(3));
        auto& row = document["models"][1];
        if (value == std::floor(value) && value < 0 && key != QStringLiteral("theta_mean") &&
            key != QStringLiteral("signal_mean")) {
            row[key.toStdString()] = static_cast<std::int64_t>(value);
        } else {
            row[key.toStdString()] = value;
        }
        const QString error = QString::fromStdString(thrown([&] { fleetFromJson(document); }));
        QVERIFY2(error.contains(message), qPrintable(error));
    }
    void scaleLawNeverClaimsAnOverflow() {
        const ScaleLaw law = fitScaleLaw({measuredRow("a", 1000, 1e308), measuredRow("b", 100000, -1e308),
                                          measuredRow("c", 10000000, 1e308)});
        QVERIFY(!law.fitted);
        QVERIFY2(law.reason.find("too large") != std::string::npos, law.reason.c_str());
        QCOMPARE(law.slope, 0.0);
    }

    // A name a spreadsheet would run is written as text.
    void csvCellsAreNeverFormulas() {
        QCOMPARE(csvQuoted("=HYPERLINK(\"http://x\")"), std::string("\"'=HYPERLINK(\"\"http://x\"\")\""));
        QCOMPARE(csvQuoted("+1"), std::string("\"'+1\""));
        QCOMPARE(csvQuoted("-cmd"), std::string("\"'-cmd\""));
        QCOMPARE(csvQuoted("@SUM(A1)"), std::string("\"'@SUM(A1)\""));
        QCOMPARE(csvQuoted("llama-7b"), std::string("\"llama-7b\""));
        FleetReport fleet;
        fleet.rows = {measuredRow("=cmd|' /C calc'!A0", 1000, 20)};
        const std::string csv = fleetCsv(fleet);
        QVERIFY2(csv.find(",\"'=cmd|' /C calc'!A0\",") != std::string::npos, csv.c_str());
    }
};

QTEST_GUILESS_MAIN(TestReportsHostile)
#include "tst_reports_hostile.moc"
