// Quantized products (Q8_0 weights × 8-bit activations) and F16 products: every kernel this CPU
// runs against the same sums done slowly in double and bit for bit against the portable kernel,
// on shapes that leave edges beside the tiles; the kernels this CPU cannot run are named.
#include "avxvnni_as_evex.h"
#include "quant/dequant.h"
#include "quant/f16_dot.h"
#include "quant/kquant_dot.h"
#include "quant/product_kernels.h"
#include "quant/quant_dot.h"
#include "quant/quantize.h"
#include "support/instruction_set.h"

#include <QTest>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace organ;

namespace {

struct Case {
    std::size_t rows;
    std::size_t columns;
    std::size_t count;
    std::vector<std::byte> weights;
    std::vector<float> x;
};

Case makeCase(std::size_t rows, std::size_t columns, std::size_t count, unsigned seed) {
    Case c{rows, columns, count, {}, {}};
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<float> w(rows * columns);
    for (auto& v : w) {
        v = 0.02f * normal(rng);
    }
    c.weights.resize(rows * columns / 32 * 34);
    quantizeBlocks(TensorType::Q8_0, w.data(), rows * columns / 32, c.weights.data());
    c.x.resize(columns * count);
    for (auto& v : c.x) {
        v = normal(rng) * (1 + 10 * (v == 0)); // every value non-zero, some blocks wider than others
    }
    return c;
}

// The product of the dequantized weights with the dequantized activations, in double.
std::vector<double> slowProduct(const Case& c, const QuantizedActivations& x) {
    std::vector<float> w(c.rows * c.columns);
    dequantizeBlocks(TensorType::Q8_0, c.weights.data(), c.rows * c.columns / 32, w.data());
    std::vector<double> out(c.rows * c.count);
    for (std::size_t col = 0; col < c.count; ++col) {
        const QuantizedActivations::Block* blocks = x.column(col);
        for (std::size_t r = 0; r < c.rows; ++r) {
            double sum = 0;
            for (std::size_t i = 0; i < c.columns; ++i) {
                const auto& block = blocks[i / 32];
                sum += double(w[r * c.columns + i]) * double(block.scale) * double(block.values[i % 32]);
            }
            out[r + col * c.rows] = sum;
        }
    }
    return out;
}

// Rows × columns × tokens: 4k + 3 rows and columns, tiles and the rows and columns beside them;
// 17 tokens, two of the widest tiles and one token beside them; 8192 × 45, tokens in several runs.
const std::tuple<std::size_t, std::size_t, std::size_t> kShapes[] = {
    {67, 96, 7}, {8, 2048, 4}, {5, 32, 1}, {1, 64, 130}, {9, 256, 17}, {5, 8192, 45}};

} // namespace

class TestQuantDot : public QObject {
    Q_OBJECT

private slots:
    void cleanup() {
        useInstructionSet(instructionSetName(supportedInstructionSets().front()));
        detail::useHalfTiles(detail::HalfTiles::Auto);
    }

    void kernelsAgreeWithSlowSums_data() {
        QTest::addColumn<QString>("kernel");
        for (const InstructionSet set : supportedInstructionSets()) {
            QTest::newRow(instructionSetName(set).data()) << QString::fromLatin1(instructionSetName(set));
        }
        for (const InstructionSet set : knownInstructionSets()) {
            const auto& supported = supportedInstructionSets();
            if (std::find(supported.begin(), supported.end(), set) == supported.end()) {
                qInfo("kernel %s: this CPU cannot run it, not tested", instructionSetName(set).data());
            }
        }
    }

