// K-quant and IQ4 writers: the F16 tensors of the family base quantized with the engine's writers
// give, byte for byte, what llama-quantize wrote into family-base-q4_k_m.gguf (Q4_K and Q6_K
// without an importance matrix), and every tensor of the fixtures in tests/data/quantize
// (llama-quantize --pure, Q2_K … IQ4_XS on the family models and wide-f32, with and without the
// family's importance matrix); the multi-threaded writer gives the bytes of one thread; what
// is written decodes to values near the originals.
#include "gguf/gguf_file.h"
#include "quant/dequant.h"
#include "quant/imatrix_file.h"
#include "quant/quantize.h"
#include "quantize_fixtures.h"
#include "shared_models.h"

#include <QTest>
#include <cmath>

using namespace organ;
using namespace organ::testing;

namespace {

std::vector<float> valuesOf(const GgufFile& file, const TensorInfo& t) {
    std::vector<float> values(static_cast<std::size_t>(t.elements));
    dequantizeRange(t.type, file.tensorData(t), 0, values.size(), values.data());
    return values;
}

// The synthetic importance matrix quantize_fixtures.py gives models without one of their own:
// column j of every matrix but the token embedding weighs 0.25 + (37·j mod 101) / 16.
ImatrixData syntheticImportance(const GgufFile& model) {
    ImatrixData matrix;
    for (const TensorInfo& t : model.tensors()) {
        if (t.ne[1] <= 1 || t.name == "token_embd.weight") {
            continue;
        }
        std::vector<float> weights(static_cast<std::size_t>(t.ne[0]));
        for (std::size_t j = 0; j < weights.size(); ++j) {
            weights[j] = 0.25f + static_cast<float>((37 * j) % 101) / 16.0f;
        }
        matrix.entries.emplace(t.name, ImatrixEntry{std::move(weights), {1.0f}});
    }
    return matrix;
}

QString modelOfFixture(const QString& fixture) {
    const QString stem = fixture.section(QLatin1Char('.'), 0, 0);
    return sharedModel(
        (stem.startsWith(QStringLiteral("wide")) ? QStringLiteral("quant/") : QStringLiteral("family/")) +
        stem + QStringLiteral(".gguf"));
}

} // namespace

class TestQuantizeKQuants : public QObject {
    Q_OBJECT

private slots:
    // family-base-q4_k_m.gguf is llama-quantize's Q4_K_M of family-base-f16.gguf: every tensor it
    // quantized is, encoded again from the F16 values, the same bytes.
    void matchesTheFamilyQ4KM() {
        const QString sourcePath = sharedModel(QStringLiteral("family/family-base-f16.gguf"));
        const QString quantizedPath = sharedModel(QStringLiteral("family/family-base-q4_k_m.gguf"));
        ORGAN_REQUIRE_SHARED(sourcePath);
        ORGAN_REQUIRE_SHARED(quantizedPath);
        const auto source = GgufFile::open(sourcePath.toStdString());
        const auto quantized = GgufFile::open(quantizedPath.toStdString());
        std::map<TensorType, std::uint64_t> blocks;
        for (const TensorInfo& t : quantized->tensors()) {
            if (!traitsOf(t.type).quantized) {
                continue;
            }
            const TensorInfo* s = source->findTensor(t.name);
            QVERIFY2(s != nullptr && s->type == TensorType::F16, t.name.c_str());
            QVERIFY2(canQuantizeTo(t.type), t.name.c_str());
            const std::vector<float> values = valuesOf(*source, *s);
            std::vector<std::byte> ours(static_cast<std::size_t>(t.bytes));
            quantizeRows(t.type, values.data(), values.size() / t.ne[0], t.ne[0], nullptr, ours.data());
            const auto theirs = quantized->tensorData(t);
            if (!std::equal(ours.begin(), ours.end(), theirs.begin(), theirs.end())) {
                QFAIL(qPrintable(QString::fromStdString(t.name) + QStringLiteral(" (") +
                                 QString::fromUtf8(tensorTypeName(t.type).data()) + QStringLiteral("): ") +
                                 blockMismatch(ours, theirs, traitsOf(t.type).bytesPerBlock)));
            }
            blocks[t.type] += t.bytes / traitsOf(t.type).bytesPerBlock;
        }
        QCOMPARE(blocks.size(), std::size_t(2));
        for (const auto& [type, count] : blocks) {
            qInfo("%s: %llu blocks identical", tensorTypeName(type).data(),
                  static_cast<unsigned long long>(count));
        }
    }

