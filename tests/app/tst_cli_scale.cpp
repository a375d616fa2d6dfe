// Beyond one process: organ fleet over the shared models, fleet reports merged, and a split
// model measured shard by shard by GNU parallel (several organ processes, one report per
// shard) and merged, equal to measuring the whole set in one process.
#include "cli_run.h"
#include "fixtures.h"
#include "shared_models.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <nlohmann/json.hpp>

using namespace organ::testing;

namespace {

nlohmann::json readJson(const QString& path) {
    const QByteArray bytes = readAll(path);
    return nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size(), nullptr, false);
}

} // namespace

class TestCliScale : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_cli;

    CliRun organ(const QStringList& args) {
        QProcessEnvironment cache;
        cache.insert(QStringLiteral("ORGAN_CACHE_DIR"), m_dir.filePath(QStringLiteral("cache")));
        return runProgram(m_cli, args, cache);
    }
    QString file(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() {
        m_cli = QString::fromLocal8Bit(qgetenv("ORGAN_CLI"));
        QVERIFY2(!m_cli.isEmpty(), "ORGAN_CLI is not set");
    }

    void fleetOfTheSharedModels() {
        const QString models = sharedModel(QString());
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-f32.gguf")));
        QVERIFY(writeAll(file(QStringLiteral("broken.gguf")), "GGUF\x03"));
        const CliRun fleet = organ({QStringLiteral("fleet"), models, file(QStringLiteral("broken.gguf")),
                                    QStringLiteral("--json"), file(QStringLiteral("fleet.json")),
                                    QStringLiteral("--csv"), file(QStringLiteral("fleet.csv")),
                                    QStringLiteral("--markdown"), file(QStringLiteral("fleet.md"))});
        QCOMPARE(fleet.exitCode, 1); // a model could not be read; the rest are reported
        QVERIFY2(fleet.out.contains(QStringLiteral("Unreadable")), qPrintable(fleet.out));
        QVERIFY(fleet.out.contains(QStringLiteral("broken.gguf")));
        QVERIFY(fleet.out.contains(QStringLiteral("Scale law: θ mean =")));
        QVERIFY(fleet.err.contains(QStringLiteral("fleet of ")));

        const nlohmann::json report = readJson(file(QStringLiteral("fleet.json")));
        const std::size_t found = static_cast<std::size_t>(sharedGgufFiles().size()) + 1;
        QCOMPARE(report["models"].size(), found);
        std::size_t failed = 0;
        for (const auto& m : report["models"]) {
            failed += m.contains("error") ? 1 : 0;
        }
        QCOMPARE(failed, std::size_t(1));
        QVERIFY(report["ranking"].size() >= 40);
        QVERIFY(report["scale_law"]["fitted"] == true);
        QVERIFY(report["scale_law"]["models"] == report["ranking"].size());
        // Ranked by θ, highest first.
        for (std::size_t i = 1; i < report["ranking"].size(); ++i) {
            QVERIFY(report["ranking"][i - 1]["theta_mean"].get<double>() >=
                    report["ranking"][i]["theta_mean"].get<double>());
        }
        const QByteArray csv = readAll(file(QStringLiteral("fleet.csv")));
        QCOMPARE(static_cast<std::size_t>(csv.count('\n')), found + 1);
        QVERIFY(readAll(file(QStringLiteral("fleet.md"))).contains("## Scale law"));

        // Two runs over halves, merged, are the one run over both.
        const QString zoo = sharedModel(QStringLiteral("zoo"));
        const QString quant = sharedModel(QStringLiteral("quant"));
        QCOMPARE(organ({QStringLiteral("fleet"), zoo, QStringLiteral("--no-cache"), QStringLiteral("--json"),
                        file(QStringLiteral("zoo.json"))})
                     .exitCode,
                 0);
        QCOMPARE(organ({QStringLiteral("fleet"), quant, QStringLiteral("--no-cache"),
                        QStringLiteral("--json"), file(QStringLiteral("quant.json"))})
                     .exitCode,
                 0);
        QCOMPARE(organ({QStringLiteral("fleet"), quant, zoo, QStringLiteral("--no-cache"),
                        QStringLiteral("--json"), file(QStringLiteral("both.json"))})
                     .exitCode,
                 0);
        const CliRun merged = organ({QStringLiteral("fleet"), QStringLiteral("--merge"),
                                     file(QStringLiteral("quant.json")), file(QStringLiteral("zoo.json")),
                                     QStringLiteral("--json"), file(QStringLiteral("merged.json"))});
        QCOMPARE(merged.exitCode, 0);
        QVERIFY(readJson(file(QStringLiteral("merged.json"))) == readJson(file(QStringLiteral("both.json"))));

        // Refusals: nothing to measure, a report that is not one, a report over an input.
        QVERIFY(QDir().mkpath(file(QStringLiteral("empty"))));
        QCOMPARE(organ({QStringLiteral("fleet"), file(QStringLiteral("empty"))}).exitCode, 1);
        const CliRun notReport =
            organ({QStringLiteral("fleet"), QStringLiteral("--merge"), file(QStringLiteral("fleet.csv"))});
        QCOMPARE(notReport.exitCode, 1);
        QVERIFY(notReport.err.contains(QStringLiteral("fleet.csv")));
        QCOMPARE(organ({QStringLiteral("fleet"), QStringLiteral("--merge"), file(QStringLiteral("zoo.json")),
                        QStringLiteral("--json"), file(QStringLiteral("zoo.json"))})
                     .exitCode,
                 1);
        QCOMPARE(organ({QStringLiteral("fleet")}).exitCode, 2);
        QCOMPARE(organ({QStringLiteral("fleet"), QStringLiteral("--merge"), file(QStringLiteral("zoo.json")),
                        QStringLiteral("--sample"), QStringLiteral("5")})
                     .exitCode,
                 2);
    }

    void shardsMeasuredByParallelMergeIntoTheWhole() {
        const QString source = sharedModel(QStringLiteral("stories260K-q8_0.gguf"));
        ORGAN_REQUIRE_SHARED(source);
        const QString parallel = QStandardPaths::findExecutable(QStringLiteral("parallel"));
        if (parallel.isEmpty()) {
            if (runningInCi()) {
                QFAIL("GNU parallel is missing in CI (packaging/setup-debian.sh installs it)");
            }
            QSKIP("GNU parallel is not installed (Debian package parallel)");
        }
        QVERIFY(QDir().mkpath(file(QStringLiteral("split"))));
        const QStringList parts = writeSplitFixture(source, file(QStringLiteral("split/stories")), 5);
        QCOMPARE(parts.size(), 5);
        QCOMPARE(organ({QStringLiteral("measure"), parts.front(), QStringLiteral("--no-cache"),
                        QStringLiteral("--json"), file(QStringLiteral("whole.json"))})
                     .exitCode,
                 0);

        // As docs/scale.md says: one organ process per shard, two at a time.
        QProcess process;
        process.setWorkingDirectory(file(QStringLiteral("split")));
        process.start(parallel,
                      QStringList{QStringLiteral("--will-cite"), QStringLiteral("--halt"),
                                  QStringLiteral("now,fail=1"), QStringLiteral("-j2"), m_cli,
                                  QStringLiteral("measure"), QStringLiteral("--shard"), QStringLiteral("{}"),
                                  QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--json"),
                                  QStringLiteral("{.}.shard.json"), QStringLiteral(":::")} +
                          parts);
        QVERIFY(process.waitForFinished(240000));
        QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());
        QStringList reports;
        for (const QString& part : parts) {
            QString report = part;
            report.replace(QStringLiteral(".gguf"), QStringLiteral(".shard.json"));
            QVERIFY2(QFile::exists(report), qPrintable(report));
            reports << report;
        }
        const CliRun merged =
            organ(QStringList{QStringLiteral("measure"), QStringLiteral("--merge")} + reports +
                  QStringList{QStringLiteral("--json"), file(QStringLiteral("merged.json"))});
        QVERIFY2(merged.exitCode == 0, qPrintable(merged.err));
        QVERIFY(readJson(file(QStringLiteral("merged.json"))) ==
                readJson(file(QStringLiteral("whole.json"))));

        // A missing shard is named; nothing is written.
        const CliRun missing =
            organ({QStringLiteral("measure"), QStringLiteral("--merge"), reports[0], reports[1], reports[3],
                   QStringLiteral("--json"), file(QStringLiteral("partial.json"))});
        QCOMPARE(missing.exitCode, 1);
        QVERIFY2(missing.err.contains(QStringLiteral("missing parts 3, 5 of 5")), qPrintable(missing.err));
        QVERIFY(!QFile::exists(file(QStringLiteral("partial.json"))));
        // Refusals: not a split part, no report target, a report that is not one.
        const CliRun whole = organ({QStringLiteral("measure"), QStringLiteral("--shard"), source,
                                    QStringLiteral("--json"), file(QStringLiteral("x.json"))});
        QCOMPARE(whole.exitCode, 1);
        QVERIFY(whole.err.contains(QStringLiteral("not a part of a split model")));
        QCOMPARE(organ({QStringLiteral("measure"), QStringLiteral("--shard"), parts[1]}).exitCode, 2);
        QCOMPARE(organ({QStringLiteral("measure"), QStringLiteral("--shard"), parts[1],
                        QStringLiteral("--json"), parts[1]})
                     .exitCode,
                 1);
        QVERIFY(writeAll(file(QStringLiteral("bad.json")), "{\"format\": \"organ-shard\"}"));
        const CliRun bad =
            organ({QStringLiteral("measure"), QStringLiteral("--merge"), file(QStringLiteral("bad.json"))});
        QCOMPARE(bad.exitCode, 1);
        QVERIFY(bad.err.contains(QStringLiteral("bad.json")));
    }

    // The Slurm array job's script, each task run as Slurm would run it (SLURM_ARRAY_TASK_ID set),
    // then its merge step: equal to measuring the whole set.
    void slurmTasksMergeIntoTheWhole() {
        const QString source = sharedModel(QStringLiteral("stories260K-q8_0.gguf"));
        ORGAN_REQUIRE_SHARED(source);
        QVERIFY(QDir().mkpath(file(QStringLiteral("slurm"))));
        const QStringList parts = writeSplitFixture(source, file(QStringLiteral("slurm/stories")), 3);
        QCOMPARE(parts.size(), 3);
        QCOMPARE(organ({QStringLiteral("measure"), parts.front(), QStringLiteral("--no-cache"),
                        QStringLiteral("--json"), file(QStringLiteral("slurm-whole.json"))})
                     .exitCode,
                 0);
        const QString script = QStringLiteral(ORGAN_SOURCE_DIR "/docs/scale/shards.sbatch");
        auto task = [&](const QString& variable, const QString& value) {
            QProcess process;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert(QStringLiteral("PATH"),
                       QFileInfo(m_cli).path() + QLatin1Char(':') + env.value(QStringLiteral("PATH")));
            env.insert(QStringLiteral("PREFIX"), file(QStringLiteral("slurm/stories")));
            env.insert(QStringLiteral("COUNT"), QStringLiteral("3"));
            env.insert(QStringLiteral("ORGAN_CACHE_DIR"), file(QStringLiteral("cache")));
            env.insert(variable, value);
            process.setProcessEnvironment(env);
            process.start(QStringLiteral("bash"), {script});
            process.waitForFinished(120000);
            return process.exitCode() == 0 ? QByteArray() : process.readAllStandardError() + " ";
        };
        for (int part = 1; part <= 3; ++part) {
            const QByteArray error = task(QStringLiteral("SLURM_ARRAY_TASK_ID"), QString::number(part));
            QVERIFY2(error.isEmpty(), error.constData());
        }
        const QByteArray error = task(QStringLiteral("MERGE"), QStringLiteral("1"));
        QVERIFY2(error.isEmpty(), error.constData());
        QVERIFY(readJson(file(QStringLiteral("slurm/stories.measure.json"))) ==
                readJson(file(QStringLiteral("slurm-whole.json"))));
    }

    // The Slurm array job of docs/scale/ is checked by shellcheck (a one-node Slurm does not
    // fit in the test time; docs/scale.md says so).
    void slurmScriptIsLinted() {
        const QString shellcheck = QStandardPaths::findExecutable(QStringLiteral("shellcheck"));
        if (shellcheck.isEmpty()) {
            if (runningInCi()) {
                QFAIL("shellcheck is missing in CI (packaging/setup-debian.sh installs it)");
            }
            QSKIP("shellcheck is not installed (Debian package shellcheck)");
        }
        const QDir scripts(QStringLiteral(ORGAN_SOURCE_DIR "/docs/scale"));
        const QStringList files =
            scripts.entryList({QStringLiteral("*.sh"), QStringLiteral("*.sbatch")}, QDir::Files);
        QVERIFY(files.size() >= 2);
        for (const QString& name : files) {
            QProcess process;
            process.start(shellcheck, {QStringLiteral("--shell=bash"), scripts.filePath(name)});
            QVERIFY(process.waitForFinished(60000));
            QVERIFY2(process.exitCode() == 0, process.readAllStandardOutput().constData());
        }
    }
};

QTEST_GUILESS_MAIN(TestCliScale)
#include "tst_cli_scale.moc"