    void kernelsAgreeWithSlowSums() {
        QFETCH(QString, kernel);
        for (const auto& [rows, columns, count] : kShapes) {
            const Case c = makeCase(rows, columns, count, unsigned(rows * 31 + count));
            const QuantizedActivations x(c.x.data(), columns, count);
            std::vector<float> portable(rows * count, std::nanf(""));
            useInstructionSet("portable");
            quantizedProduct(TensorType::Q8_0, c.weights.data(), rows, x, portable.data(), rows);
            useInstructionSet(kernel.toStdString());
            QCOMPARE(QString::fromLatin1(instructionSetName(activeInstructionSet())), kernel);
            std::vector<float> out(rows * count, std::nanf(""));
            quantizedProduct(TensorType::Q8_0, c.weights.data(), rows, x, out.data(), rows);
            const std::vector<double> slow = slowProduct(c, x);
            double scale = 0;
            for (const double v : slow) {
                scale = std::max(scale, std::abs(v));
            }
            for (std::size_t i = 0; i < out.size(); ++i) {
                QCOMPARE(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(portable[i]));
                QVERIFY2(std::abs(out[i] - slow[i]) <= 1e-5 * scale,
                         qPrintable(QStringLiteral("%1×%2×%3 [%4]: %5, slowly %6")
                                        .arg(rows)
                                        .arg(columns)
                                        .arg(count)
                                        .arg(i)
                                        .arg(out[i])
                                        .arg(slow[i])));
            }
        }
    }

    // 8-bit activations stay within a per-block step of the F32 values: the product is close to
    // the exact one.
    void activationsKeepTheirValues() {
        const Case c = makeCase(1, 256, 3, 7);
        const QuantizedActivations x(c.x.data(), 256, 3);
        for (std::size_t col = 0; col < 3; ++col) {
            for (std::size_t i = 0; i < 256; ++i) {
                const auto& block = x.column(col)[i / 32];
                const float value = c.x[col * 256 + i];
                QVERIFY(std::abs(block.scale * block.values[i % 32] - value) <=
                        0.51f * block.scale + 1e-3f * std::abs(value));
                QCOMPARE(block.scale, halfToFloat(floatToHalf(block.scale)));
            }
        }
        // Zero activations: a zero scale and zero products, never NaN.
        const std::vector<float> zeros(64, 0.0f);
        const QuantizedActivations z(zeros.data(), 64, 1);
        QCOMPARE(z.column(0)[0].scale, 0.0f);
        float out[2] = {1, 1};
        const Case w = makeCase(2, 64, 1, 3);
        quantizedProduct(TensorType::Q8_0, w.weights.data(), 2, z, out, 2);
        QCOMPARE(out[0], 0.0f);
        QCOMPARE(out[1], 0.0f);
    }

    // A file may hold −128 (never written by llama.cpp's quantizer): every kernel still sums it
    // right, without saturating.
    void extremeWeights_data() { kernelsAgreeWithSlowSums_data(); }

    void extremeWeights() {
        QFETCH(QString, kernel);
        useInstructionSet(kernel.toStdString());
        Case c = makeCase(4, 64, 4, 11);
        for (std::size_t b = 0; b < c.weights.size() / 34; ++b) {
            std::memset(c.weights.data() + b * 34 + 2, 0x80, 32); // −128 everywhere
        }
        std::fill(c.x.begin(), c.x.end(), -3.0f); // → −127 in every block
        const QuantizedActivations x(c.x.data(), 64, 4);
        std::vector<float> out(16);
        quantizedProduct(TensorType::Q8_0, c.weights.data(), 4, x, out.data(), 4);
        const std::vector<double> slow = slowProduct(c, x);
        for (std::size_t i = 0; i < out.size(); ++i) {
            QVERIFY(std::abs(out[i] - slow[i]) <= 1e-5 * std::abs(slow[i]));
        }
    }