    // Every fixture of tests/data/quantize made with --pure: llama-quantize's bytes for each tensor
    // it quantized, from F32/F16, with the family's importance matrix (.imatrix) or the synthetic
    // one (.synthetic) where the name says so.
    void matchesLlamaQuantize_data() {
        QTest::addColumn<QString>("fixture");
        const QStringList names = quantizeFixtureNames(QString());
        QVERIFY2(!names.isEmpty(), "no fixtures in tests/data/quantize");
        for (const QString& name : names) {
            if (!name.contains(QStringLiteral(".mix-"))) {
                QTest::newRow(qPrintable(name)) << name;
            }
        }
    }

    void matchesLlamaQuantize() {
        QFETCH(QString, fixture);
        const auto expected = readQuantizeFixture(fixture);
        QVERIFY(expected && !expected->tensors.empty());
        const QString modelPath = modelOfFixture(fixture);
        ORGAN_REQUIRE_SHARED(modelPath);
        std::optional<ImatrixData> matrix;
        if (fixture.endsWith(QStringLiteral(".imatrix"))) {
            const QString imatrix = sharedReference(QStringLiteral("family/family-base-imatrix.gguf"));
            ORGAN_REQUIRE_SHARED(imatrix);
            matrix = readImatrix(imatrix.toStdString());
        }
        const auto source = GgufFile::open(modelPath.toStdString());
        if (fixture.endsWith(QStringLiteral(".synthetic"))) {
            matrix = syntheticImportance(*source);
        }
        std::uint64_t blocks = 0;
        for (const ExpectedTensor& e : expected->tensors) {
            const TensorInfo* t = source->findTensor(e.name);
            QVERIFY2(t != nullptr, e.name.c_str());
            QVERIFY(t->type == TensorType::F32 || t->type == TensorType::F16);
            const std::vector<float> values = valuesOf(*source, *t);
            // llama-quantize quantizes a tensor the matrix has no weights for without any.
            const ImatrixEntry* entry = matrix ? matrix->find(e.name) : nullptr;
            const std::vector<float> weights = entry != nullptr ? entry->means() : std::vector<float>{};
            std::vector<std::byte> ours(static_cast<std::size_t>(storedBytes(e.type, t->elements)));
            QCOMPARE(ours.size() / traitsOf(e.type).bytesPerBlock, std::size_t(e.blocks));
            quantizeRows(e.type, values.data(), values.size() / t->ne[0], t->ne[0],
                         weights.empty() ? nullptr : weights.data(), ours.data());
            if (Sha256::hex(ours) != e.sha256) {
                QFAIL(qPrintable(quantizeMismatch(fixture, e, ours)));
            }
            blocks += e.blocks;
        }
        qInfo("%s: %zu tensors, %llu blocks identical", qPrintable(fixture), expected->tensors.size(),
              static_cast<unsigned long long>(blocks));
    }

    // Rows split across threads give the bytes of one thread, with and without importance.
    void threadsGiveTheSameBytes_data() {
        QTest::addColumn<int>("type");
        for (TensorType t :
             {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
              TensorType::IQ4_NL, TensorType::IQ4_XS, TensorType::Q4_0, TensorType::Q5_1}) {
            QTest::newRow(tensorTypeName(t).data()) << int(t);
        }
    }

