// organ surgeon as a user runs it: a prune search on a specimen written to a plan that organ plan
// check accepts and organ assemble writes, the record as JSON, the budget, and bad input refused
// with the file or the problem named and nothing written.
#include "cli_run.h"
#include "fixtures.h"
#include "gguf/specimen.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace organ;
using namespace organ::testing;

class TestCliSurgeon : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_base;
    QString m_donor;
    QString m_text;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() {
        QVERIFY2(!qgetenv("ORGAN_CLI").isEmpty(), "ORGAN_CLI is not set");
        m_base = path(QStringLiteral("base.gguf"));
        m_donor = path(QStringLiteral("donor.gguf"));
        m_text = path(QStringLiteral("text.txt"));
        SpecimenShape shape;
        shape.blocks = 4;
        QVERIFY(writeSpecimen(m_base.toStdString(), 1, shape).isOk());
        QVERIFY(writeSpecimen(m_donor.toStdString(), 2, shape).isOk());
        shape.embedding = 32;
        QVERIFY(writeSpecimen(path(QStringLiteral("narrow.gguf")).toStdString(), 3, shape).isOk());
        QVERIFY(writeAll(m_text, "The cat sat in the sun and the dog ran to the sea.\n"
                                 "The bird sang a song and the fish swam in the deep water.\n"
                                 "At night they all slept and the moon was bright and round.\n"));
    }

    void pruneWritesAPlanThatAssembles() {
        const QString plan = path(QStringLiteral("pruned.json"));
        const QString json = path(QStringLiteral("record.json"));
        const CliRun run =
            runOrganCli({QStringLiteral("surgeon"), m_base, QStringLiteral("--prune"), QStringLiteral("1"),
                         QStringLiteral("--text"), m_text, QStringLiteral("--holdout"), QStringLiteral("0.3"),
                         QStringLiteral("-o"), plan, QStringLiteral("--json"), json,
                         QStringLiteral("--threads"), QStringLiteral("1")});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QVERIFY2(run.out.contains(QStringLiteral("greedy")) &&
                     run.out.contains(QStringLiteral("angular_distance")) &&
                     run.out.contains(QStringLiteral("held out")),
                 qPrintable(run.out));
        const CliRun check = runOrganCli({QStringLiteral("plan"), QStringLiteral("check"), plan});
        QVERIFY2(check.exitCode == 0, qPrintable(check.out + check.err));
        const CliRun assemble = runOrganCli({QStringLiteral("assemble"), QStringLiteral("--plan"), plan});
        QVERIFY2(assemble.exitCode == 0, qPrintable(assemble.out + assemble.err));
        QVERIFY(QFile::exists(path(QStringLiteral("pruned.gguf"))));
        const QJsonObject doc = QJsonDocument::fromJson(readAll(json)).object();
        QCOMPARE(doc[QStringLiteral("format")].toString(), QStringLiteral("organ-surgeon"));
        QCOMPARE(doc[QStringLiteral("goal")].toString(), QStringLiteral("prune"));
        const QJsonArray candidates = doc[QStringLiteral("candidates")].toArray();
        const int best = doc[QStringLiteral("best")].toInt();
        QVERIFY(best > 0 && best < candidates.size());
        QVERIFY(candidates[best].toObject()[QStringLiteral("holdout")].isDouble());
        QCOMPARE(candidates[best].toObject()[QStringLiteral("layers")].toInt(), 3);
    }

    void budgetOfCandidates() {
        const QString plan = path(QStringLiteral("budget.json"));
        const QString json = path(QStringLiteral("budget-record.json"));
        const CliRun run =
            runOrganCli({QStringLiteral("surgeon"), m_base, QStringLiteral("--prune"), QStringLiteral("2"),
                         QStringLiteral("--text"), m_text, QStringLiteral("--budget"), QStringLiteral("4"),
                         QStringLiteral("-o"), plan, QStringLiteral("--json"), json});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QVERIFY2(run.out.contains(QStringLiteral("the budget ended the search")), qPrintable(run.out));
        const QJsonObject doc = QJsonDocument::fromJson(readAll(json)).object();
        QCOMPARE(doc[QStringLiteral("runs")].toInt(), 4);
        QCOMPARE(doc[QStringLiteral("end")].toString(), QStringLiteral("budget"));
    }

    void organsWithADonor() {
        const QString plan = path(QStringLiteral("organs.json"));
        const CliRun run = runOrganCli({QStringLiteral("surgeon"), m_base, QStringLiteral("--organs"),
                                        m_donor, QStringLiteral("--text"), m_text, QStringLiteral("--sweeps"),
                                        QStringLiteral("1"), QStringLiteral("-o"), plan});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        const CliRun check = runOrganCli({QStringLiteral("plan"), QStringLiteral("check"), plan});
        QVERIFY2(check.exitCode == 0, qPrintable(check.out + check.err));
    }

    // Interrupted (SIGTERM, as Ctrl-C) once the evolution runs (its progress says the best so far):
    // the plan written is the best scored, and it says so.
    void interruptKeepsTheBest() {
        const QString plan = path(QStringLiteral("interrupted.json"));
        QProcess process;
        const QByteArray err = interruptOrganCliWhen(
            process,
            {QStringLiteral("surgeon"), m_base, QStringLiteral("--merge"), m_donor, QStringLiteral("--text"),
             m_text, QStringLiteral("--generations"), QStringLiteral("100000"), QStringLiteral("-o"), plan},
            "evolution, best");
        QCOMPARE(process.state(), QProcess::NotRunning);
        QCOMPARE(process.exitStatus(), QProcess::NormalExit);
        QCOMPARE(process.exitCode(), 0);
        QVERIFY2(err.contains("cancelled: interrupted.json is the best of the candidates scored"),
                 err.constData());
        const CliRun check = runOrganCli({QStringLiteral("plan"), QStringLiteral("check"), plan});
        QVERIFY2(check.exitCode == 0, qPrintable(check.out + check.err));
        QVERIFY(readAll(plan).contains("task_arithmetic"));
    }

    void badInput_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("message");
        const QString text = path(QStringLiteral("text.txt"));
        const QString out = path(QStringLiteral("never.json"));
        const QString base = path(QStringLiteral("base.gguf"));
        const QString s = QStringLiteral("surgeon");
        QTest::newRow("no goal") << QStringList{s, base, QStringLiteral("-o"), out} << 2
                                 << QStringLiteral("needs one goal");
        QTest::newRow("two goals") << QStringList{s,
                                                  base,
                                                  QStringLiteral("--prune"),
                                                  QStringLiteral("1"),
                                                  QStringLiteral("--organs"),
                                                  base,
                                                  QStringLiteral("-o"),
                                                  out}
                                   << 2 << QStringLiteral("needs one goal");
        QTest::newRow("no output") << QStringList{s, base, QStringLiteral("--prune"), QStringLiteral("1")}
                                   << 2 << QStringLiteral("-o PLAN.json");
        QTest::newRow("missing model") << QStringList{s,
                                                      path(QStringLiteral("absent.gguf")),
                                                      QStringLiteral("--prune"),
                                                      QStringLiteral("1"),
                                                      QStringLiteral("-o"),
                                                      out}
                                       << 1 << QStringLiteral("absent.gguf");
        QTest::newRow("missing text") << QStringList{s,
                                                     base,
                                                     QStringLiteral("--prune"),
                                                     QStringLiteral("1"),
                                                     QStringLiteral("--text"),
                                                     path(QStringLiteral("absent.txt")),
                                                     QStringLiteral("-o"),
                                                     out}
                                      << 1 << QStringLiteral("absent.txt");
        QTest::newRow("prune too many") << QStringList{s,
                                                       base,
                                                       QStringLiteral("--prune"),
                                                       QStringLiteral("4"),
                                                       QStringLiteral("--text"),
                                                       text,
                                                       QStringLiteral("-o"),
                                                       out}
                                        << 1 << QStringLiteral("removes 1 to 3");
        QTest::newRow("holdout") << QStringList{s,
                                                base,
                                                QStringLiteral("--prune"),
                                                QStringLiteral("1"),
                                                QStringLiteral("--text"),
                                                text,
                                                QStringLiteral("--holdout"),
                                                QStringLiteral("1.5"),
                                                QStringLiteral("-o"),
                                                out}
                                 << 2 << QStringLiteral("--holdout");
        QTest::newRow("budget") << QStringList{s,
                                               base,
                                               QStringLiteral("--prune"),
                                               QStringLiteral("1"),
                                               QStringLiteral("--budget"),
                                               QStringLiteral("ten"),
                                               QStringLiteral("-o"),
                                               out}
                                << 2 << QStringLiteral("--budget");
        QTest::newRow("method") << QStringList{s,
                                               base,
                                               QStringLiteral("--merge"),
                                               path(QStringLiteral("donor.gguf")),
                                               QStringLiteral("--method"),
                                               QStringLiteral("slerp"),
                                               QStringLiteral("-o"),
                                               out}
                                << 2 << QStringLiteral("task_arithmetic or ties");
        QTest::newRow("beam") << QStringList{s,
                                             base,
                                             QStringLiteral("--prune"),
                                             QStringLiteral("1"),
                                             QStringLiteral("--beam"),
                                             QStringLiteral("100000"),
                                             QStringLiteral("-o"),
                                             out}
                              << 2 << QStringLiteral("--beam is 1 to 64");
        QTest::newRow("offspring") << QStringList{s,
                                                  base,
                                                  QStringLiteral("--merge"),
                                                  path(QStringLiteral("donor.gguf")),
                                                  QStringLiteral("--offspring"),
                                                  QStringLiteral("0"),
                                                  QStringLiteral("-o"),
                                                  out}
                                   << 2 << QStringLiteral("--offspring is 1 to 256");
        QTest::newRow("plan named .gguf") << QStringList{s,
                                                         base,
                                                         QStringLiteral("--prune"),
                                                         QStringLiteral("1"),
                                                         QStringLiteral("-o"),
                                                         path(QStringLiteral("plan.gguf"))}
                                          << 2 << QStringLiteral("-o names the plan");
        QTest::newRow("json is the plan") << QStringList{s,
                                                         base,
                                                         QStringLiteral("--prune"),
                                                         QStringLiteral("1"),
                                                         QStringLiteral("-o"),
                                                         out,
                                                         QStringLiteral("--json"),
                                                         out}
                                          << 2 << QStringLiteral("the same file");
        QTest::newRow("text is a folder") << QStringList{s,
                                                         base,
                                                         QStringLiteral("--prune"),
                                                         QStringLiteral("1"),
                                                         QStringLiteral("--text"),
                                                         m_dir.path(),
                                                         QStringLiteral("-o"),
                                                         out}
                                          << 1 << QFileInfo(m_dir.path()).fileName();
        QTest::newRow("merge of another shape") << QStringList{s,
                                                               base,
                                                               QStringLiteral("--merge"),
                                                               path(QStringLiteral("narrow.gguf")),
                                                               QStringLiteral("--text"),
                                                               text,
                                                               QStringLiteral("-o"),
                                                               out}
                                                << 1 << QStringLiteral("a candidate plan cannot be made");
        QTest::newRow("own donor")
            << QStringList{s, base, QStringLiteral("--organs"), base, QStringLiteral("-o"), out} << 1
            << QStringLiteral("its own donor");
        QTest::newRow("plan over the text") << QStringList{s,
                                                           base,
                                                           QStringLiteral("--prune"),
                                                           QStringLiteral("1"),
                                                           QStringLiteral("--text"),
                                                           text,
                                                           QStringLiteral("-o"),
                                                           text}
                                            << 1 << QStringLiteral("text.txt");
    }
    void badInput() {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, message);
        const QByteArray before = readAll(m_base);
        const QByteArray text = readAll(m_text);
        const CliRun run = runOrganCli(args);
        QVERIFY2(run.exitCode == exitCode && run.err.contains(message), qPrintable(run.err));
        QVERIFY(!QFile::exists(path(QStringLiteral("never.json"))));
        QCOMPARE(readAll(m_base), before);
        QCOMPARE(readAll(m_text), text);
    }
};

QTEST_GUILESS_MAIN(TestCliSurgeon)
#include "tst_cli_surgeon.moc"