    // The AVX-VNNI set's Q8_0 tiles (avxvnni_as_evex.h: its source with AVX-512 VNNI's encoding of
    // vpdpbusd) on a CPU that runs AVX-512 VNNI but not AVX-VNNI: the portable tiles' bits, on the
    // shapes above and on −128 weights against −127 activations.
    void avxVnniSourceAsEvex() {
        const detail::SetKernels* evex = test::avxVnniKernelsAsEvex();
        if (evex == nullptr) {
            QSKIP(
                "this CPU has no AVX-512 VNNI with VL: the AVX-VNNI set's source not run with that encoding");
        }
        const detail::Q80Kernels& portable = detail::kernelsOf(InstructionSet::Portable).q80;
        useInstructionSet("portable");
        auto run = [](const detail::Q80Kernels& kernels, const Case& c, const QuantizedActivations& x) {
            std::vector<float> out(c.rows * c.count, std::nanf(""));
            const std::size_t blocks = c.columns / 32;
            auto rowAt = [&](std::size_t r) { return c.weights.data() + r * blocks * 34; };
            auto columnAt = [&](std::size_t k) { return x.column(k); };
            detail::runProduct(kernels, c.rows, c.count, blocks, rowAt, columnAt, columnAt, out.data(),
                               c.rows);
            return out;
        };
        std::vector<std::tuple<std::size_t, std::size_t, std::size_t>> shapes(std::begin(kShapes),
                                                                              std::end(kShapes));
        shapes.emplace_back(4, 64, 4); // −128 weights against −127 activations
        for (const auto& [rows, columns, count] : shapes) {
            Case c = makeCase(rows, columns, count, unsigned(rows * 31 + count));
            if (rows == 4) {
                for (std::size_t b = 0; b < c.weights.size() / 34; ++b) {
                    std::memset(c.weights.data() + b * 34 + 2, 0x80, 32);
                }
                std::fill(c.x.begin(), c.x.end(), -3.0f);
            }
            const QuantizedActivations x(c.x.data(), columns, count);
            const QString difference = test::firstBitDifference(run(evex->q80, c, x), run(portable, c, x));
            QVERIFY2(
                difference.isEmpty(),
                qPrintable(QStringLiteral("%1×%2×%3 %4").arg(rows).arg(columns).arg(count).arg(difference)));
        }
    }

    // F16 weights × F16-rounded activations (and the same values as F32 rows): every kernel as the
    // portable one, bit for bit, and as the sums in double; shapes with tile edges.
    // The AVX-512 sets twice: with their 512-bit F16 tiles and with the 256-bit ones that CPUs
    // splitting 512-bit operations take.
    void f16KernelsAgree_data() {
        QTest::addColumn<QString>("kernel");
        QTest::addColumn<int>("tiles");
        for (const InstructionSet set : supportedInstructionSets()) {
            const QString name = QString::fromLatin1(instructionSetName(set));
            if (set == InstructionSet::Avx512 || set == InstructionSet::Avx512Vnni) {
                const QString wide = name + QStringLiteral("/wide");
                const QString narrow = name + QStringLiteral("/narrow");
                QTest::newRow(qPrintable(wide)) << name << int(detail::HalfTiles::Wide);
                QTest::newRow(qPrintable(narrow)) << name << int(detail::HalfTiles::Narrow);
            } else {
                QTest::newRow(qPrintable(name)) << name << int(detail::HalfTiles::Auto);
            }
        }
    }

