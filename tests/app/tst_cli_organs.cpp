// The organ command line on organ directories as an adversary leaves them: reports aimed inside
// an input directory, a sub-folder linked to elsewhere, a manifest that makes an invalid model
// or a message with a backslash, and the partial directory of a killed extraction.
#include "cli_run.h"
#include "fixtures.h"
#include "organ_fixture.h"
#include "shared_models.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace organ::testing;

namespace {

QJsonObject manifestOf(const QString& directory) {
    return QJsonDocument::fromJson(readAll(directory + QStringLiteral("/manifest.json"))).object();
}

bool writeManifest(const QString& directory, const QJsonObject& manifest) {
    return writeAll(directory + QStringLiteral("/manifest.json"), QJsonDocument(manifest).toJson());
}

} // namespace

class TestCliOrgans : public OrganFixture {
    Q_OBJECT

    // A graft of layer 4 from the shared model into `base`.
    QStringList graftArgs(const QString& base, const QString& out) const {
        return {QStringLiteral("graft"),
                QStringLiteral("--base"),
                base,
                QStringLiteral("--donor"),
                m_model,
                QStringLiteral("--layers"),
                QStringLiteral("4"),
                QStringLiteral("-o"),
                out};
    }

private slots:
    void initTestCase() {
        QVERIFY2(!qgetenv("ORGAN_CLI").isEmpty(), "ORGAN_CLI is not set");
        qputenv("ORGAN_CACHE_DIR", path(QStringLiteral("cache")).toLocal8Bit());
        m_model = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(m_model);
    }

    // Every file of an input directory is an input: each of these exited 0 and destroyed the
    // directory (`organ measure d --json d/manifest.json`), or wrote over it and then failed.
    void reportsNeverGoInsideAnInputDirectory_data() {
        QTest::addColumn<QStringList>("args");
        const QString d = path(QStringLiteral("input"));
        const QString manifest = d + QStringLiteral("/manifest.json");
        const QString out = path(QStringLiteral("input-out.gguf"));
        const QStringList graft = graftArgs(d, out);
        QTest::newRow("measure --json")
            << QStringList{QStringLiteral("measure"), d, QStringLiteral("--json"), manifest};
        QTest::newRow("measure --markdown")
            << QStringList{QStringLiteral("measure"), d, QStringLiteral("--markdown"), manifest};
        QTest::newRow("fleet --json")
            << QStringList{QStringLiteral("fleet"), d, QStringLiteral("--json"), manifest};
        QTest::newRow("vitals --json")
            << QStringList{QStringLiteral("vitals"), d,       QStringLiteral("--tokens"), QStringLiteral("0"),
                           QStringLiteral("--json"), manifest};
        QTest::newRow("graft --json") << graft + QStringList{QStringLiteral("--json"), manifest};
        QTest::newRow("purify --json")
            << QStringList{QStringLiteral("purify"), d,   QStringLiteral("--method"), QStringLiteral("haar"),
                           QStringLiteral("-o"),     out, QStringLiteral("--json"),   manifest};
        QTest::newRow("assemble -o") << QStringList{QStringLiteral("assemble"), QStringLiteral("--organs"), d,
                                                    QStringLiteral("-o"), manifest};
        QTest::newRow("assemble -o, a new file")
            << QStringList{QStringLiteral("assemble"), QStringLiteral("--organs"), d, QStringLiteral("-o"),
                           d + QStringLiteral("/organs/new.gguf")};
        QTest::newRow("graft --save-plan") << graft + QStringList{QStringLiteral("--save-plan"), manifest};
        QTest::newRow("extract into it")
            << QStringList{QStringLiteral("extract"), d, QStringLiteral("-o"), d + QStringLiteral("/again")};
    }
    void reportsNeverGoInsideAnInputDirectory() {
        QFETCH(QStringList, args);
        const QString d = path(QStringLiteral("input"));
        if (!QFileInfo::exists(d)) {
            QCOMPARE(extracted(QStringLiteral("input")), d);
        }
        const QByteArray before = folderDigest(d);
        const CliRun run = runOrganCli(args);
        QCOMPARE(run.exitCode, 1);
        QVERIFY2(run.err.contains(QStringLiteral("is inside input, a folder that is an input")),
                 qPrintable(run.err));
        QCOMPARE(folderDigest(d), before);
        QVERIFY(!QFileInfo::exists(path(QStringLiteral("input-out.gguf"))));
    }

