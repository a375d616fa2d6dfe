// Quantizers: converting stories260K-f32's tensors gives, byte for byte, what
// llama-quantize wrote into the shared quantized files; decoding returns the values.
#include "gguf/gguf_file.h"
#include "quant/dequant.h"
#include "quant/quantize.h"
#include "shared_models.h"
#include "support/instruction_set.h"

#include <QTest>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace organ;
using namespace organ::testing;

class TestQuantize : public QObject {
    Q_OBJECT

private slots:
    void matchesLlamaQuantize_data() {
        QTest::addColumn<QString>("file");
        for (const char* f : {"stories260K-f16.gguf", "stories260K-bf16.gguf", "stories260K-q8_0.gguf",
                              "stories260K-q4_0.gguf", "stories260K-q4_1.gguf", "stories260K-q5_0.gguf",
                              "stories260K-q5_1.gguf"}) {
            QTest::newRow(f) << QString::fromUtf8(f);
        }
    }

    void matchesLlamaQuantize() {
        QFETCH(QString, file);
        ORGAN_REQUIRE_SHARED(sharedModel(file));
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-f32.gguf")));
        const auto source = GgufFile::open(sharedModel(QStringLiteral("stories260K-f32.gguf")).toStdString());
        const auto target = GgufFile::open(sharedModel(file).toStdString());
        int compared = 0;
        for (const auto& t : target->tensors()) {
            if (t.type == TensorType::F32) {
                continue;
            }
            const TensorInfo* s = source->findTensor(t.name);
            QVERIFY(s != nullptr && s->type == TensorType::F32);
            QVERIFY(canQuantizeTo(t.type));
            std::vector<float> values(static_cast<std::size_t>(s->elements));
            std::memcpy(values.data(), source->tensorData(*s).data(), values.size() * 4);
            const auto& traits = traitsOf(t.type);
            std::vector<std::byte> bytes(static_cast<std::size_t>(t.bytes));
            quantizeBlocks(t.type, values.data(), values.size() / traits.blockSize, bytes.data());
            const auto expected = target->tensorData(t);
            QVERIFY2(std::equal(bytes.begin(), bytes.end(), expected.begin(), expected.end()),
                     qPrintable(file + QStringLiteral(": ") + QString::fromStdString(t.name)));
            ++compared;
        }
        QVERIFY(compared >= 5);
    }