    void f16KernelsAgree() {
        QFETCH(QString, kernel);
        QFETCH(int, tiles);
        detail::useHalfTiles(static_cast<detail::HalfTiles>(tiles));
        if (tiles != int(detail::HalfTiles::Auto)) {
            // The tiles asked for are the ones run: 4 × 12 tokens paired, or 4 × 3.
            useInstructionSet(kernel.toStdString());
            const auto& f16 = detail::kernelsOf(activeInstructionSet()).f16;
            const bool wide = tiles == int(detail::HalfTiles::Wide);
            QCOMPARE(f16.wide.columns, wide ? 12 : 3);
            QCOMPARE(f16.wide.pairedColumns, wide);
        }
        std::mt19937 rng(17);
        std::normal_distribution<float> normal;
        for (const auto& [rows, columns, count] :
             {std::tuple<std::size_t, std::size_t, std::size_t>{19, 72, 9},
              {8, 2048, 1},
              // One token with rows past the one-token tile's 4: its rows repeated at the edge.
              {5, 64, 1},
              {3, 8, 1},
              {3, 8, 5},
              {33, 256, 16},
              {5, 8192, 21},
              {8, 64, 24},
              {4, 128, 37},
              // Every width the columns past the last whole wide tile can have.
              {4, 16, 2},
              {4, 16, 13},
              {4, 16, 14},
              {4, 16, 15},
              {4, 16, 17},
              {4, 16, 18},
              {4, 16, 19},
              {4, 16, 20},
              {4, 16, 22},
              {4, 16, 23},
              {9, 16, 64}}) {
            std::vector<std::uint16_t> w(rows * columns);
            for (auto& v : w) {
                v = floatToHalf(0.05f * normal(rng));
            }
            std::vector<float> x(columns * count);
            for (auto& v : x) {
                v = halfToFloat(floatToHalf(normal(rng)));
            }
            std::vector<float> portable(rows * count, std::nanf(""));
            useInstructionSet("portable");
            f16Product(w.data(), rows, HalfActivations(x.data(), columns, count), portable.data(), rows);
            useInstructionSet(kernel.toStdString());
            std::vector<float> out(rows * count, std::nanf(""));
            f16Product(w.data(), rows, HalfActivations(x.data(), columns, count), out.data(), rows);
            // F32 rows holding the same values give the same bits.
            std::vector<float> wide(w.size());
            for (std::size_t i = 0; i < w.size(); ++i) {
                wide[i] = halfToFloat(w[i]);
            }
            std::vector<float> dense(rows * count, std::nanf(""));
            f32Product(wide.data(), columns, rows, columns, x.data(), columns, count, dense.data(), rows);
            QVERIFY(std::memcmp(dense.data(), out.data(), out.size() * sizeof(float)) == 0);
            for (std::size_t c = 0; c < count; ++c) {
                for (std::size_t r = 0; r < rows; ++r) {
                    double sum = 0;
                    double magnitude = 0;
                    for (std::size_t i = 0; i < columns; ++i) {
                        const double term = double(halfToFloat(w[r * columns + i])) * x[c * columns + i];
                        sum += term;
                        magnitude += std::abs(term);
                    }
                    const std::size_t at = r + c * rows;
                    QCOMPARE(std::bit_cast<std::uint32_t>(out[at]),
                             std::bit_cast<std::uint32_t>(portable[at]));
                    QVERIFY2(std::abs(out[at] - sum) <= 1e-6 * magnitude,
                             qPrintable(QStringLiteral("%1×%2×%3 [%4]: %5, slowly %6")
                                            .arg(rows)
                                            .arg(columns)
                                            .arg(count)
                                            .arg(at)
                                            .arg(out[at])
                                            .arg(sum)));
                }
            }
        }
        QVERIFY(hasF16Product(2048));
        QVERIFY(!hasF16Product(2044));
    }

    // The activations every kernel prepares (q8_0 blocks, q8_K super-blocks, F16-rounded values)
    // are the portable code's, bit for bit: ties that round to even, blocks of zeros, a largest
    // magnitude held by several values, NaNs and infinities, F16's subnormals and overflow.
    void activationsAgree_data() { kernelsAgreeWithSlowSums_data(); }

