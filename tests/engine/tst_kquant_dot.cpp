// K-quant and IQ4 weights × 8-bit activations (quant/kquant_dot.h): q8_K quantization and blocks
// worked out by hand, then every type on random blocks against the dequantized weights times the
// dequantized activations, summed slowly in double, on every kernel this CPU runs; the kernels
// give the same bits as the portable one.
#include "avxvnni_as_evex.h"
#include "quant/dequant.h"
#include "quant/kquant_dot.h"
#include "quant/kquant_unpack.h"
#include "quant/quant_dot.h"
#include "support/instruction_set.h"

#include <QTest>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>

using namespace organ;

namespace {

void putHalf(std::vector<std::byte>& block, std::size_t at, float value) {
    const std::uint16_t bits = floatToHalf(value);
    std::memcpy(block.data() + at, &bits, 2);
}

void putByte(std::vector<std::byte>& block, std::size_t at, unsigned value) {
    block[at] = static_cast<std::byte>(value);
}

// Where each type keeps its float factors (d, and dmin for the types with minimums).
struct Factors {
    std::size_t d;
    std::ptrdiff_t dmin; // −1: none
};

Factors factorsOf(TensorType type) {
    switch (type) {
    case TensorType::Q2_K:
        return {80, 82};
    case TensorType::Q3_K:
        return {108, -1};
    case TensorType::Q4_K:
    case TensorType::Q5_K:
        return {0, 2};
    case TensorType::Q6_K:
        return {208, -1};
    default: // IQ4_XS, IQ4_NL
        return {0, -1};
    }
}

// Random blocks of `type`: every byte random but the float factors, which are small normal
// halves (random bits could be infinities or NaN).
std::vector<std::byte> randomBlocks(TensorType type, std::size_t blocks, std::mt19937& rng) {
    const TensorTypeTraits& traits = traitsOf(type);
    std::vector<std::byte> out(blocks * traits.bytesPerBlock);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> factor(1e-3f, 2e-2f);
    const Factors at = factorsOf(type);
    for (std::size_t b = 0; b < blocks; ++b) {
        std::vector<std::byte> block(traits.bytesPerBlock);
        for (auto& v : block) {
            v = static_cast<std::byte>(byte(rng));
        }
        putHalf(block, at.d, factor(rng));
        if (at.dmin >= 0) {
            putHalf(block, static_cast<std::size_t>(at.dmin), factor(rng));
        }
        std::memcpy(out.data() + b * traits.bytesPerBlock, block.data(), block.size());
    }
    return out;
}

std::vector<float> randomActivations(std::size_t n, std::mt19937& rng) {
    std::normal_distribution<float> normal;
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) {
        // Some super-blocks ten times wider than others, as hidden states are.
        x[i] = normal(rng) * ((i / 256) % 3 == 1 ? 10.0f : 1.0f);
    }
    return x;
}

// 256 zeros but 127 at position k: q8_K makes that exactly −1 · −127 (and q8_0 1 · 127), so a
// row's product is 127 times its weight at k, exactly.
std::vector<float> oneHot(std::size_t n, std::size_t k) {
    std::vector<float> x(n, 0.0f);
    x[k] = 127.0f;
    return x;
}

// weights · x on `kernel`: IQ4_NL against q8_0 blocks, the others against q8_K.
std::vector<float> product(TensorType t, const std::vector<std::byte>& weights, std::size_t rows,
                           std::size_t columns, const std::vector<float>& x, std::size_t count,
                           const std::string& kernel) {
    useInstructionSet(kernel);
    std::vector<float> out(rows * count, std::nanf(""));
    if (t == TensorType::IQ4_NL) {
        quantizedProduct(t, weights.data(), rows, QuantizedActivations(x.data(), columns, count), out.data(),
                         rows);
    } else {
        q8KProduct(t, weights.data(), rows, Q8KActivations(x.data(), columns, count), out.data(), rows);
    }
    return out;
}

