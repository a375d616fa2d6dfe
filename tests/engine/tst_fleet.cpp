// The fleet (find, measure in parallel, rank, fit the scale law, report and merge) and
// shard-by-shard measurement (one part of a split model measured alone, the reports merged
// into the whole model's measurement).
#include "fixtures.h"
#include "shared_models.h"

#include "gguf/specimen.h"
#include "fleet/fleet.h"
#include "measure/shard_report.h"
#include "organs/organ_directory.h"
#include "support/text_safety.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <filesystem>

using namespace organ;
using namespace organ::testing;
namespace fs = std::filesystem;

namespace {

FleetRow row(std::string name, std::uint64_t parameters, std::optional<double> theta) {
    FleetRow r;
    r.path = "/m/" + name + ".gguf";
    r.name = std::move(name);
    r.parameters = parameters;
    r.thetaMean = theta;
    r.measured = theta ? 1 : 0;
    return r;
}

std::string measuredDocument(const MeasuredModel& m) {
    return dumpJson(measurementsDocument({m}), 1);
}

} // namespace

class TestFleet : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    std::string path(const QString& name) const { return m_dir.filePath(name).toStdString(); }

    void specimen(const QString& name, std::uint64_t seed, SpecimenShape shape = {}) {
        QVERIFY(QDir().mkpath(QFileInfo(m_dir.filePath(name)).path()));
        QVERIFY(writeSpecimen(path(name), seed, shape).isOk());
    }

