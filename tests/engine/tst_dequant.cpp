// Dequantization of every tensor type against the values llama.cpp's Python reader gives
// (../shared/reference/dequant-reference.json), and types without reference files against
// their definitions.
#include "fixtures.h"
#include "gguf/gguf_file.h"
#include "quant/dequant.h"
#include "shared_models.h"
#include "support/instruction_set.h"

#include <QTest>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

using namespace organ;
using namespace organ::testing;

namespace {

bool closeAsFloat(double actual, double expected) {
    return std::abs(actual - expected) <= 4e-7 * std::abs(expected) + 1e-12;
}

std::vector<float> decodeAll(const GgufFile& file, const TensorInfo& t) {
    std::vector<float> out(static_cast<std::size_t>(t.elements));
    dequantizeRange(t.type, file.tensorData(t), 0, out.size(), out.data());
    return out;
}

} // namespace

class TestDequant : public QObject {
    Q_OBJECT

    nlohmann::json m_reference;

private slots:
    void initTestCase() {
        const QString path = sharedReference(QStringLiteral("dequant-reference.json"));
        if (!QFileInfo::exists(path)) {
            return; // each data row reports it
        }
        std::ifstream in(path.toStdString());
        m_reference = nlohmann::json::parse(in);
    }

    void matchesReference_data() {
        QTest::addColumn<QString>("file");
        const QStringList files = {
            QStringLiteral("wide-f16.gguf"),     QStringLiteral("wide-bf16.gguf"),
            QStringLiteral("wide-q4_0.gguf"),    QStringLiteral("wide-q4_1.gguf"),
            QStringLiteral("wide-q5_0.gguf"),    QStringLiteral("wide-q5_1.gguf"),
            QStringLiteral("wide-q8_0.gguf"),    QStringLiteral("wide-q2_k.gguf"),
            QStringLiteral("wide-q3_k_m.gguf"),  QStringLiteral("wide-q4_k_m.gguf"),
            QStringLiteral("wide-q5_k_m.gguf"),  QStringLiteral("wide-q6_k.gguf"),
            QStringLiteral("wide-iq1_s.gguf"),   QStringLiteral("wide-iq1_m.gguf"),
            QStringLiteral("wide-iq2_xxs.gguf"), QStringLiteral("wide-iq2_xs.gguf"),
            QStringLiteral("wide-iq2_s.gguf"),   QStringLiteral("wide-iq3_xxs.gguf"),
            QStringLiteral("wide-iq3_s.gguf"),   QStringLiteral("wide-iq4_nl.gguf"),
            QStringLiteral("wide-iq4_xs.gguf"),  QStringLiteral("wide-tq1_0.gguf"),
            QStringLiteral("wide-tq2_0.gguf"),
        };
        for (const QString& f : files) {
            QTest::newRow(qPrintable(f)) << f;
        }
    }