// The dequantized weights times the dequantized activations in double: per output its value and
// the sum of the magnitudes of its terms.
std::vector<double> slowProduct(TensorType t, const std::vector<std::byte>& weights, std::size_t rows,
                                std::size_t columns, const std::vector<float>& x, std::size_t count) {
    std::vector<float> w(rows * columns);
    dequantizeBlocks(t, weights.data(), rows * columns / traitsOf(t).blockSize, w.data());
    // The activations as the product sees them.
    std::vector<double> xs(columns * count);
    if (t == TensorType::IQ4_NL) {
        const QuantizedActivations q(x.data(), columns, count);
        for (std::size_t i = 0; i < xs.size(); ++i) {
            const auto& b = q.column(i / columns)[(i % columns) / 32];
            xs[i] = double(b.scale) * b.values[i % 32];
        }
    } else {
        const Q8KActivations q(x.data(), columns, count);
        for (std::size_t i = 0; i < xs.size(); ++i) {
            const Q8KBlock& b = q.column(i / columns)[(i % columns) / 256];
            xs[i] = double(b.d) * b.values[i % 256];
        }
    }
    std::vector<double> out(2 * rows * count);
    for (std::size_t c = 0; c < count; ++c) {
        for (std::size_t r = 0; r < rows; ++r) {
            double sum = 0;
            double magnitude = 0;
            for (std::size_t i = 0; i < columns; ++i) {
                const double term = double(w[r * columns + i]) * xs[c * columns + i];
                sum += term;
                magnitude += std::abs(term);
            }
            out[2 * (r + c * rows)] = sum;
            out[2 * (r + c * rows) + 1] = magnitude;
        }
    }
    return out;
}

} // namespace

class TestKQuantDot : public QObject {
    Q_OBJECT

private slots:
    // The block ggml's quantize_row_q8_K makes: the first value of largest magnitude becomes −127,
    // ties round to even, the sums of 16.
    void q8KQuantization() {
        std::vector<float> x(3 * 256, 0.0f);
        for (int j = 0; j < 256; ++j) {
            x[j] = (j % 2 == 0 ? -0.5f : 0.5f) * static_cast<float>(j / 2); // ±63.5 at 254 and 255
            x[256 + j] = -x[j];
        }
        x[1] = 0.25f; // × 2 = 0.5 → 0
        x[3] = 0.75f; // × 2 = 1.5 → 2
        std::vector<Q8KBlock> blocks(3);
        quantizeQ8K(x.data(), x.size(), blocks.data());
        // −63.5 comes first: d = −63.5 / −127.
        QCOMPARE(blocks[0].d, 0.5f);
        QCOMPARE(blocks[0].values[254], std::int8_t(-127));
        QCOMPARE(blocks[0].values[255], std::int8_t(127));
        QCOMPARE(blocks[0].values[100], std::int8_t(-50));
        QCOMPARE(blocks[0].values[1], std::int8_t(0));
        QCOMPARE(blocks[0].values[3], std::int8_t(2));
        QCOMPARE(blocks[0].sums[0], std::int16_t(1)); // the pairs ∓i cancel but for j = 3
        QCOMPARE(blocks[0].sums[15], std::int16_t(0));
        // Negated: +63.5 first, d = −0.5 and the same levels as before the ties.
        QCOMPARE(blocks[1].d, -0.5f);
        QCOMPARE(blocks[1].values[254], std::int8_t(-127));
        QCOMPARE(blocks[1].values[3], std::int8_t(1));
        QCOMPARE(blocks[2].d, 0.0f);
        QCOMPARE(blocks[2].values[7], std::int8_t(0));
        QCOMPARE(blocks[2].sums[3], std::int16_t(0));
        const Q8KActivations columns(x.data(), 256, 3);
        QCOMPARE(columns.column(1)->d, -0.5f);
        QCOMPARE(columns.column(2)->d, 0.0f);
    }

