// An organ directory as an adversary leaves it: a manifest whose arrays are expensive to read.
#include "allocation_tracker.h"
#include "fixtures.h"
#include "organ_fixture.h"
#include "shared_models.h"

#include "organs/organ_directory.h"

#include <QTest>

using namespace organ;
using namespace organ::testing;

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