    // A sub-folder linked out of the directory is refused by every command (the server refused
    // it; `organ assemble --organs d -o o.gguf` exited 0).
    void linkedSubFoldersAreRefused_data() {
        QTest::addColumn<QStringList>("args");
        const QString d = path(QStringLiteral("linked"));
        QTest::newRow("assemble") << QStringList{QStringLiteral("assemble"), QStringLiteral("--organs"), d,
                                                 QStringLiteral("-o"), path(QStringLiteral("linked.gguf"))};
        QTest::newRow("inspect") << QStringList{QStringLiteral("inspect"), d};
        QTest::newRow("measure") << QStringList{QStringLiteral("measure"), d};
        QTest::newRow("validate") << QStringList{QStringLiteral("validate"), d};
        QTest::newRow("graft") << graftArgs(d, path(QStringLiteral("linked-graft.gguf")));
        QTest::newRow("purify") << QStringList{
            QStringLiteral("purify"),   d,
            QStringLiteral("--method"), QStringLiteral("fft"),
            QStringLiteral("-o"),       path(QStringLiteral("linked-purified.gguf"))};
        QTest::newRow("vitals") << QStringList{QStringLiteral("vitals"), d, QStringLiteral("--tokens"),
                                               QStringLiteral("0")};
    }
    void linkedSubFoldersAreRefused() {
        QFETCH(QStringList, args);
        const QString d = path(QStringLiteral("linked"));
        if (!QFileInfo::exists(d)) {
            QCOMPARE(extracted(QStringLiteral("linked")), d);
            QVERIFY(QDir().mkpath(path(QStringLiteral("elsewhere"))));
            QVERIFY(QFile::rename(d + QStringLiteral("/embed"), path(QStringLiteral("elsewhere/embed"))));
            QVERIFY(QFile::link(path(QStringLiteral("elsewhere/embed")), d + QStringLiteral("/embed")));
        }
        const CliRun run = runOrganCli(args);
        QCOMPARE(run.exitCode, 1);
        QVERIFY2(
            run.err.contains(QStringLiteral("linked/embed/")) &&
                run.err.contains(QStringLiteral(" leads through a link (a linked file or sub-folder is never "
                                                "followed out of linked)")),
            qPrintable(run.err));
        QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("linked*.gguf")}).size(), 0);
    }

    // A directory whose manifest makes a model llama.cpp refuses is not assembled as if it were
    // fine (block_count 2³²−1 was written with exit status 0): refused, or with --keep-invalid
    // written and said to be invalid.
    void invalidAssembliesAreSaidSo() {
        const QString d = extracted(QStringLiteral("invalid"));
        QVERIFY(!d.isEmpty());
        QJsonObject manifest = manifestOf(d);
        QJsonArray metadata = manifest[QStringLiteral("metadata")].toArray();
        for (int i = 0; i < metadata.size(); ++i) {
            QJsonObject entry = metadata[i].toObject();
            if (entry[QStringLiteral("key")] == QStringLiteral("llama.block_count")) {
                entry[QStringLiteral("value")] = 4294967295.0;
                metadata[i] = entry;
            }
        }
        manifest[QStringLiteral("metadata")] = metadata;
        QVERIFY(writeManifest(d, manifest));
        const QString out = path(QStringLiteral("invalid.gguf"));
        const QStringList assemble{QStringLiteral("assemble"), QStringLiteral("--organs"), d,
                                   QStringLiteral("-o"), out};
        const CliRun refused = runOrganCli(assemble);
        QCOMPARE(refused.exitCode, 1);
        QVERIFY2(refused.err.contains(QStringLiteral("invalid.gguf: not written: it would not load")),
                 qPrintable(refused.err));
        QVERIFY(!QFileInfo::exists(out));
        const CliRun kept = runOrganCli(assemble + QStringList{QStringLiteral("--keep-invalid")});
        QCOMPARE(kept.exitCode, 1);
        QVERIFY(QFileInfo::exists(out));
        QVERIFY2(kept.out.contains(QStringLiteral("error: llama.block_count is 4294967295")),
                 qPrintable(kept.out));
        QVERIFY2(kept.err.contains(QStringLiteral("is invalid (llama.cpp will not load it) and was kept")),
                 qPrintable(kept.err));
    }

    // A manifest's path is named with its backslash escaped once: '..\\..', not '..\\\\..'.
    void manifestMessagesAreEscapedOnce() {
        const QString d = extracted(QStringLiteral("escaped"));
        QVERIFY(!d.isEmpty());
        QJsonObject manifest = manifestOf(d);
        QJsonArray tensors = manifest[QStringLiteral("tensors")].toArray();
        QJsonObject first = tensors[0].toObject();
        first[QStringLiteral("file")] = QStringLiteral("..\\..\x1b");
        tensors[0] = first;
        manifest[QStringLiteral("tensors")] = tensors;
        QVERIFY(writeManifest(d, manifest));
        const CliRun run = runOrganCli({QStringLiteral("inspect"), d});
        QCOMPARE(run.exitCode, 1);
        QVERIFY2(
            run.err.contains(QStringLiteral("file '..\\\\..\\x1B' is not a plain path inside the directory")),
            qPrintable(run.err));
    }

    // The partial directory a killed extraction left (named as the writer names it) is removed
    // by the next extraction to the same target, which names it.
    void killedExtractionsAreCleanedUp() {
        const pid_t child = exitedProcess();
        const QString target = path(QStringLiteral("killed"));
        const QString partial = target + QStringLiteral(".partial-%1.3e9a1c").arg(child);
        QVERIFY(QDir().mkpath(partial + QStringLiteral("/organs")));
        QVERIFY(writeAll(partial + QStringLiteral("/organs/blk_0_ffn_up.bin"), QByteArray(1 << 16, 'x')));
        const CliRun run = runOrganCli({QStringLiteral("extract"), m_model, QStringLiteral("-o"), target});
        QCOMPARE(run.exitCode, 0);
        QVERIFY(!QFileInfo::exists(partial));
        QVERIFY2(run.err.contains(
                     QStringLiteral("warning: killed.partial-%1.3e9a1c: removed a partial directory left by "
                                    "an earlier run (process %1) that did not finish")
                         .arg(child)),
                 qPrintable(run.err));
    }
};

QTEST_GUILESS_MAIN(TestCliOrgans)
#include "tst_cli_organs.moc"