    // One weight of a block laid out by hand, read through the product with a one-hot column.
    void handComputedBlocks_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("position");
        QTest::addColumn<float>("weight");
        // Q2_K: d 1, dmin 0.5; element 90 is bits 4-5 of qs[26] (2) with scales[5] = 0x3A (scale 10,
        // min 3): 1 · 10 · 2 − 0.5 · 3. Element 241: bits 6-7 of qs[49] (3), scales[15] = 0x21.
        QTest::newRow("Q2_K 90") << int(TensorType::Q2_K) << 90 << 18.5f;
        QTest::newRow("Q2_K 241") << int(TensorType::Q2_K) << 241 << 2.0f;
        // Q3_K: d 0.5; element 200 is bits 4-5 of qs[40] (3), hmask[8] bit 6 set (no −4), scale 12
        // from the high nibble of byte 4 (5) and bits 6-7 of byte 8 (2): 5 + 32 − 32 = 5.
        // Element 3: bits 0-1 of qs[3] (1), hmask bit clear (−4), scale 0 = 14 − 32.
        QTest::newRow("Q3_K 200") << int(TensorType::Q3_K) << 200 << 7.5f;
        QTest::newRow("Q3_K 3") << int(TensorType::Q3_K) << 3 << 27.0f;
        // Q4_K: d 0.25, dmin 2; element 230 is the high nibble of qs[102] (11) in sub-block 7, scale
        // 5 + 16 (bits 6-7 of byte 3), min 9 + 48 (bits 6-7 of byte 7). Element 40: high nibble of
        // qs[8] (15), sub-block 1: scale 7, min 2.
        QTest::newRow("Q4_K 230") << int(TensorType::Q4_K) << 230 << -56.25f;
        QTest::newRow("Q4_K 40") << int(TensorType::Q4_K) << 40 << 22.25f;
        // Q5_K: d 1, dmin 1; element 70 is the low nibble of qs[38] (9) plus bit 2 of qh[6] (16),
        // sub-block 2: scale 3, min 4.
        QTest::newRow("Q5_K 70") << int(TensorType::Q5_K) << 70 << 71.0f;
        // Q6_K: d 0.5; element 170 is the low nibble of ql[106] (7) with bits 2-3 of qh[42] (2):
        // 7 + 32 − 32, scale −3.
        QTest::newRow("Q6_K 170") << int(TensorType::Q6_K) << 170 << -10.5f;
        // IQ4_XS: d 0.5; element 100 is the low nibble of qs[52] (14: level 89), sub-block 3: scale
        // 7 (high nibble of scales_l[1]) + 16 (bits 6-7 of scales_h) − 32.
        QTest::newRow("IQ4_XS 100") << int(TensorType::IQ4_XS) << 100 << -400.5f;
        // IQ4_NL: d 0.25; element 20 is the high nibble of qs[4] (1: −104); element 3 the low nibble
        // of qs[3] (15: 113).
        QTest::newRow("IQ4_NL 20") << int(TensorType::IQ4_NL) << 20 << -26.0f;
        QTest::newRow("IQ4_NL 3") << int(TensorType::IQ4_NL) << 3 << 28.25f;
    }

    void handComputedBlocks() {
        QFETCH(int, type);
        QFETCH(int, position);
        QFETCH(float, weight);
        const auto t = static_cast<TensorType>(type);
        std::vector<std::byte> block(traitsOf(t).bytesPerBlock);
        switch (t) {
        case TensorType::Q2_K:
            putHalf(block, 80, 1.0f);
            putHalf(block, 82, 0.5f);
            putByte(block, 5, 0x3A);
            putByte(block, 15, 0x21);
            putByte(block, 16 + 26, 0x20);
            putByte(block, 16 + 49, 0xC0);
            break;
        case TensorType::Q3_K:
            putHalf(block, 108, 0.5f);
            putByte(block, 8, 0x40);
            putByte(block, 32 + 40, 0x30);
            putByte(block, 32 + 3, 0x01);
            putByte(block, 96 + 0, 0x0E);
            putByte(block, 96 + 4, 0x50);
            putByte(block, 96 + 8, 0x80);
            break;
        case TensorType::Q4_K:
            putHalf(block, 0, 0.25f);
            putHalf(block, 2, 2.0f);
            putByte(block, 4 + 1, 0x07);
            putByte(block, 4 + 3, 0x40);
            putByte(block, 4 + 5, 0x02);
            putByte(block, 4 + 7, 0xC0);
            putByte(block, 4 + 11, 0x95);
            putByte(block, 16 + 102, 0xB0);
            putByte(block, 16 + 8, 0xF0);
            break;
        case TensorType::Q5_K:
            putHalf(block, 0, 1.0f);
            putHalf(block, 2, 1.0f);
            putByte(block, 4 + 2, 3);
            putByte(block, 4 + 6, 4);
            putByte(block, 16 + 6, 0x04);
            putByte(block, 48 + 38, 0x09);
            break;
        case TensorType::Q6_K:
            putHalf(block, 208, 0.5f);
            putByte(block, 106, 0x07);
            putByte(block, 128 + 42, 0x08);
            putByte(block, 192 + 10, 0xFD);
            break;
        case TensorType::IQ4_XS:
            putHalf(block, 0, 0.5f);
            putByte(block, 2, 0x40);
            putByte(block, 4 + 1, 0x70);
            putByte(block, 8 + 52, 0x0E);
            break;
        default: // IQ4_NL
            putHalf(block, 0, 0.25f);
            putByte(block, 2 + 3, 0x0F);
            putByte(block, 2 + 4, 0x10);
            break;
        }
        const std::size_t n = traitsOf(t).blockSize;
        const std::vector<float> x = oneHot(n, static_cast<std::size_t>(position));
        float out = std::nanf("");
        if (t == TensorType::IQ4_NL) {
            const QuantizedActivations q(x.data(), n, 1);
            quantizedProduct(t, block.data(), 1, q, &out, 1);
        } else {
            const Q8KActivations q(x.data(), n, 1);
            q8KProduct(t, block.data(), 1, q, &out, 1);
        }
        QCOMPARE(out, 127.0f * weight);
        // The dequantizer reads the same weight there.
        std::vector<float> values(n);
        dequantizeBlocks(t, block.data(), 1, values.data());
        QCOMPARE(values[static_cast<std::size_t>(position)], weight);
    }

    void cleanup() { useInstructionSet(instructionSetName(supportedInstructionSets().front())); }

    // Random blocks of every type, on every kernel: the product equals the dequantized weights
    // times the dequantized activations up to float rounding, on rows of one to several
    // super-blocks and several columns, and has the portable kernel's bits.
    void kernelsAgreeWithSlowSums_data() {
        QTest::addColumn<QString>("kernel");
        QTest::addColumn<int>("type");
        for (const InstructionSet set : supportedInstructionSets()) {
            const std::string kernel(instructionSetName(set));
            for (const TensorType t : {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
                                       TensorType::Q6_K, TensorType::IQ4_XS, TensorType::IQ4_NL}) {
                const std::string row = kernel + " " + std::string(tensorTypeName(t));
                QTest::newRow(row.c_str()) << QString::fromStdString(kernel) << int(t);
            }
        }
        const auto& supported = supportedInstructionSets();
        for (const InstructionSet set : knownInstructionSets()) {
            if (std::find(supported.begin(), supported.end(), set) == supported.end()) {
                qInfo("kernel %s: this CPU cannot run it, not tested", instructionSetName(set).data());
            }
        }
    }

    void kernelsAgreeWithSlowSums() {
        QFETCH(QString, kernel);
        QFETCH(int, type);
        const auto t = static_cast<TensorType>(type);
        const std::size_t blockSize = traitsOf(t).blockSize;
        std::mt19937 rng(static_cast<unsigned>(type));
        for (const auto& [rows, columns, count] :
             {std::tuple<std::size_t, std::size_t, std::size_t>{5, 256, 3},
              {3, 1024, 4},
              {2, 2048, 1},
              {7, 768, 1},
              {19, 512, 9},
              {3, 8192, 37}}) {
            const std::vector<std::byte> weights = randomBlocks(t, rows * columns / blockSize, rng);
            const std::vector<float> x = randomActivations(columns * count, rng);
            const std::vector<float> portable = product(t, weights, rows, columns, x, count, "portable");
            const std::vector<float> out = product(t, weights, rows, columns, x, count, kernel.toStdString());
            const std::vector<double> slow = slowProduct(t, weights, rows, columns, x, count);
            for (std::size_t i = 0; i < out.size(); ++i) {
                QVERIFY2(std::abs(out[i] - slow[2 * i]) <= 1e-5 * slow[2 * i + 1],
                         qPrintable(QStringLiteral("%1×%2 [%3]: %4, slowly %5")
                                        .arg(rows)
                                        .arg(columns)
                                        .arg(i)
                                        .arg(out[i])
                                        .arg(slow[2 * i])));
                QCOMPARE(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(portable[i]));
            }
        }
    }

    // The AVX-VNNI set's K-quant tiles (avxvnni_as_evex.h: its source with AVX-512 VNNI's encoding
    // of vpdpbusd and vpdpwssd) on a CPU that runs AVX-512 VNNI but not AVX-VNNI: the portable
    // tiles' bits for every type that meets q8_K, a batch (the 4 × 2 tile) and one token (8 × 1).
    void avxVnniSourceAsEvex() {
        const detail::SetKernels* evex = test::avxVnniKernelsAsEvex();
        if (evex == nullptr) {
            QSKIP(
                "this CPU has no AVX-512 VNNI with VL: the AVX-VNNI set's source not run with that encoding");
        }
        const detail::KQuantKernels& portable = detail::kernelsOf(InstructionSet::Portable).kQuant;
        useInstructionSet("portable");
        for (const TensorType t : {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
                                   TensorType::Q6_K, TensorType::IQ4_XS}) {
            std::mt19937 rng(static_cast<unsigned>(t) + 100);
            const detail::UnpackFn unpack = detail::superBlockUnpacker(t);
            QVERIFY(unpack != nullptr);
            for (const auto& [rows, columns, count] :
                 {std::tuple<std::size_t, std::size_t, std::size_t>{5, 256, 3},
                  {19, 512, 9},
                  {7, 768, 1},
                  {3, 8192, 37}}) {
                const std::size_t blocks = columns / 256;
                const std::vector<std::byte> weights = randomBlocks(t, rows * blocks, rng);
                std::vector<detail::Unpacked> unpacked(rows * blocks);
                for (std::size_t i = 0; i < unpacked.size(); ++i) {
                    unpack(weights.data() + i * traitsOf(t).bytesPerBlock, unpacked[i]);
                }
                const std::vector<float> values = randomActivations(columns * count, rng);
                const Q8KActivations x(values.data(), columns, count);
                auto run = [&](const detail::KQuantKernels& kernels) {
                    std::vector<float> out(rows * count, std::nanf(""));
                    auto rowAt = [&](std::size_t r) { return unpacked.data() + r * blocks; };
                    auto columnAt = [&](std::size_t c) { return x.column(c); };
                    detail::runProduct(kernels, rows, count, blocks, rowAt, columnAt, columnAt, out.data(),
                                       rows);
                    return out;
                };
                const QString difference = test::firstBitDifference(run(evex->kQuant), run(portable));
                QVERIFY2(difference.isEmpty(),
                         qPrintable(QStringLiteral("%1 %2×%3×%4 %5")
                                        .arg(QString::fromLatin1(tensorTypeName(t).data()))
                                        .arg(rows)
                                        .arg(columns)
                                        .arg(count)
                                        .arg(difference)));
            }
        }
    }

    // Every instruction set's unpacker gives the portable one's unpacked super-block.
    void unpackersAgree() {
        std::mt19937 rng(5);
        for (const TensorType t : {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
                                   TensorType::Q6_K, TensorType::IQ4_XS}) {
            const std::vector<std::byte> blocks = randomBlocks(t, 16, rng);
            const std::size_t bytes = traitsOf(t).bytesPerBlock;
            for (const InstructionSet set : supportedInstructionSets()) {
                for (std::size_t b = 0; b < 16; ++b) {
                    detail::Unpacked portable;
                    detail::Unpacked fast;
                    std::memset(portable.q, 0xA5, sizeof portable.q);
                    std::memset(fast.q, 0x5A, sizeof fast.q);
                    detail::superBlockUnpacker(t, InstructionSet::Portable)(blocks.data() + b * bytes,
                                                                            portable);
                    detail::superBlockUnpacker(t, set)(blocks.data() + b * bytes, fast);
                    QVERIFY(std::memcmp(portable.q, fast.q, sizeof portable.q) == 0);
                    QVERIFY(std::memcmp(portable.scales, fast.scales, sizeof portable.scales) == 0);
                    QVERIFY(std::memcmp(portable.correction, fast.correction, sizeof portable.correction) ==
                            0);
                    QCOMPARE(fast.d, portable.d);
                    QCOMPARE(fast.dmin * float(fast.hasMins), portable.dmin * float(portable.hasMins));
                    QCOMPARE(fast.hasMins, portable.hasMins);
                    QCOMPARE(fast.wideLevels, portable.wideLevels);
                }
            }
        }
    }

    // Q4_K rows interleaved eight at a time (generation's layout) give q8KProduct's bits on the
    // portable kernel, on every kernel: random blocks, and blocks at the ends of every range
    // (scales and mins 63, levels 15, against activations of +127 and of −127, which fill the
    // 16-bit sums of the kernels without VNNI to ±30 480) and of none (all zero).
    void interleavedQ4KAgrees_data() {
        QTest::addColumn<QString>("kernel");
        for (const InstructionSet set : supportedInstructionSets()) {
            QTest::newRow(instructionSetName(set).data())
                << QString::fromLatin1(instructionSetName(set).data());
        }
    }

    void interleavedQ4KAgrees() {
        QFETCH(QString, kernel);
        std::mt19937 rng(27);
        for (const auto& [rows, columns, count] :
             {std::tuple<std::size_t, std::size_t, std::size_t>{8, 256, 1},
              {16, 2048, 1},
              {40, 768, 1},
              {24, 512, 3}}) {
            const std::size_t blocks = rows * columns / 256;
            std::vector<std::byte> weights = randomBlocks(TensorType::Q4_K, blocks, rng);
            std::vector<float> x = randomActivations(columns * count, rng);
            // Rows 0-7: every byte 0xFF but the factors (then the first eight all zero where the
            // activations are all 127 or all −127 a column).
            for (std::size_t b = 0; b < 8 * columns / 256; ++b) {
                std::memset(weights.data() + b * 144 + 4, rows == 24 ? 0x00 : 0xFF, 140);
            }
            if (rows == 16) {
                // q8_K makes the first value of largest magnitude −127: the others stay +127.
                std::fill(x.begin(), x.end(), 127.0f);
                for (std::size_t b = 0; b < x.size(); b += 256) {
                    x[b] = -127.0f;
                }
            } else if (rows == 40) {
                std::fill(x.begin(), x.end(), -127.0f);
            }
            std::vector<std::byte> interleaved(interleavedQ4KBytes(rows, columns));
            interleaveQ4K(weights.data(), rows, columns, interleaved.data());
            const std::vector<float> expected =
                product(TensorType::Q4_K, weights, rows, columns, x, count, "portable");
            useInstructionSet(kernel.toStdString());
            std::vector<float> out(rows * count, std::nanf(""));
            interleavedQ4KProduct(interleaved.data(), rows, Q8KActivations(x.data(), columns, count),
                                  out.data(), rows);
            for (std::size_t i = 0; i < out.size(); ++i) {
                QVERIFY2(std::bit_cast<std::uint32_t>(out[i]) == std::bit_cast<std::uint32_t>(expected[i]),
                         qPrintable(QStringLiteral("%1 rows × %2 [%3]: %4, q8KProduct %5")
                                        .arg(rows)
                                        .arg(columns)
                                        .arg(i)
                                        .arg(out[i])
                                        .arg(expected[i])));
            }
        }
    }

    // The VNNI sets take the dot products of their own encoding, the others the 16-bit sums; rows
    // that are no multiple of 8 are refused.
    void interleavedQ4KKernelsAndRows() {
        const detail::InterleavedDotFn sums16 = detail::interleavedQ4KDotX86(InstructionSet::Avx2);
        QVERIFY(sums16 != nullptr);
        QVERIFY(detail::interleavedQ4KDotX86(InstructionSet::Avx512) == sums16);
        QVERIFY(detail::interleavedQ4KDotX86(InstructionSet::Avx512Vnni) != sums16);
        QVERIFY(detail::interleavedQ4KDotX86(InstructionSet::AvxVnni) != sums16);
        QVERIFY(detail::interleavedQ4KDotX86(InstructionSet::AvxVnni) !=
                detail::interleavedQ4KDotX86(InstructionSet::Avx512Vnni));
        QVERIFY(detail::interleavedQ4KDotX86(InstructionSet::Portable) == nullptr);
        QCOMPARE(interleavedQ4KBytes(16, 512), std::size_t(2 * 2 * 1184));
        std::vector<std::byte> rows(12 * 144);
        std::vector<std::byte> out(2 * 1184);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, interleaveQ4K(rows.data(), 12, 256, out.data()));
        const std::vector<float> x(256, 1.0f);
        std::vector<float> y(12);
        QVERIFY_THROWS_EXCEPTION(
            std::invalid_argument,
            interleavedQ4KProduct(out.data(), 12, Q8KActivations(x.data(), 256, 1), y.data(), 12));
    }

    void typesThatMeetQ8K() {
        for (const TensorType t : {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
                                   TensorType::Q6_K, TensorType::IQ4_XS}) {
            QVERIFY(hasQ8KProduct(t));
            QVERIFY(!hasQuantizedProduct(t));
        }
        for (const TensorType t : {TensorType::F32, TensorType::F16, TensorType::Q8_0, TensorType::Q4_0,
                                   TensorType::IQ4_NL, TensorType::IQ2_XS, TensorType::Q8_K}) {
            QVERIFY(!hasQ8KProduct(t));
        }
        QVERIFY(hasQuantizedProduct(TensorType::IQ4_NL));
    }
};

QTEST_APPLESS_MAIN(TestKQuantDot)
#include "tst_kquant_dot.moc"
