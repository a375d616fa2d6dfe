// Importance matrices computed with the forward pass (vitals/imatrix_collector.h): what is summed
// and what is passed over, against llama-imatrix's numbers on the family model (values recorded
// by tests/tools/imatrix_reference.py under tests/data/imatrix, and llama-imatrix's own file in
// ../shared/reference/family), progress, cancel and refusals.
#include "fixtures.h"
#include "gguf/gguf_writer.h"
#include "organs/organ_directory.h"
#include "quant/dequant.h"
#include "shared_models.h"
#include "support/errors.h"
#include "vitals/imatrix_collector.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <nlohmann/json.hpp>

using namespace organ;
using namespace organ::testing;

namespace {

std::string readText(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll().toStdString() : std::string();
}

// The model with every F16 tensor widened to F32 (exactly), as `llama-quantize … F32` makes it.
bool writeF32Copy(const QString& source, const QString& target) {
    const auto file = GgufFile::open(source.toStdString());
    GgufWriteSpec spec = specFromFile(*file);
    for (TensorToWrite& t : spec.tensors) {
        if (t.type != TensorType::F16) {
            continue;
        }
        const std::uint64_t n = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
        auto values = std::make_shared<std::vector<float>>(n);
        dequantizeBlocks(TensorType::F16, t.source.bytes.data(), n, values->data());
        t.type = TensorType::F32;
        t.source = {};
        t.source.bytes = std::as_bytes(std::span<const float>(*values));
        t.source.owner = values;
    }
    spec.set("general.file_type", MetaValue::fromU32(0));
    return writeFixture(target, spec);
}

double relative(double mine, double theirs) {
    return std::abs(mine - theirs) / std::max(std::abs(theirs), 1e-30);
}

} // namespace