private slots:
    void findsModelsInFilesAndFolders() {
        const QString root = QStringLiteral("find");
        specimen(root + QStringLiteral("/a.gguf"), 1);
        specimen(root + QStringLiteral("/deep/er/B.GGUF"), 2);
        QVERIFY(QDir().mkpath(m_dir.filePath(root + QStringLiteral("/organs/skeleton"))));
        QVERIFY(writeAll(m_dir.filePath(root + QStringLiteral("/organs/manifest.json")), "{}"));
        QVERIFY(writeAll(m_dir.filePath(root + QStringLiteral("/organs/skeleton/inner.gguf")), "x"));
        QVERIFY(writeAll(m_dir.filePath(root + QStringLiteral("/notes.txt")), "not a model"));
        const QStringList parts = writeSplitFixture(m_dir.filePath(root + QStringLiteral("/a.gguf")),
                                                    m_dir.filePath(root + QStringLiteral("/set")), 3);
        QCOMPARE(parts.size(), 3);
        // A link back up the tree is not followed (no loop), a link to a file is.
        fs::create_directory_symlink("..", path(root + QStringLiteral("/deep/loop")));
        fs::create_symlink(path(root + QStringLiteral("/a.gguf")), path(root + QStringLiteral("/link.gguf")));

        const auto found = findFleetModels(
            {path(root), path(root + QStringLiteral("/a.gguf")), path(QStringLiteral("absent.gguf"))});
        const std::vector<std::string> expected{path(QStringLiteral("absent.gguf")),
                                                path(root + QStringLiteral("/a.gguf")),
                                                path(root + QStringLiteral("/deep/er/B.GGUF")),
                                                path(root + QStringLiteral("/link.gguf")),
                                                path(root + QStringLiteral("/organs")),
                                                parts.front().toStdString()};
        QCOMPARE(found, expected);
        // Any part named on the command line stands for the set.
        QCOMPARE(findFleetModels({parts.back().toStdString()}),
                 std::vector<std::string>{parts.front().toStdString()});
    }

    void fitsTheScaleLaw() {
        // θ = 5 · log10(p) + 10 exactly: slope, intercept and r² recovered.
        std::vector<FleetRow> rows{row("a", 1000, 25.0), row("b", 100000, 35.0), row("c", 10000000, 45.0),
                                   row("no-theta", 500, std::nullopt)};
        FleetRow failed = row("bad", 1000000, 99.0);
        failed.error = "bad.gguf: not a GGUF file";
        rows.push_back(failed);
        ScaleLaw law = fitScaleLaw(rows);
        QVERIFY(law.fitted);
        QCOMPARE(law.models, std::size_t(3));
        QVERIFY(std::fabs(law.slope - 5.0) < 1e-12);
        QVERIFY(std::fabs(law.intercept - 10.0) < 1e-12);
        QVERIFY(std::fabs(law.r2 - 1.0) < 1e-12);

        // Off the line: x = 0, 1, 2 (log10), y = 1, 3, 2 → slope 0.5, intercept 1.5, r² 0.25.
        law = fitScaleLaw({row("a", 1, 1.0), row("b", 10, 3.0), row("c", 100, 2.0)});
        QVERIFY(law.fitted);
        QVERIFY(std::fabs(law.slope - 0.5) < 1e-12);
        QVERIFY(std::fabs(law.intercept - 1.5) < 1e-12);
        QVERIFY(std::fabs(law.r2 - 0.25) < 1e-12);

        law = fitScaleLaw({row("a", 1000, 25.0), row("b", 100000, 35.0)});
        QVERIFY(!law.fitted);
        QVERIFY(law.reason.find("at least 3") != std::string::npos);
        law = fitScaleLaw({row("a", 1000, 25.0), row("b", 1000, 35.0), row("c", 1000, 30.0)});
        QVERIFY(!law.fitted);
        QVERIFY(law.reason.find("same parameter count") != std::string::npos);
    }

    void measuresRanksAndListsTheUnreadable() {
        const QString root = QStringLiteral("fleet");
        SpecimenShape small;
        small.blocks = 2;
        small.feedForward = 96;
        specimen(root + QStringLiteral("/small.gguf"), 3, small);
        specimen(root + QStringLiteral("/medium.gguf"), 4);
        SpecimenShape large;
        large.blocks = 6;
        large.embedding = 96;
        large.feedForward = 256;
        specimen(root + QStringLiteral("/large.gguf"), 5, large);
        QVERIFY(writeAll(m_dir.filePath(root + QStringLiteral("/broken.gguf")), "GGUF but not really"));

        const MeasurementCache cache(path(QStringLiteral("cache")));
        FleetOptions options;
        options.threads = 2;
        options.cache = &cache;
        std::size_t called = 0;
        options.onModel = [&](std::size_t, const FleetRow&) { ++called; };
        std::uint64_t lastDone = 0;
        std::uint64_t lastTotal = 0;
        FleetReport report;
        const auto models = findFleetModels({path(root)});
        QCOMPARE(models.size(), std::size_t(4));
        const JobResult result = measureFleet(models, options, report, [&](const Progress& p) {
            QVERIFY(p.done >= lastDone || p.total != lastTotal);
            lastDone = p.done;
            lastTotal = p.total;
        });
        QVERIFY2(result.isOk(), result.message.c_str());
        QCOMPARE(called, std::size_t(4));
        QCOMPARE(lastDone, std::uint64_t(4000));
        QCOMPARE(report.rows.size(), std::size_t(4));
        const FleetRow& broken = report.rows[0];
        QVERIFY(!broken.ok());
        QVERIFY2(broken.error.find("broken.gguf") != std::string::npos, broken.error.c_str());

        // Each row agrees with measuring the model alone.
        for (std::size_t i = 1; i < report.rows.size(); ++i) {
            const FleetRow& r = report.rows[i];
            QVERIFY(r.ok());
            MeasuredModel m;
            m.model = openModel(r.path);
            m.anatomy = analyzeAnatomy(*m.model);
            QVERIFY(measureModel(*m.model, m.anatomy, {}, m.measurement).isOk());
            const FleetRow alone = fleetRowOf(m);
            QVERIFY(r.thetaMean == alone.thetaMean);
            QCOMPARE(r.parameters, alone.parameters);
            QCOMPARE(r.systems.size(), alone.systems.size());
            QVERIFY(r.dtypes == alone.dtypes);
            QVERIFY(r.bitsPerWeight > 31.9 && r.bitsPerWeight < 32.5);
            QVERIFY(!r.fromCache);
        }
        const auto ranking = report.ranking();
        QCOMPARE(ranking.size(), std::size_t(3));
        for (std::size_t k = 1; k < ranking.size(); ++k) {
            QVERIFY(*report.rows[ranking[k - 1]].thetaMean >= *report.rows[ranking[k]].thetaMean);
        }
        const ScaleLaw law = report.scaleLaw();
        QVERIFY(law.fitted);
        QCOMPARE(law.models, std::size_t(3));

        // A second run is served from the cache, with the same numbers.
        FleetReport again;
        QVERIFY(measureFleet(models, options, again).isOk());
        QVERIFY(again.rows[1].fromCache);
        QVERIFY(again.rows[1].thetaMean == report.rows[1].thetaMean);

        // Text, CSV and Markdown name every model and the failure.
        const std::string text = fleetText(report);
        QVERIFY(text.find("Unreadable") != std::string::npos);
        QVERIFY(text.find("Scale law: θ mean =") != std::string::npos);
        const std::string csv = fleetCsv(report);
        QCOMPARE(std::count(csv.begin(), csv.end(), '\n'), 5L);
        QVERIFY(fleetMarkdown(report).find("## Scale law") != std::string::npos);

        // JSON there and back, and merged from two halves equal to the whole.
        const nlohmann::json json = fleetToJson(report);
        QVERIFY(fleetToJson(fleetFromJson(json)) == json);
        FleetReport first = report;
        first.rows.resize(2);
        FleetReport second = report;
        second.rows.erase(second.rows.begin(), second.rows.begin() + 2);
        std::vector<std::string> warnings;
        QVERIFY(fleetToJson(mergeFleetReports({first, second}, &warnings)) == json);
        QVERIFY(warnings.empty());
        QCOMPARE(mergeFleetReports({report, second}, &warnings).rows.size(), std::size_t(4));
        QCOMPARE(warnings.size(), std::size_t(2));
        FleetReport otherSample = second;
        otherSample.params.sample = 1000;
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, mergeFleetReports({first, otherSample}, nullptr));

        // Damaged reports are refused with a reason.
        nlohmann::json bad = json;
        bad["format"] = "something";
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, fleetFromJson(bad));
        bad = json;
        bad["models"][1]["parameters"] = "many";
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, fleetFromJson(bad));
        bad = json;
        bad["models"][1].erase("systems");
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, fleetFromJson(bad));
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, fleetFromJson(nlohmann::json::array()));
    }

    void cancelsBetweenModels() {
        specimen(QStringLiteral("cancel/a.gguf"), 6);
        StopToken stop;
        stop.requestStop();
        FleetReport report;
        const JobResult result = measureFleet({path(QStringLiteral("cancel/a.gguf"))}, {}, report, {}, &stop);
        QCOMPARE(result.status, JobResult::Status::Cancelled);
        QVERIFY(report.rows.empty());
    }

    // A split set measured one part at a time, each with the other parts absent, merges into
    // the measurement of the complete set, tensor for tensor.
    void shardReportsMergeIntoTheWholeModel() {
        const QString source = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(source);
        QVERIFY(QDir().mkpath(m_dir.filePath(QStringLiteral("shards/away"))));
        const QStringList parts =
            writeSplitFixture(source, m_dir.filePath(QStringLiteral("shards/story")), 4);
        QCOMPARE(parts.size(), 4);

        MeasuredModel whole;
        whole.model = GgufModel::open(parts.front().toStdString());
        whole.anatomy = analyzeAnatomy(*whole.model);
        QVERIFY(measureModel(*whole.model, whole.anatomy, {}, whole.measurement).isOk());

        auto away = [&](const QString& part) {
            return m_dir.filePath(QStringLiteral("shards/away/") + QFileInfo(part).fileName());
        };
        std::vector<ShardReport> reports(4);
        for (int k = 3; k >= 0; --k) { // the first part last: the others never see it
            for (int j = 0; j < 4; ++j) {
                if (j != k) {
                    QVERIFY(QFile::rename(parts[j], away(parts[j])));
                }
            }
            QVERIFY(measureShard(parts[k].toStdString(), {}, reports[k]).isOk());
            for (int j = 0; j < 4; ++j) {
                if (j != k) {
                    QVERIFY(QFile::rename(away(parts[j]), parts[j]));
                }
            }
            QCOMPARE(reports[k].part, unsigned(k + 1));
            QCOMPARE(reports[k].identityKnown(), k == 0);
        }
        QCOMPARE(reports[0].architecture, std::string("llama"));

        // Through JSON, in any order: equal to the whole set.
        std::vector<ShardReport> fromJson;
        for (int k : {2, 0, 3, 1}) {
            fromJson.push_back(
                shardReportFromJson(nlohmann::json::parse(dumpJson(shardReportToJson(reports[k])))));
        }
        QCOMPARE(measuredDocument(mergeShardReports(fromJson)), measuredDocument(whole));

        // Beside its first part, a part knows the model it belongs to.
        ShardReport beside;
        QVERIFY(measureShard(parts[2].toStdString(), {}, beside).isOk());
        QVERIFY(beside.identityKnown());
        QCOMPARE(beside.firstHeaderSha256, reports[0].firstHeaderSha256);
        QCOMPARE(beside.name, reports[0].name);

        // Missing and doubled parts are named.
        try {
            mergeShardReports({reports[0], reports[2]});
            QFAIL("merged without parts 2 and 4");
        } catch (const std::runtime_error& error) {
            QVERIFY2(std::string(error.what()).find("missing parts 2, 4 of 4") != std::string::npos,
                     error.what());
        }
        QCOMPARE(missingParts({reports[1]}), (std::vector<unsigned>{1, 3, 4}));
        try {
            mergeShardReports({reports[0], reports[1], reports[1], reports[3]});
            QFAIL("merged a doubled part");
        } catch (const std::runtime_error& error) {
            QVERIFY2(std::string(error.what()).find("part 2 is given twice") != std::string::npos,
                     error.what());
        }
        // A part measured beside another model's first part does not belong.
        ShardReport stranger = reports[2];
        stranger.firstHeaderSha256 = std::string(64, 'a');
        QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                                 mergeShardReports({reports[0], reports[1], stranger, reports[3]}));
        ShardReport otherSample = reports[1];
        otherSample.params.sample = 77;
        QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                                 mergeShardReports({reports[0], otherSample, reports[2], reports[3]}));

        // Damaged reports are refused.
        nlohmann::json bad = shardReportToJson(reports[1]);
        bad["tensors"][0]["name"] = "blk.99.not_here.weight";
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, shardReportFromJson(bad));
        bad = shardReportToJson(reports[1]);
        bad["header_base64"] = "R0dVRg=!";
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, shardReportFromJson(bad));
        bad = shardReportToJson(reports[1]);
        bad["header_base64"] = "R0dVRg==";
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, shardReportFromJson(bad));
        bad = shardReportToJson(reports[1]);
        bad["part"] = 3;
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, shardReportFromJson(bad));
        bad = shardReportToJson(reports[1]);
        bad["count"] = 4000000000u; // would size the merge's tables
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, shardReportFromJson(bad));

        // A file that is not a split part is refused.
        QVERIFY_THROWS_EXCEPTION(std::exception, [&] {
            ShardReport r;
            measureShard(source.toStdString(), {}, r);
        }());
    }
};

QTEST_GUILESS_MAIN(TestFleet)
#include "tst_fleet.moc"
