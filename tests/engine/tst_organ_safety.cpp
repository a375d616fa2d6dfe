// An organ directory as an adversary leaves it: a sub-folder linked to somewhere else, a
// manifest whose arrays are expensive to read, and outputs aimed inside it.
#include "allocation_tracker.h"
#include "fixtures.h"
#include "organ_fixture.h"
#include "shared_models.h"

#include "organs/organ_directory.h"
#include "support/safe_files.h"

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>

using namespace organ;
using namespace organ::testing;
namespace fs = std::filesystem;

namespace {

template <typename F> QString thrown(F&& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace

class TestOrganSafety : public OrganFixture {
    Q_OBJECT

private slots:
    void initTestCase() {
        m_model = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(m_model);
    }

    // A sub-folder (or the manifest) that is a link is never followed out of the directory:
    // `mv d/organs /elsewhere && ln -s /elsewhere/organs d/organs` was read as if it were inside.
    void linksNeverLeadOut_data() {
        QTest::addColumn<QString>("linked");
        QTest::addColumn<QString>("message");
        QTest::newRow("sub-folder") << QStringLiteral("organs")
                                    << QStringLiteral("/organs is not a folder inside linked-organs");
        QTest::newRow("manifest") << QStringLiteral("manifest.json") << QStringLiteral("no manifest.json");
    }
    void linksNeverLeadOut() {
        QFETCH(QString, linked);
        QFETCH(QString, message);
        const QString directory = extracted(QStringLiteral("linked-") + QFileInfo(linked).baseName());
        QVERIFY(!directory.isEmpty());
        const QString elsewhere = path(QStringLiteral("elsewhere-") + QFileInfo(linked).baseName());
        QVERIFY(QDir().mkpath(elsewhere));
        const QString moved = elsewhere + u'/' + linked;
        QVERIFY(QFile::rename(directory + u'/' + linked, moved));
        fs::create_symlink(moved.toStdString(), QString(directory + u'/' + linked).toStdString());
        const QString error = thrown([&] { openModel(directory.toStdString()); });
        QVERIFY2(error.contains(message), qPrintable(error));
        QVERIFY2(thrown([&] { OrganDirectory::open(directory.toStdString()); }) == error, qPrintable(error));
    }

    // Every file of an open directory is an input, the manifest and files yet to be made
    // included: `organ measure d --json d/manifest.json` destroyed d.
    void nothingIsWrittenInsideAnInputDirectory() {
        const QString directory = extracted(QStringLiteral("input"));
        QVERIFY(!directory.isEmpty());
        const QByteArray before = folderDigest(directory);
        const std::string manifest = QString(directory + QStringLiteral("/manifest.json")).toStdString();
        const std::string inside = QString(directory + QStringLiteral("/organs/new.json")).toStdString();
        // Named as an input, before anything is open.
        QVERIFY(thrown([&] {
                    checkOutputTarget(manifest, {directory.toStdString()});
                }).contains(QStringLiteral("is inside input")));
        QVERIFY(thrown([&] {
                    checkOutputTarget(inside, {directory.toStdString()});
                }).contains(QStringLiteral("is inside input")));
        {
            const auto model = openModel(directory.toStdString());
            for (const std::string& target : {manifest, inside}) {
                const QString error = thrown([&] { writeFileSafely(target, "{}"); });
                QVERIFY2(error.contains(QStringLiteral("is inside input, a folder that is an input")),
                         qPrintable(error));
            }
            const JobResult gguf = writeGguf(manifest, specFromModel(*model));
            QVERIFY2(gguf.message.find("is inside input") != std::string::npos, gguf.message.c_str());
            const JobResult organs =
                extractOrgans(*model, QString(directory + QStringLiteral("/again")).toStdString());
            QVERIFY2(organs.message.find("is inside input") != std::string::npos, organs.message.c_str());
        }
        QCOMPARE(folderDigest(directory), before);
        // Closed, it is a folder like any other.
        writeFileSafely(inside, "{}");
        QVERIFY(QFileInfo::exists(QString::fromStdString(inside)));
    }

    // A manifest's array costs its bytes, not a value object per element: ten million u8
    // values (30 MB) took 1.43 GB to open. Past kMaxManifestValues it is refused, cheaply.
    void manifestArraysCostBoundedMemory() {
        const QString directory = extracted(QStringLiteral("big-array"));
        QVERIFY(!directory.isEmpty());
        const QString manifestPath = directory + QStringLiteral("/manifest.json");
        nlohmann::json manifest = nlohmann::json::parse(readAll(manifestPath).toStdString());
        auto withArray = [&](std::size_t count) {
            nlohmann::json values = nlohmann::json::array();
            for (std::size_t i = 0; i < count; ++i) {
                values.push_back(i % 251);
            }
            nlohmann::json copy = manifest;
            copy["metadata"].push_back(
                {{"key", "t.big"}, {"type", "array"}, {"element_type", "u8"}, {"value", values}});
            QVERIFY(writeAll(manifestPath, QByteArray::fromStdString(copy.dump())));
        };
        withArray(2'000'000);
        resetPeakAllocation();
        const OrganDirectory opened = OrganDirectory::open(directory.toStdString());
        const std::size_t peak = peakAllocationSinceReset();
        const auto* big = &opened.metadata().back().second;
        QCOMPARE(big->arraySize(), std::uint64_t(2'000'000));
        QCOMPARE(big->elements(3).back().asUInt(), std::optional<std::uint64_t>(2));
        qInfo("a manifest with 2 000 000 u8 values opened with %.1f MiB at most", double(peak) / (1 << 20));
        QVERIFY2(peak < (160u << 20), qPrintable(QString::number(peak)));

        withArray(kMaxManifestValues);
        resetPeakAllocation();
        const QString error = thrown([&] { OrganDirectory::open(directory.toStdString()); });
        const std::size_t refused = peakAllocationSinceReset();
        QVERIFY2(error.contains(QStringLiteral("more than 4 194 304 values")), qPrintable(error));
        qInfo("one of 4 194 304 refused with %.1f MiB at most", double(refused) / (1 << 20));
        QVERIFY2(refused < (400u << 20), qPrintable(QString::number(refused)));
    }
};

QTEST_GUILESS_MAIN(TestOrganSafety)
#include "tst_organ_safety.moc"