    void matchesReference() {
        QFETCH(QString, file);
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("quant/") + file));
        ORGAN_REQUIRE_SHARED(sharedReference(QStringLiteral("dequant-reference.json")));
        const auto gguf = GgufFile::open(sharedModel(QStringLiteral("quant/") + file).toStdString());
        const auto& expected = m_reference.at(file.toStdString());
        QCOMPARE(expected.size(), gguf->tensors().size());
        for (const auto& t : gguf->tensors()) {
            const auto& ref = expected.at(t.name);
            QCOMPARE(QString::fromStdString(ref.at("dtype").get<std::string>()),
                     QString::fromUtf8(tensorTypeName(t.type)));
            QCOMPARE(ref.at("n").get<std::uint64_t>(), t.elements);
            const std::vector<float> values = decodeAll(*gguf, t);
            const auto& first = ref.at("first");
            for (std::size_t i = 0; i < first.size(); ++i) {
                const double want = first[i].get<double>();
                if (!closeAsFloat(values[i], want)) {
                    QFAIL(qPrintable(QStringLiteral("%1 %2 value %3: %4, expected %5")
                                         .arg(file, QString::fromStdString(t.name))
                                         .arg(i)
                                         .arg(values[i], 0, 'g', 9)
                                         .arg(want, 0, 'g', 9)));
                }
            }
            double sum = 0, sumsq = 0, lo = values[0], hi = values[0];
            for (float v : values) {
                sum += v;
                sumsq += double(v) * v;
                lo = std::min<double>(lo, v);
                hi = std::max<double>(hi, v);
            }
            const double scale = std::sqrt(ref.at("sumsq").get<double>()) * std::sqrt(double(values.size()));
            QVERIFY2(std::abs(sum - ref.at("sum").get<double>()) <= 1e-6 * scale + 1e-9, t.name.c_str());
            QVERIFY2(std::abs(sumsq - ref.at("sumsq").get<double>()) <= 1e-6 * ref.at("sumsq").get<double>(),
                     t.name.c_str());
            QCOMPARE(lo, ref.at("min").get<double>());
            QCOMPARE(hi, ref.at("max").get<double>());
        }
    }

    // Elements [first, first + count) equal the same slice of a whole decode, for every
    // block size, at offsets that start and end inside blocks.
    void rangeEqualsSliceOfWhole() {
        const QString path = sharedModel(QStringLiteral("quant/wide-q4_k_m.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto gguf = GgufFile::open(path.toStdString());
        for (const auto& t : gguf->tensors()) {
            const std::vector<float> whole = decodeAll(*gguf, t);
            for (const auto& [first, count] : std::vector<std::pair<std::uint64_t, std::size_t>>{
                     {0, 1}, {1, 7}, {255, 2}, {100, 1000}, {t.elements - 3, 3}, {t.elements / 2, 257}}) {
                if (first + count > t.elements) {
                    continue;
                }
                std::vector<float> part(count);
                dequantizeRange(t.type, gguf->tensorData(t), first, count, part.data());
                QVERIFY2(std::equal(part.begin(), part.end(), whole.begin() + std::ptrdiff_t(first)),
                         t.name.c_str());
            }
        }
    }

    void halfFloats() {
        QCOMPARE(halfToFloat(0x3C00), 1.0f);
        QCOMPARE(halfToFloat(0xC000), -2.0f);
        QCOMPARE(halfToFloat(0x7BFF), 65504.0f);
        QCOMPARE(halfToFloat(0x0001), std::ldexp(1.0f, -24)); // smallest subnormal
        QCOMPARE(halfToFloat(0x03FF), std::ldexp(1023.0f, -24));
        QCOMPARE(halfToFloat(0x0400), std::ldexp(1.0f, -14)); // smallest normal
        QVERIFY(std::isinf(halfToFloat(0x7C00)) && halfToFloat(0x7C00) > 0);
        QVERIFY(std::isinf(halfToFloat(0xFC00)) && halfToFloat(0xFC00) < 0);
        QVERIFY(std::isnan(halfToFloat(0x7E00)));
        QVERIFY(std::signbit(halfToFloat(0x8000)) && halfToFloat(0x8000) == 0.0f);
        QCOMPARE(bfloat16ToFloat(0x3F80), 1.0f);
        QCOMPARE(bfloat16ToFloat(0xC0A0), -5.0f);
    }

    // Types without a reference file, checked against the format's definition.
    // Every half survives float and back; floats between halves round to nearest even.
    void halfRoundTrip() {
        for (std::uint32_t h = 0; h < 0x10000; ++h) {
            const float f = halfToFloat(std::uint16_t(h));
            if (std::isnan(f)) {
                QVERIFY(std::isnan(halfToFloat(floatToHalf(f))));
                continue;
            }
            QCOMPARE(floatToHalf(f), std::uint16_t(h));
        }
        QCOMPARE(floatToHalf(1.0f + std::ldexp(1.0f, -11)), std::uint16_t(0x3C00)); // tie: even
        QCOMPARE(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), std::uint16_t(0x3C02));
        QCOMPARE(floatToHalf(65520.0f), std::uint16_t(0x7C00));
        QCOMPARE(floatToHalf(65519.0f), std::uint16_t(0x7BFF));
        QCOMPARE(floatToHalf(std::ldexp(1.0f, -25)), std::uint16_t(0)); // tie below the smallest: even
        QCOMPARE(floatToHalf(std::ldexp(3.0f, -26)), std::uint16_t(1));
    }

    void plainTypes() {
        const double f64[3] = {1.5, -2.25, 1e10};
        const std::int8_t i8[3] = {-128, 0, 127};
        const std::int16_t i16[3] = {-32768, 5, 32767};
        const std::int32_t i32[3] = {-7, 1 << 24, 2147483647};
        const std::int64_t i64[3] = {-3, 1ll << 40, 9};
        float out[3];
        dequantizeBlocks(TensorType::F64, reinterpret_cast<const std::byte*>(f64), 3, out);
        QCOMPARE(out[0], 1.5f);
        QCOMPARE(out[2], 1e10f);
        dequantizeBlocks(TensorType::I8, reinterpret_cast<const std::byte*>(i8), 3, out);
        QCOMPARE(out[0], -128.0f);
        QCOMPARE(out[2], 127.0f);
        dequantizeBlocks(TensorType::I16, reinterpret_cast<const std::byte*>(i16), 3, out);
        QCOMPARE(out[0], -32768.0f);
        dequantizeBlocks(TensorType::I32, reinterpret_cast<const std::byte*>(i32), 3, out);
        QCOMPARE(out[1], 16777216.0f);
        QCOMPARE(out[2], 2147483648.0f); // rounded to the nearest float
        dequantizeBlocks(TensorType::I64, reinterpret_cast<const std::byte*>(i64), 3, out);
        QCOMPARE(out[1], 1099511627776.0f);
    }

    void q8_1AndQ8_K() {
        // Q8_1: half d = 0.5, half s (ignored), 32 signed quants.
        std::byte q81[36] = {};
        const std::uint16_t half = 0x3800; // 0.5
        std::memcpy(q81, &half, 2);
        const std::uint16_t s = 0x7C00; // an infinite sum must not leak into the values
        std::memcpy(q81 + 2, &s, 2);
        for (int j = 0; j < 32; ++j) {
            q81[4 + j] = std::byte(static_cast<std::uint8_t>(j - 16));
        }
        float out[256];
        dequantizeBlocks(TensorType::Q8_1, q81, 1, out);
        for (int j = 0; j < 32; ++j) {
            QCOMPARE(out[j], 0.5f * (j - 16));
        }
        // Q8_K: float d, 256 quants, 16 int16 sums (ignored).
        std::byte q8k[292] = {};
        const float d = -0.25f;
        std::memcpy(q8k, &d, 4);
        for (int j = 0; j < 256; ++j) {
            q8k[4 + j] = std::byte(static_cast<std::uint8_t>(j));
        }
        dequantizeBlocks(TensorType::Q8_K, q8k, 1, out);
        for (int j = 0; j < 256; ++j) {
            QCOMPARE(out[j], -0.25f * static_cast<std::int8_t>(j));
        }
    }

    // MXFP4: E8M0 scale byte e means 2^(e-127); nibbles are e2m1 values
    // {0, .5, 1, 1.5, 2, 3, 4, 6} with a sign bit (−0 read as +0, as ggml's levels have it); low
    // nibbles first. Every scale byte on every instruction set, compared bit for bit (QCOMPARE
    // would take any two tiny floats as equal: the subnormal scales of e = 0 and 1 are the ones a
    // decoder gets wrong).
    void mxfp4() {
        static const float e2m1[16] = {0, .5f, 1, 1.5f, 2, 3, 4, 6, 0, -.5f, -1, -1.5f, -2, -3, -4, -6};
        std::vector<std::byte> blocks(17 * 256);
        for (int e = 0; e < 256; ++e) {
            blocks[17 * e] = std::byte(e);
            for (int j = 0; j < 16; ++j) {
                blocks[17 * e + 1 + j] = std::byte(static_cast<std::uint8_t>(j | ((15 - j) << 4)));
            }
        }
        auto bitsOf = [](float v) {
            std::uint32_t bits;
            std::memcpy(&bits, &v, sizeof bits);
            return bits;
        };
        for (const InstructionSet set : supportedInstructionSets()) {
            useInstructionSet(instructionSetName(set));
            std::vector<float> out(32 * 256);
            dequantizeBlocks(TensorType::MXFP4, blocks.data(), 256, out.data());
            for (int e = 0; e < 255; ++e) { // 255: 2^128 is past a float, the doubled levels are not
                const float scale = std::ldexp(1.0f, e - 127);
                for (int j = 0; j < 16; ++j) {
                    QVERIFY2(bitsOf(out[32 * e + j]) == bitsOf(e2m1[j] * scale) &&
                                 bitsOf(out[32 * e + j + 16]) == bitsOf(e2m1[15 - j] * scale),
                             qPrintable(QStringLiteral("e %1, value %2 on %3")
                                            .arg(e)
                                            .arg(j)
                                            .arg(QString::fromLatin1(instructionSetName(set)))));
                }
            }
            QCOMPARE(out[32 * 255 + 7], std::ldexp(12.0f, 127));
        }
        useInstructionSet(instructionSetName(supportedInstructionSets().front()));
    }

    // NVFP4: four UE4M3 scales (one per 16 values), e2m1 nibbles; low nibbles are the
    // first 8 of each group of 16.
    void nvfp4() {
        std::byte block[36] = {};
        const std::uint8_t scales[4] = {0x38 /* 1.0 */, 0x40 /* 2.0 */, 0x00 /* zero */, 0x01 /* 2^-9 */};
        for (int s = 0; s < 4; ++s) {
            block[s] = std::byte(scales[s]);
        }
        for (int j = 0; j < 32; ++j) {
            block[4 + j] = std::byte(static_cast<std::uint8_t>(0x2 | (0xF << 4))); // 1.0 and -6.0
        }
        float out[64];
        dequantizeBlocks(TensorType::NVFP4, block, 1, out);
        const float scale[4] = {1.0f, 2.0f, 0.0f, std::ldexp(1.0f, -9)};
        for (int s = 0; s < 4; ++s) {
            for (int j = 0; j < 8; ++j) {
                QCOMPARE(out[s * 16 + j], 1.0f * scale[s]);
                QCOMPARE(out[s * 16 + 8 + j], -6.0f * scale[s]);
            }
        }
    }

    void q1_0AndQ2_0() {
        std::byte q1[18] = {};
        const std::uint16_t two = 0x4000;
        std::memcpy(q1, &two, 2);
        q1[2] = std::byte(0b10100001);
        float out[128];
        dequantizeBlocks(TensorType::Q1_0, q1, 1, out);
        QCOMPARE(out[0], 2.0f);
        QCOMPARE(out[1], -2.0f);
        QCOMPARE(out[5], 2.0f);
        QCOMPARE(out[7], 2.0f);
        QCOMPARE(out[127], -2.0f);
        std::byte q2[18] = {};
        std::memcpy(q2, &two, 2);
        q2[2] = std::byte(0b11100100); // elements 0..3: 0, 1, 2, 3
        dequantizeBlocks(TensorType::Q2_0, q2, 1, out);
        QCOMPARE(out[0], -2.0f);
        QCOMPARE(out[1], 0.0f);
        QCOMPARE(out[2], 2.0f);
        QCOMPARE(out[3], 4.0f);
        QCOMPARE(out[4], -2.0f);
    }

    // Every type decodes whole blocks without reading past them (ASan checks the bounds).
    void everyTypeDecodes() {
        for (const auto& traits : allTensorTypes()) {
            std::vector<std::byte> block(traits.bytesPerBlock * 2, std::byte{0x11});
            std::vector<float> out(traits.blockSize * 2, -1.0f);
            dequantizeBlocks(traits.type, block.data(), 2, out.data());
            for (float v : out) {
                QVERIFY2(std::isfinite(v), traits.name.data());
            }
        }
    }

    // Every instruction set decodes every type as the portable decoders do, bit for bit: random
    // bytes (NaN and infinite scales included), whole rows of blocks and odd counts of values.
    void everyInstructionSetDecodesAlike() {
        std::mt19937 rng(9);
        std::uniform_int_distribution<int> byte(0, 255);
        for (const auto& traits : allTensorTypes()) {
            const std::size_t blocks = traits.blockSize == 1 ? 1001 : 37;
            std::vector<std::byte> data(traits.bytesPerBlock * blocks);
            for (auto& b : data) {
                b = static_cast<std::byte>(byte(rng));
            }
            std::vector<float> portable(traits.blockSize * blocks);
            useInstructionSet("portable");
            dequantizeBlocks(traits.type, data.data(), blocks, portable.data());
            for (const InstructionSet set : supportedInstructionSets()) {
                useInstructionSet(instructionSetName(set));
                std::vector<float> out(portable.size(), 1.0f);
                dequantizeBlocks(traits.type, data.data(), blocks, out.data());
                QVERIFY2(std::memcmp(out.data(), portable.data(), out.size() * sizeof(float)) == 0,
                         qPrintable(QString::fromLatin1(traits.name) + QStringLiteral(" on ") +
                                    QString::fromLatin1(instructionSetName(set))));
            }
        }
        useInstructionSet(instructionSetName(supportedInstructionSets().front()));
    }
};

QTEST_APPLESS_MAIN(TestDequant)
#include "tst_dequant.moc"