    void activationsAgree() {
        QFETCH(QString, kernel);
        std::mt19937 rng(23);
        std::normal_distribution<float> normal;
        std::vector<float> x(8 * 256);
        for (auto& v : x) {
            v = normal(rng);
        }
        for (int i = 0; i < 32; ++i) {
            x[256 + i] = 0.5f * static_cast<float>(i - 16); // × 127/8 lands on halves
            x[512 + 8 * i] = 0;
        }
        std::fill(x.begin() + 768, x.begin() + 1024, 0.0f); // a super-block of zeros
        x[1024 + 5] = -4.0f;                                // the largest magnitude, twice: the
        x[1024 + 200] = 4.0f;                               // first one sets the sign
        std::vector<float> special = x;                     // only where the portable code says
        special[1536 + 3] = std::nanf("");                  // what happens (q8_K, F16)
        special[1536 + 9] = -std::numeric_limits<float>::infinity();
        special[1792 + 1] = std::bit_cast<float>(0xFFC12345u); // a NaN with a payload
        special[1792 + 2] = 65519.0f;                          // rounds down to 65504
        special[1792 + 3] = 65520.0f;                          // rounds up to infinity
        special[1792 + 4] = 3e-8f;                             // an F16 subnormal
        special[1792 + 5] = -1e-9f;                            // rounds to −0
        special[1792 + 6] = 5.9604645e-8f * 2.5f;              // a subnormal tie, to even
        auto prepared = [&](const std::string& set) {
            useInstructionSet(set);
            const QuantizedActivations blocks(x.data(), 256, 8);
            const Q8KActivations superBlocks(special.data(), 256, 8);
            const HalfActivations halves(special.data(), 256, 8);
            std::vector<std::byte> bytes(8 * 8 * sizeof(QuantizedActivations::Block) + 8 * sizeof(Q8KBlock) +
                                         special.size() * sizeof(std::uint16_t));
            std::byte* at = bytes.data();
            for (std::size_t c = 0; c < 8; ++c) {
                for (std::size_t b = 0; b < 8; ++b) {
                    const auto& block = blocks.column(c)[b];
                    std::memcpy(at, &block.scale, sizeof block.scale);
                    std::memcpy(at + sizeof block.scale, block.values, sizeof block.values);
                    at += sizeof(QuantizedActivations::Block);
                }
                const Q8KBlock& block = *superBlocks.column(c);
                std::memcpy(at, &block.d, sizeof block.d);
                std::memcpy(at + sizeof block.d, block.values, sizeof block.values);
                std::memcpy(at + sizeof block.d + sizeof block.values, block.sums, sizeof block.sums);
                at += sizeof(Q8KBlock);
            }
            std::memcpy(at, halves.pair(0), special.size() * sizeof(std::uint16_t));
            return bytes;
        };
        const std::vector<std::byte> portable = prepared("portable");
        const std::vector<std::byte> fast = prepared(kernel.toStdString());
        // The halves are floatToHalf's, two columns side by side eight values at a time (an odd
        // last column beside zeros), and the F32 fallback rounds to the same values.
        for (const std::size_t count : {std::size_t{8}, std::size_t{7}}) {
            const HalfActivations halves(special.data(), 256, count);
            std::vector<float> rounded(256 * count);
            roundToHalf(special.data(), rounded.size(), rounded.data());
            for (std::size_t c = 0; c < count + count % 2; ++c) {
                for (std::size_t i = 0; i < 256; ++i) {
                    const std::uint16_t expected = c < count ? floatToHalf(special[c * 256 + i]) : 0;
                    QCOMPARE(halves.column(c)[16 * (i / 8) + i % 8], expected);
                    if (c < count) {
                        QCOMPARE(std::bit_cast<std::uint32_t>(rounded[c * 256 + i]),
                                 std::bit_cast<std::uint32_t>(halfToFloat(expected)));
                    }
                }
            }
        }
        QCOMPARE(fast.size(), portable.size());
        for (std::size_t i = 0; i < fast.size(); ++i) {
            QVERIFY2(fast[i] == portable[i], qPrintable(QStringLiteral("byte %1").arg(i)));
        }
    }

    void unknownKernelIsRefused() {
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, useInstructionSet("no-such-kernel"));
        QVERIFY(!supportedInstructionSets().empty());
        QCOMPARE(supportedInstructionSets().back(), InstructionSet::Portable);
        QVERIFY(hasQuantizedProduct(TensorType::Q8_0));
        QVERIFY(!hasQuantizedProduct(TensorType::Q4_K));
    }
};

QTEST_APPLESS_MAIN(TestQuantDot)
#include "tst_quant_dot.moc"
