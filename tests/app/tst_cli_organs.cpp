// The organ command line on organ directories as an adversary leaves them: a manifest with a
// backslash in a message.
#include "cli_run.h"
#include "fixtures.h"
#include "organ_fixture.h"
#include "shared_models.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
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

private slots:
    void initTestCase() {
        QVERIFY2(!qgetenv("ORGAN_CLI").isEmpty(), "ORGAN_CLI is not set");
        qputenv("ORGAN_CACHE_DIR", path(QStringLiteral("cache")).toLocal8Bit());
        m_model = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(m_model);
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
};

QTEST_GUILESS_MAIN(TestCliOrgans)
#include "tst_cli_organs.moc"