    void roundTripIsClose_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<double>("tolerance"); // of the block's largest magnitude
        QTest::newRow("F32") << int(TensorType::F32) << 0.0;
        QTest::newRow("F16") << int(TensorType::F16) << 1e-3;
        QTest::newRow("BF16") << int(TensorType::BF16) << 8e-3;
        QTest::newRow("Q8_0") << int(TensorType::Q8_0) << 1.0 / 127;
        QTest::newRow("Q5_0") << int(TensorType::Q5_0) << 1.0 / 16;
        QTest::newRow("Q5_1") << int(TensorType::Q5_1) << 2.0 / 31;
        QTest::newRow("Q4_0") << int(TensorType::Q4_0) << 1.0 / 8;
        QTest::newRow("Q4_1") << int(TensorType::Q4_1) << 2.0 / 15;
    }

    void roundTripIsClose() {
        QFETCH(int, type);
        QFETCH(double, tolerance);
        const auto t = static_cast<TensorType>(type);
        const auto& traits = traitsOf(t);
        std::vector<float> values(256 * 4);
        for (std::size_t i = 0; i < values.size(); ++i) {
            values[i] = std::sin(0.1f * i) * (1.0f + (i % 17)) *
                        ((i / 256) == 2 ? 0.0f : 1.0f); // one all-zero stretch
        }
        const std::size_t blocks = values.size() / traits.blockSize;
        std::vector<std::byte> bytes(blocks * traits.bytesPerBlock);
        quantizeBlocks(t, values.data(), blocks, bytes.data());
        std::vector<float> back(values.size());
        dequantizeBlocks(t, bytes.data(), blocks, back.data());
        for (std::size_t b = 0; b < blocks; ++b) {
            float amax = 0;
            for (std::size_t j = 0; j < traits.blockSize; ++j) {
                amax = std::max(amax, std::abs(values[b * traits.blockSize + j]));
            }
            for (std::size_t j = 0; j < traits.blockSize; ++j) {
                const std::size_t i = b * traits.blockSize + j;
                QVERIFY2(std::abs(back[i] - values[i]) <= tolerance * amax * 1.01 + 1e-7,
                         qPrintable(QStringLiteral("%1: %2 -> %3").arg(i).arg(values[i]).arg(back[i])));
            }
        }
    }

    // Q8_0's q = round(x / d) rounds halves away from zero, as std::round: exact halves, the floats
    // either side of them, and random blocks of every scale, against the formula in std::round.
    void q8_0RoundsAsStdRound() {
        std::vector<float> values = {127.0f,
                                     0.5f,
                                     1.5f,
                                     2.5f,
                                     -0.5f,
                                     -1.5f,
                                     -2.5f,
                                     126.5f,
                                     -126.5f,
                                     std::nextafter(0.5f, 0.0f),
                                     std::nextafter(0.5f, 1.0f),
                                     std::nextafter(-2.5f, 0.0f),
                                     std::nextafter(-2.5f, -3.0f),
                                     -0.0f,
                                     0.0f};
        values.resize(32, 63.5f);
        std::mt19937 rng(8);
        std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
        for (int block = 0; block < 4000; ++block) {
            const float scale = std::ldexp(1.0f, block % 40 - 20);
            for (int j = 0; j < 32; ++j) {
                values.push_back(uniform(rng) * scale);
            }
        }
        const std::size_t blocks = values.size() / 32;
        std::vector<std::byte> bytes(blocks * 34);
        quantizeBlocks(TensorType::Q8_0, values.data(), blocks, bytes.data());
        for (std::size_t b = 0; b < blocks; ++b) {
            const float* x = values.data() + 32 * b;
            float amax = 0.0f;
            for (int j = 0; j < 32; ++j) {
                amax = std::max(amax, std::fabs(x[j]));
            }
            const float d = amax / 127.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            for (int j = 0; j < 32; ++j) {
                const auto want = static_cast<std::int8_t>(std::round(x[j] * id));
                QCOMPARE(static_cast<std::int8_t>(bytes[34 * b + 2 + static_cast<std::size_t>(j)]), want);
            }
        }
    }

    // Every instruction set writes Q8_0 as the portable encoder does, bit for bit: random blocks,
    // exact halves, and blocks holding NaN, infinities, zeros only and subnormal numbers.
    void q8_0AlikeOnEveryInstructionSet() {
        std::mt19937 rng(3);
        std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
        std::vector<float> values;
        for (int block = 0; block < 2000; ++block) {
            const float scale = std::ldexp(1.0f, block % 60 - 30);
            for (int j = 0; j < 32; ++j) {
                values.push_back(uniform(rng) * scale);
            }
        }
        const float special[] = {std::nanf(""),
                                 -std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::infinity(),
                                 0.0f,
                                 -0.0f,
                                 std::numeric_limits<float>::denorm_min(),
                                 127.0f,
                                 2.5f};
        for (const float s : special) {
            for (int j = 0; j < 32; ++j) {
                values.push_back(j % 3 == 0 ? s : (s == 0.0f ? 0.0f : uniform(rng)));
            }
        }
        // A NaN as each value of a block in turn, among ordinary values.
        for (int at = 0; at < 32; ++at) {
            for (int j = 0; j < 32; ++j) {
                values.push_back(j == at ? std::nanf("") : uniform(rng));
            }
        }
        const std::size_t blocks = values.size() / 32;
        std::vector<std::byte> portable(blocks * 34);
        useInstructionSet("portable");
        quantizeBlocks(TensorType::Q8_0, values.data(), blocks, portable.data());
        for (const InstructionSet set : supportedInstructionSets()) {
            useInstructionSet(instructionSetName(set));
            std::vector<std::byte> out(portable.size(), std::byte{0x5A});
            quantizeBlocks(TensorType::Q8_0, values.data(), blocks, out.data());
            QVERIFY2(out == portable, instructionSetName(set).data());
        }
        useInstructionSet(instructionSetName(supportedInstructionSets().front()));
    }

    // Every instruction set writes F16 and BF16 as floatToHalf and floatToBfloat16 do, bit for
    // bit: random values over the whole range, ties of each kind, NaNs with payloads and signs,
    // infinities, values that round past the largest finite one, subnormal results, ±0, and counts
    // that are no multiple of a vector (the tail written one value at a time).
    void halvesAlikeOnEveryInstructionSet() {
        std::mt19937 rng(5);
        std::vector<float> values;
        for (int i = 0; i < 20000; ++i) {
            values.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
        }
        const std::uint32_t special[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF812345u, 0x7FBFFFFFu,
                                         0x7F800000u, 0xFF800000u, 0x477FEFFFu, 0x477FF000u, 0xC77FF000u,
                                         0x00000001u, 0x80000001u, 0x33000000u, 0x33000001u, 0x387FE000u,
                                         0x387FF000u, 0x38800000u, 0x3F801000u, 0x3F803000u, 0x3F808000u,
                                         0x3F818000u, 0x3F807FFFu, 0x00000000u, 0x80000000u, 0x7F7FFFFFu};
        for (const std::uint32_t bits : special) {
            values.push_back(std::bit_cast<float>(bits));
        }
        for (const TensorType type : {TensorType::F16, TensorType::BF16}) {
            for (const std::size_t count :
                 {values.size(), std::size_t{7}, std::size_t{15}, std::size_t{17}}) {
                // The specials, at the end, are in every count's last values.
                const float* in = values.data() + values.size() - count;
                std::vector<std::byte> want(2 * count);
                for (std::size_t i = 0; i < count; ++i) {
                    const std::uint16_t h =
                        type == TensorType::F16 ? floatToHalf(in[i]) : floatToBfloat16(in[i]);
                    std::memcpy(want.data() + 2 * i, &h, 2);
                }
                for (const InstructionSet set : supportedInstructionSets()) {
                    useInstructionSet(instructionSetName(set));
                    std::vector<std::byte> out(want.size(), std::byte{0x5A});
                    quantizeBlocks(type, in, count, out.data());
                    const QByteArray what = QByteArray(instructionSetName(set).data()) + " " +
                                            tensorTypeName(type).data() + " of " +
                                            QByteArray::number(qulonglong(count));
                    QVERIFY2(out == want, what.constData());
                }
            }
        }
        useInstructionSet(instructionSetName(supportedInstructionSets().front()));
        // The rules themselves, on values whose halves are known.
        QCOMPARE(floatToHalf(65504.0f), std::uint16_t(0x7BFF));
        QCOMPARE(floatToHalf(std::bit_cast<float>(0x477FF000u)), std::uint16_t(0x7C00));
        QCOMPARE(floatToHalf(std::bit_cast<float>(0x33000000u)), std::uint16_t(0x0000)); // 2^-25: tie, even
        QCOMPARE(floatToHalf(std::bit_cast<float>(0x33000001u)), std::uint16_t(0x0001));
        QCOMPARE(floatToHalf(std::bit_cast<float>(0xFF812345u)), std::uint16_t(0xFE00));
    }

    void bfloat16Rounding() {
        QCOMPARE(floatToBfloat16(1.0f), std::uint16_t(0x3F80));
        QCOMPARE(floatToBfloat16(std::bit_cast<float>(0x3F808000u)), std::uint16_t(0x3F80)); // tie: even
        QCOMPARE(floatToBfloat16(std::bit_cast<float>(0x3F818000u)), std::uint16_t(0x3F82));
        QVERIFY(std::isnan(bfloat16ToFloat(floatToBfloat16(std::nanf("")))));
    }

    // Rows decoded and encoded on several threads a piece at a time give the bytes of decoding them
    // whole and encoding them on one: rows that do not divide a piece (5 120 values), more rows
    // than one piece, rows from the middle of the tensor, importance weights, 1 to 3 threads.
    void requantizedRowsAsWhole_data() {
        QTest::addColumn<int>("from");
        QTest::addColumn<int>("to");
        QTest::addColumn<bool>("weighted");
        QTest::newRow("f16 to q8_0") << int(TensorType::F16) << int(TensorType::Q8_0) << false;
        QTest::newRow("q8_0 to q4_k, weighted") << int(TensorType::Q8_0) << int(TensorType::Q4_K) << true;
        QTest::newRow("f32 to iq4_xs, weighted") << int(TensorType::F32) << int(TensorType::IQ4_XS) << true;
    }
    void requantizedRowsAsWhole() {
        QFETCH(int, from);
        QFETCH(int, to);
        QFETCH(bool, weighted);
        const auto source = static_cast<TensorType>(from);
        const auto target = static_cast<TensorType>(to);
        constexpr std::size_t kColumns = 5120;
        constexpr std::size_t kRows = 41;
        std::mt19937 rng(3);
        std::normal_distribution<float> normal(0.0f, 0.02f);
        std::vector<float> values(kColumns * kRows);
        for (float& v : values) {
            v = normal(rng);
        }
        std::vector<std::byte> stored(storedBytes(source, values.size()));
        quantizeRows(source, values.data(), kRows, kColumns, nullptr, stored.data());
        std::vector<float> importance(kColumns);
        for (float& w : importance) {
            w = 0.5f + std::abs(normal(rng)) * 50;
        }
        const float* weights = weighted ? importance.data() : nullptr;
        constexpr std::size_t kFirst = 3;
        constexpr std::size_t kCount = 35;
        std::vector<float> decoded(kCount * kColumns);
        dequantizeRange(source, stored, kFirst * kColumns, decoded.size(), decoded.data());
        std::vector<std::byte> want(storedBytes(target, decoded.size()));
        quantizeRows(target, decoded.data(), kCount, kColumns, weights, want.data());
        for (const unsigned threads : {1u, 2u, 3u}) {
            std::vector<std::byte> got(want.size(), std::byte{0x5A});
            requantizeRowsParallel(source, stored, kFirst, kCount, kColumns, target, weights, got.data(),
                                   threads);
            QVERIFY2(got == want, qPrintable(QStringLiteral("%1 threads").arg(threads)));
        }
    }

    void onlyTheSupportedTypes() {
        int supported = 0;
        for (const auto& traits : allTensorTypes()) {
            supported += canQuantizeTo(traits.type);
        }
        QCOMPARE(supported, 15);
        QVERIFY(canQuantizeTo(TensorType::Q4_K) && canQuantizeTo(TensorType::IQ4_XS));
        QVERIFY(!canQuantizeTo(TensorType::IQ2_XXS) && !canQuantizeTo(TensorType::Q8_K));
    }
};

QTEST_APPLESS_MAIN(TestQuantize)
#include "tst_quantize.moc"