class TestImatrix : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_f32;

    QString family(const char* name) const {
        return sharedModel(QStringLiteral("family/") + QString::fromLatin1(name));
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    // Layer weights only, products of 16 tokens or more, each token's squares in float; the
    // count is the tokens summed.
    void collectorSumsSquaresOfLayerInputs() {
        ImatrixCollector collector;
        Eigen::MatrixXf input(3, 16);
        for (Eigen::Index t = 0; t < 16; ++t) {
            input.col(t) << 1.0f, -2.0f, 0.5f * float(t);
        }
        collector.add("blk.0.ffn_up.weight", input);
        collector.add("blk.0.ffn_up.weight", input);
        collector.add("output.weight", input);                    // not a layer weight
        collector.add("blk.0.attn_q.weight", input.leftCols(15)); // fewer than 16 tokens
        const ImatrixData data = collector.data({"t.txt"}, 2, 16);
        QCOMPARE(data.entries.size(), std::size_t(1));
        const ImatrixEntry& up = data.entries.at("blk.0.ffn_up.weight");
        QCOMPARE(up.counts, std::vector<float>{32.0f});
        // Σ (t/2)² over t < 16 = 310, twice.
        QCOMPARE(up.sums, (std::vector<float>{32.0f, 128.0f, 620.0f}));
        QCOMPARE(data.datasets, std::vector<std::string>{"t.txt"});
        QCOMPARE(data.chunkCount, 2u);
        QCOMPARE(data.chunkSize, 16u);
        QVERIFY_THROWS_EXCEPTION(FormatError,
                                 collector.add("blk.0.ffn_up.weight", Eigen::MatrixXf::Ones(4, 16)));
    }

    // The F32 family model against llama-imatrix on it, same text and chunking: the counts and
    // chunks exact, every value recorded within 1e-4 relative (issue 26 asks for 1e-3; F32
    // arithmetic throughout gives a few 1e-6), the perplexity estimate as it prints it.
    void agreesWithLlamaImatrix_data() {
        QTest::addColumn<int>("run");
        const nlohmann::json reference = nlohmann::json::parse(
            readText(QStringLiteral(ORGAN_SOURCE_DIR "/tests/data/imatrix/family-base-f32.json")));
        for (std::size_t i = 0; i < reference.at("runs").size(); ++i) {
            const auto& run = reference.at("runs")[i];
            const std::string label =
                run.at("text").get<std::string>() + " -c " + std::to_string(run.at("chunk").get<int>());
            QTest::newRow(label.c_str()) << int(i);
        }
    }

    void agreesWithLlamaImatrix() {
        QFETCH(int, run);
        const QString base = family("family-base-f16.gguf");
        ORGAN_REQUIRE_SHARED(base);
        if (m_f32.isEmpty()) {
            m_f32 = m_dir.filePath(QStringLiteral("family-base-f32.gguf"));
            QVERIFY(writeF32Copy(base, m_f32));
        }
        const nlohmann::json reference = nlohmann::json::parse(readText(
            QStringLiteral(ORGAN_SOURCE_DIR "/tests/data/imatrix/family-base-f32.json")))["runs"][run];
        ImatrixRequest request;
        request.text =
            readText(family("texts/") + QString::fromStdString(reference.at("text").get<std::string>()));
        request.dataset = reference.at("text").get<std::string>();
        request.chunk = reference.at("chunk").get<std::size_t>();
        const ModelWeights model = ModelWeights::ofModel(openModel(m_f32.toStdString()));
        const std::optional<ImatrixRun> computed = collectImatrix(model, request);
        QVERIFY(computed.has_value());
        QCOMPARE(computed->matrix.chunkCount, reference.at("chunk_count").get<std::uint32_t>());
        QCOMPARE(computed->matrix.chunkSize, std::uint32_t(request.chunk));
        QVERIFY2(relative(computed->perplexity, reference.at("perplexity").get<double>()) < 1e-4,
                 qPrintable(QString::number(computed->perplexity, 'f', 6)));
        const auto& weights = reference.at("weights");
        QCOMPARE(computed->matrix.entries.size(), weights.size());
        double worst = 0;
        for (const auto& [name, expected] : weights.items()) {
            QVERIFY2(computed->matrix.entries.contains(name), name.c_str());
            const ImatrixEntry& entry = computed->matrix.entries.at(name);
            QCOMPARE(entry.counts, std::vector<float>{expected.at("count").get<float>()});
            QCOMPARE(entry.sums.size(), expected.at("columns").get<std::size_t>());
            const std::size_t step = expected.at("step").get<std::size_t>();
            const auto& values = expected.at("values");
            for (std::size_t k = 0; k < values.size(); ++k) {
                const double d = relative(entry.sums[k * step], values[k].get<double>());
                worst = std::max(worst, d);
                QVERIFY2(d < 1e-4, qPrintable(QStringLiteral("%1 column %2: %3, llama-imatrix %4")
                                                  .arg(QString::fromStdString(name))
                                                  .arg(k * step)
                                                  .arg(entry.sums[k * step])
                                                  .arg(values[k].get<double>())));
            }
            double total = 0;
            for (const float s : entry.sums) {
                total += s;
            }
            QVERIFY2(relative(total, expected.at("total").get<double>()) < 1e-4, name.c_str());
        }
        qInfo("largest relative difference of the recorded values: %.3g", worst);
    }

    // llama-imatrix's own file for the F16 model (../shared/reference/family): its products round
    // the activations to F16 as ours do, so the sums agree a little less closely than in F32.
    void agreesWithLlamaImatrixFileOfF16Model() {
        const QString base = family("family-base-f16.gguf");
        const QString file = sharedReference(QStringLiteral("family/family-base-imatrix.gguf"));
        ORGAN_REQUIRE_SHARED(base);
        ORGAN_REQUIRE_SHARED(file);
        const ImatrixData theirs = readImatrix(file.toStdString());
        ImatrixRequest request;
        request.text = readText(family("texts/general.txt"));
        request.dataset = theirs.datasets.front();
        request.chunk = theirs.chunkSize;
        const ModelWeights model = ModelWeights::ofModel(openModel(base.toStdString()));
        const std::optional<ImatrixRun> ours = collectImatrix(model, request);
        QVERIFY(ours.has_value());
        QCOMPARE(ours->matrix.chunkCount, theirs.chunkCount);
        QCOMPARE(ours->matrix.entries.size(), theirs.entries.size());
        for (const auto& [name, entry] : theirs.entries) {
            const ImatrixEntry& mine = ours->matrix.entries.at(name);
            QCOMPARE(mine.counts, entry.counts);
            for (std::size_t j = 0; j < entry.sums.size(); ++j) {
                QVERIFY2(relative(mine.sums[j], entry.sums[j]) < 2e-3,
                         qPrintable(QStringLiteral("%1 column %2: %3, llama-imatrix %4")
                                        .arg(QString::fromStdString(name))
                                        .arg(j)
                                        .arg(mine.sums[j])
                                        .arg(entry.sums[j])));
            }
        }
    }

    void progressAndCancel() {
        const QString base = family("family-base-f16.gguf");
        ORGAN_REQUIRE_SHARED(base);
        ImatrixRequest request;
        request.text = readText(family("texts/sea.txt"));
        request.dataset = "sea.txt";
        request.chunk = 64;
        const ModelWeights model = ModelWeights::ofModel(openModel(base.toStdString()));
        std::vector<Progress> seen;
        const auto run = collectImatrix(model, request, [&](const Progress& p) { seen.push_back(p); });
        QVERIFY(run.has_value());
        QVERIFY(seen.size() >= 2);
        QCOMPARE(seen.back().done, seen.back().total);
        QCOMPARE(seen.back().total, std::uint64_t(run->matrix.chunkCount));
        // Stopped at the first report: nothing.
        StopToken stop;
        const auto stopped = collectImatrix(
            model, request, [&](const Progress&) { stop.requestStop(); }, &stop);
        QVERIFY(!stopped.has_value());
    }

    void refusesChunksAndShortTexts_data() {
        QTest::addColumn<int>("chunk");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expected");
        QTest::newRow("chunk of 8") << 8 << QStringLiteral("sea.txt")
                                    << QStringLiteral(
                                           "chunks of 8 tokens; an importance matrix takes 16 to 4096");
        QTest::newRow("chunk of 5000")
            << 5000 << QStringLiteral("sea.txt") << QStringLiteral("takes 16 to 4096");
        QTest::newRow("one chunk of text")
            << 2048 << QStringLiteral("sea.txt") << QStringLiteral("chunks of 2048 need at least 4096");
    }

    void refusesChunksAndShortTexts() {
        QFETCH(int, chunk);
        QFETCH(QString, text);
        QFETCH(QString, expected);
        const QString base = family("family-base-f16.gguf");
        ORGAN_REQUIRE_SHARED(base);
        ImatrixRequest request;
        request.text = readText(family("texts/") + text);
        request.dataset = text.toStdString();
        request.chunk = static_cast<std::size_t>(chunk);
        const ModelWeights model = ModelWeights::ofModel(openModel(base.toStdString()));
        try {
            collectImatrix(model, request);
            QFAIL("no error");
        } catch (const FormatError& e) {
            QVERIFY2(QString::fromStdString(e.what()).contains(expected), e.what());
            QVERIFY2(QString::fromStdString(e.what()).startsWith(QStringLiteral("family-base-f16.gguf: ")),
                     e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestImatrix)
#include "tst_imatrix.moc"