    void threadsGiveTheSameBytes() {
        QFETCH(int, type);
        const auto t = static_cast<TensorType>(type);
        constexpr std::size_t kColumns = 512;
        constexpr std::size_t kRows = 37;
        std::vector<float> values(kColumns * kRows);
        std::vector<float> importance(kColumns);
        for (std::size_t i = 0; i < values.size(); ++i) {
            values[i] = std::sin(0.37f * float(i)) * (1.0f + float(i % 23)) / 40.0f;
        }
        for (std::size_t i = 0; i < kColumns; ++i) {
            importance[i] = 0.1f + float(i % 7);
        }
        for (const float* weights : std::vector<const float*>{nullptr, importance.data()}) {
            std::vector<std::byte> one(storedBytes(t, values.size()));
            quantizeRows(t, values.data(), kRows, kColumns, weights, one.data());
            for (unsigned threads : {2u, 3u, 8u, 0u}) {
                std::vector<std::byte> many(one.size());
                requantizeRowsParallel(TensorType::F32, std::as_bytes(std::span(values)), 0, kRows, kColumns,
                                       t, weights, many.data(), threads);
                QVERIFY2(
                    many == one,
                    qPrintable(
                        QStringLiteral("%1 threads, importance %2").arg(threads).arg(weights != nullptr)));
            }
        }
    }

    // Decoding what was written gives values near the originals: the layouts are the readers'.
    void roundTripIsClose_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<bool>("weighted");
        // Of the super-block's largest magnitude; weighted fits trade the error of light columns for
        // that of heavy ones, so a value may land half as far again.
        QTest::addColumn<double>("tolerance");
        const std::pair<TensorType, double> types[] = {{TensorType::Q2_K, 0.45},  {TensorType::Q3_K, 0.25},
                                                       {TensorType::Q4_K, 0.12},  {TensorType::Q5_K, 0.06},
                                                       {TensorType::Q6_K, 0.03},  {TensorType::IQ4_NL, 0.12},
                                                       {TensorType::IQ4_XS, 0.12}};
        for (const auto& [type, tolerance] : types) {
            for (bool weighted : {false, true}) {
                QTest::addRow("%s%s", tensorTypeName(type).data(), weighted ? " weighted" : "")
                    << int(type) << weighted << (weighted ? 1.5 * tolerance : tolerance);
            }
        }
    }

    void roundTripIsClose() {
        QFETCH(int, type);
        QFETCH(bool, weighted);
        QFETCH(double, tolerance);
        const auto t = static_cast<TensorType>(type);
        constexpr std::size_t kColumns = 1024;
        std::vector<float> values(kColumns);
        for (std::size_t i = 0; i < values.size(); ++i) {
            values[i] = std::sin(0.1f * float(i)) * (1.0f + float(i % 17)) * ((i / 256) == 2 ? 0.0f : 1.0f);
        }
        std::vector<float> importance(kColumns);
        for (std::size_t i = 0; i < kColumns; ++i) {
            importance[i] = 0.5f + float(i % 5);
        }
        std::vector<std::byte> bytes(storedBytes(t, values.size()));
        quantizeRows(t, values.data(), 1, kColumns, weighted ? importance.data() : nullptr, bytes.data());
        std::vector<float> back(values.size());
        dequantizeBlocks(t, bytes.data(), values.size() / traitsOf(t).blockSize, back.data());
        for (std::size_t s = 0; s < kColumns / 256; ++s) {
            float amax = 0;
            for (std::size_t j = 0; j < 256; ++j) {
                amax = std::max(amax, std::abs(values[s * 256 + j]));
            }
            for (std::size_t j = 0; j < 256; ++j) {
                const std::size_t i = s * 256 + j;
                QVERIFY2(std::abs(back[i] - values[i]) <= tolerance * amax + 1e-7,
                         qPrintable(QStringLiteral("%1: %2 -> %3").arg(i).arg(values[i]).arg(back[i])));
            }
        }
    }
};

QTEST_APPLESS_MAIN(TestQuantizeKQuants)
#include "tst_quantize_kquants.moc"
