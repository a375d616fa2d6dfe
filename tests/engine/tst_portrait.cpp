// The inspector's portrait of a tensor: histogram and averaged matrix image.
#include "measure/tensor_portrait.h"

#include <QTest>
#include <cmath>
#include <numeric>

using namespace organ;

class TestPortrait : public QObject {
    Q_OBJECT

private slots:
    void smallMatrixIsExact() {
        std::vector<float> m(4 * 3);
        std::iota(m.begin(), m.end(), -5.0f); // -5 … 6, rows of 4
        const auto p = portraitOf(TensorType::F32, std::as_bytes(std::span<const float>(m)), 4, 3, 256, 12);
        QVERIFY(p.has_value());
        QCOMPARE(p->imageColumns, 4u);
        QCOMPARE(p->imageRows, 3u);
        for (std::size_t i = 0; i < m.size(); ++i) {
            QCOMPARE(p->image[i], m[i]);
        }
        QCOMPARE(p->imageAbsMax, 6.0);
        QCOMPARE(p->minimum, -5.0);
        QCOMPARE(p->maximum, 6.0);
        QCOMPARE(p->histogramValues, std::uint64_t(12));
        QCOMPARE(std::accumulate(p->histogram.begin(), p->histogram.end(), std::uint64_t(0)),
                 std::uint64_t(12));
    }

    // Larger than the image: cells are means of blocks, NaN and ∞ left out and counted.
    void averagesDownAndSkipsNonFinite() {
        const std::uint64_t columns = 8;
        const std::uint64_t rows = 6;
        std::vector<float> m(columns * rows);
        for (std::uint64_t r = 0; r < rows; ++r) {
            for (std::uint64_t c = 0; c < columns; ++c) {
                m[r * columns + c] = static_cast<float>(r < 3 ? 1.0 : -2.0);
            }
        }
        m[0] = std::numeric_limits<float>::quiet_NaN();
        m[9] = std::numeric_limits<float>::infinity();
        const auto p =
            portraitOf(TensorType::F32, std::as_bytes(std::span<const float>(m)), columns, rows, 2, 16);
        QCOMPARE(p->imageColumns, 2u);
        QCOMPARE(p->imageRows, 2u);
        QCOMPARE(p->image, (std::vector<float>{1.0f, 1.0f, -2.0f, -2.0f}));
        QCOMPARE(p->nonFinite, std::uint64_t(2));
        QCOMPARE(p->histogramValues, std::uint64_t(46));
    }

    void stopped() {
        std::vector<float> m(64, 1.0f);
        StopToken stop;
        stop.requestStop();
        QVERIFY(!portraitOf(TensorType::F32, std::as_bytes(std::span<const float>(m)), 8, 8, 4, 8, &stop));
    }
};

QTEST_APPLESS_MAIN(TestPortrait)
#include "tst_portrait.moc"
