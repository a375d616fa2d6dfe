// The forward pass and the tokenizer against llama.cpp's own numbers on the same text
// (../shared/reference/vitals/: token ids, per-position logits, perplexity).
#include "fixtures.h"
#include "gguf/gguf_writer.h"
#include "gguf/tensor_name.h"
#include "graft/assembly.h"
#include "quant/quant_dot.h"
#include "quant/quantize_model.h"
#include "shared_models.h"
#include "support/errors.h"
#include "support/instruction_set.h"
#include "vitals/forward.h"
#include "vitals/tokenizer.h"
#include "vitals/vital_signs.h"
#include "vitals/vitals_report.h"

#include <QFileInfo>
#include <QTemporaryDir>

#include <QFile>
#include <QTest>
#include <cmath>
#include <cstring>
#include <list>
#include <nlohmann/json.hpp>
#include <numbers>
#include <random>

using namespace organ;
using namespace organ::testing;

namespace {

nlohmann::json readJson(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        return {};
    }
    return nlohmann::json::parse(file.readAll().toStdString());
}

std::string storyText() {
    QFile file(sharedReference(QStringLiteral("vitals/story-a.txt")));
    return file.open(QIODevice::ReadOnly) ? file.readAll().toStdString() : std::string();
}

// The logits of `tokens` run one at a time in a session of their own.
Eigen::MatrixXf oneTokenAtATime(const Transformer& transformer, const std::vector<std::int32_t>& tokens) {
    TransformerSession session(transformer);
    Eigen::MatrixXf logits(transformer.shape().vocabulary, Eigen::Index(tokens.size()));
    for (std::size_t p = 0; p < tokens.size(); ++p) {
        logits.col(Eigen::Index(p)) = session.run({tokens[p]});
    }
    return logits;
}

// The first 100 tokens of the story run whole, then in pieces with the key/value cache (37
// tokens, 20, seven one at a time, then the rest): empty when every piece gives the whole run's
// logits bit for bit, else the first piece that does not.
QString pieceUnlikeWhole(const Transformer& transformer, std::vector<std::int32_t> tokens) {
    if (tokens.size() < 100) {
        return QStringLiteral("only %1 tokens").arg(tokens.size());
    }
    tokens.resize(100);
    const Eigen::MatrixXf whole = transformer.logits(tokens);
    TransformerSession session(transformer);
    session.run(std::vector<std::int32_t>(tokens.begin(), tokens.begin() + 37));
    if (session.run(std::vector<std::int32_t>(tokens.begin() + 37, tokens.begin() + 57)) !=
        whole.middleCols(37, 20)) {
        return QStringLiteral("tokens 37 to 56");
    }
    // One token at a time, each query a block of its own that sees 58 … 64 keys (in the whole
    // run they are in the block that sees 64).
    for (std::size_t p = 57; p < 64; ++p) {
        if (session.run({tokens[p]}) != whole.col(static_cast<Eigen::Index>(p))) {
            return QStringLiteral("token %1").arg(p);
        }
    }
    if (session.run(std::vector<std::int32_t>(tokens.begin() + 64, tokens.end())) != whole.rightCols(36)) {
        return QStringLiteral("tokens 64 to 99");
    }
    return {};
}

} // namespace

class TestVitals : public QObject {
    Q_OBJECT

private slots:
    void matchesLlamaCpp_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<double>("logitTolerance"); // absolute; < 0: logits not compared
        QTest::addColumn<double>("perplexityTolerance");
        QTest::newRow("stories260K f32") << QStringLiteral("stories260K-f32") << 1e-3 << 1e-3;
        QTest::newRow("stories260K damaged") << QStringLiteral("stories260K-damaged-f32") << 1e-3 << 1e-3;
        // llama.cpp multiplies quantized and F16 weights with activations quantized to 8 bits
        // or F16: close, not exact.
        QTest::newRow("stories260K q8_0") << QStringLiteral("stories260K-q8_0") << -1.0 << 1e-2;
        QTest::newRow("llama-2 tiny f16") << QStringLiteral("llama-2-tiny-random-f16") << -1.0 << 1e-2;
        // Random weights (the zoo): every operation of the architecture, small logits.
        QTest::newRow("qwen2") << QStringLiteral("zoo/tiny-qwen2-f32") << 1e-3 << 1e-3;
        QTest::newRow("phi3") << QStringLiteral("zoo/tiny-phi3-f32") << 1e-3 << 1e-3;
        QTest::newRow("gemma2") << QStringLiteral("zoo/tiny-gemma2-f32") << 1e-3 << 1e-3;
    }

    void matchesLlamaCpp() {
        QFETCH(QString, model);
        QFETCH(double, logitTolerance);
        QFETCH(double, perplexityTolerance);
        const QString path = sharedModel(model + QStringLiteral(".gguf"));
        const QString referencePath = sharedReference(QStringLiteral("vitals/story-a/") +
                                                      QFileInfo(model).fileName() + QStringLiteral(".json"));
        ORGAN_REQUIRE_SHARED(path);
        ORGAN_REQUIRE_SHARED(referencePath);
        const nlohmann::json reference = readJson(referencePath);
        const auto gguf = GgufModel::open(path.toStdString());
        const Tokenizer tokenizer = Tokenizer::fromModel(*gguf);
        const std::vector<std::int32_t> tokens = tokenizer.encode(storyText());
        QCOMPARE(tokens, reference["tokens"].get<std::vector<std::int32_t>>());

        const Transformer transformer(gguf);
        const Eigen::MatrixXf logits = transformer.logits(tokens);
        QCOMPARE(logits.cols(), Eigen::Index(tokens.size()));
        QCOMPARE(logits.rows(), Eigen::Index(reference["n_vocab"].get<int>()));
        const auto& lse = reference["logsumexp"];
        const auto& nll = reference["nll"];
        double sum = 0;
        double worstLogit = 0;
        // Every position's logits, the last one's too (it predicts no token of the text, and a run's
        // last column is where a layer's stale or unwritten values would show first).
        for (std::size_t p = 0; p < tokens.size(); ++p) {
            const double l = logSumExp(logits.col(Eigen::Index(p)));
            if (p + 1 < tokens.size()) {
                const double mine = l - logits(tokens[p + 1], Eigen::Index(p));
                sum += mine;
                QVERIFY2(std::abs(mine - nll[p].get<double>()) < (logitTolerance > 0 ? 1e-3 : 0.25),
                         qPrintable(QStringLiteral("position %1: nll %2, llama.cpp %3")
                                        .arg(p)
                                        .arg(mine)
                                        .arg(nll[p].get<double>())));
            }
            if (logitTolerance > 0) {
                QVERIFY(std::abs(l - lse[p].get<double>()) < logitTolerance);
                const auto& row = reference["logits"][p];
                for (Eigen::Index v = 0; v < logits.rows(); ++v) {
                    worstLogit = std::max(worstLogit, std::abs(double(logits(v, Eigen::Index(p))) -
                                                               row[std::size_t(v)].get<double>()));
                }
            }
        }
        const double perplexity = std::exp(sum / double(tokens.size() - 1));
        QVERIFY(std::abs(perplexityOf(logits, tokens).perplexity / perplexity - 1) < 1e-9);
        const double theirs = reference["perplexity"].get<double>();
        qInfo("%s: perplexity %.6f (llama.cpp %.6f), worst logit difference %.2g", qPrintable(model),
              perplexity, theirs, worstLogit);
        QVERIFY2(std::abs(perplexity / theirs - 1) < perplexityTolerance,
                 qPrintable(QStringLiteral("perplexity %1, llama.cpp %2").arg(perplexity).arg(theirs)));
        if (logitTolerance > 0) {
            QVERIFY2(worstLogit < logitTolerance, qPrintable(QString::number(worstLogit)));
        }
    }

    // GPT-2 (LayerNorm, learned positions, fused QKV with biases, GELU MLP, byte-level BPE):
    // llama.cpp's token ids, the 32 largest logits of every position and the perplexity.
    void gpt2MatchesLlamaCpp() {
        const QString path = sharedModel(QStringLiteral("zoo/tiny-gpt2-f32.gguf"));
        const QString referencePath = sharedReference(QStringLiteral("vitals/story-a/tiny-gpt2-f32.json"));
        ORGAN_REQUIRE_SHARED(path);
        ORGAN_REQUIRE_SHARED(referencePath);
        const nlohmann::json reference = readJson(referencePath);
        QCOMPARE(reference["logits_kind"].get<std::string>(), std::string("top32"));
        const auto gguf = GgufModel::open(path.toStdString());
        const auto tokens = Tokenizer::fromModel(*gguf).encode(storyText());
        QCOMPARE(tokens, reference["tokens"].get<std::vector<std::int32_t>>());
        const Eigen::MatrixXf logits = Transformer(gguf).logits(tokens);
        double worst = 0;
        for (std::size_t p = 0; p < tokens.size(); ++p) {
            QVERIFY(std::abs(logSumExp(logits.col(Eigen::Index(p))) -
                             reference["logsumexp"][p].get<double>()) < 1e-3);
            for (const auto& pair : reference["logits"][p]) {
                worst = std::max(worst, std::abs(double(logits(pair[0].get<int>(), Eigen::Index(p))) -
                                                 pair[1].get<double>()));
            }
        }
        const double perplexity = perplexityOf(logits, tokens).perplexity;
        const double theirs = reference["perplexity"].get<double>();
        qInfo("gpt2: perplexity %.6f (llama.cpp %.6f), worst top-32 logit difference %.2g", perplexity,
              theirs, worst);
        QVERIFY(worst < 1e-3);
        QVERIFY(std::abs(perplexity / theirs - 1) < 1e-3);
    }

    // Architectures and quirks the shared references do not reach (gemma3; sliding windows
    // shorter than the text; linear RoPE scaling with per-pair frequency factors), against llama.cpp's
    // numbers kept in tests/data/vitals/: where the reference says so, the shared model is first rewritten
    // with one metadata value changed.
    void matchesKeptReferences_data() {
        QTest::addColumn<QString>("reference");
        QTest::newRow("gemma3") << QStringLiteral("tiny-gemma3-f32");
        QTest::newRow("gemma3, window 16") << QStringLiteral("tiny-gemma3-f32-window16");
        QTest::newRow("gemma2, window 16") << QStringLiteral("tiny-gemma2-f32-window16");
        QTest::newRow("llama, scaled RoPE") << QStringLiteral("stories260K-f32-rope-scaled");
    }

    void matchesKeptReferences() {
        QFETCH(QString, reference);
        const nlohmann::json kept = readJson(QStringLiteral(ORGAN_SOURCE_DIR "/tests/data/vitals/") +
                                             reference + QStringLiteral(".json"));
        QVERIFY(!kept.empty());
        const QString shared = sharedModel(QString::fromStdString(kept["model"].get<std::string>()));
        ORGAN_REQUIRE_SHARED(shared);
        QTemporaryDir dir;
        std::string path = shared.toStdString();
        std::list<std::vector<float>> added; // the bytes of added tensors, alive while writing
        if (!kept["metadata"].empty() || !kept["tensors"].empty()) {
            GgufWriteSpec spec = specFromFile(*GgufFile::open(path));
            for (const auto& change : kept["metadata"]) {
                const std::string key = change["key"].get<std::string>();
                if (change.contains("u32")) {
                    spec.set(key, MetaValue::fromU32(change["u32"].get<std::uint32_t>()));
                } else if (change.contains("f32")) {
                    spec.set(key, MetaValue::fromF32(change["f32"].get<float>()));
                } else {
                    spec.set(key, MetaValue::fromString(change["string"].get<std::string>()));
                }
            }
            for (const auto& [tensorName, values] : kept["tensors"].items()) {
                added.push_back(values.get<std::vector<float>>());
                TensorToWrite tensor;
                tensor.name = tensorName;
                tensor.ne = {added.back().size(), 1, 1, 1};
                tensor.source.bytes = std::as_bytes(std::span<const float>(added.back()));
                spec.tensors.push_back(tensor);
            }
            path = dir.filePath(QStringLiteral("variant.gguf")).toStdString();
            QVERIFY(writeGguf(path, spec).isOk());
        }
        const auto gguf = GgufModel::open(path);
        const std::vector<std::int32_t> tokens = Tokenizer::fromModel(*gguf).encode(storyText());
        QCOMPARE(tokens, kept["tokens"].get<std::vector<std::int32_t>>());
        const Eigen::MatrixXf logits = Transformer(gguf).logits(tokens);
        double worst = 0;
        for (std::size_t p = 0; p < tokens.size(); ++p) {
            worst = std::max(
                worst, std::abs(logSumExp(logits.col(Eigen::Index(p))) - kept["logsumexp"][p].get<double>()));
            for (const auto& pair : kept["logits"][p]) {
                worst = std::max(worst, std::abs(double(logits(pair[0].get<int>(), Eigen::Index(p))) -
                                                 pair[1].get<double>()));
            }
        }
        const double perplexity = perplexityOf(logits, tokens).perplexity;
        const double theirs = kept["perplexity"].get<double>();
        qInfo("%s: perplexity %.6f (llama.cpp %.6f), worst logit difference %.2g", qPrintable(reference),
              perplexity, theirs, worst);
        QVERIFY2(worst < 1e-3, qPrintable(QString::number(worst)));
        QVERIFY(std::abs(perplexity / theirs - 1) < 1e-3);
    }

    // K-quant and IQ4 models, whose weights meet activations quantized to q8_K (q8_0 for IQ4_NL)
    // as in llama.cpp (tests/data/vitals/quant-perplexity.json, from
    // tests/tools/quant_vitals_reference.py). The 8-bit activations are llama.cpp's but where float
    // rounding elsewhere moves one across a rounding step; that token's NLL then moves by up to
    // ~0.1 nats on the random-weight wide models. So: perplexity within 0.3 % of llama.cpp's
    // (issue 26), and at least one token in twelve with llama.cpp's NLL to 1e-3 nats (with F32
    // activations, before issue 26, 3 to 10 of 255 on the wide models; now 27 to 195).
    void quantizedModelsMatchLlamaCpp_data() {
        QTest::addColumn<int>("index");
        const nlohmann::json kept =
            readJson(QStringLiteral(ORGAN_SOURCE_DIR "/tests/data/vitals/quant-perplexity.json"));
        for (std::size_t i = 0; i < kept["cases"].size(); ++i) {
            const auto& c = kept["cases"][i];
            const std::string row =
                QFileInfo(QString::fromStdString(c["model"].get<std::string>())).baseName().toStdString() +
                " on " +
                QFileInfo(QString::fromStdString(c["text"].get<std::string>())).fileName().toStdString();
            QTest::newRow(row.c_str()) << int(i);
        }
    }

    void quantizedModelsMatchLlamaCpp() {
        QFETCH(int, index);
        const nlohmann::json c = readJson(QStringLiteral(
            ORGAN_SOURCE_DIR "/tests/data/vitals/quant-perplexity.json"))["cases"][std::size_t(index)];
        const QString path = sharedModel(QString::fromStdString(c["model"].get<std::string>()));
        const QString textPath =
            sharedDir() + QStringLiteral("/") + QString::fromStdString(c["text"].get<std::string>());
        ORGAN_REQUIRE_SHARED(path);
        ORGAN_REQUIRE_SHARED(textPath);
        QFile textFile(textPath);
        QVERIFY(textFile.open(QIODevice::ReadOnly));
        const auto gguf = GgufModel::open(path.toStdString());
        std::vector<std::int32_t> tokens =
            Tokenizer::fromModel(*gguf).encode(textFile.readAll().toStdString());
        const auto expected = c["tokens"].get<std::vector<std::int32_t>>();
        tokens.resize(std::min(tokens.size(), expected.size()));
        QCOMPARE(tokens, expected);
        const Eigen::MatrixXf logits = Transformer(gguf).logits(tokens);
        double sum = 0;
        double worst = 0;
        int same = 0;
        for (std::size_t p = 0; p + 1 < tokens.size(); ++p) {
            const double mine =
                logSumExp(logits.col(Eigen::Index(p))) - logits(tokens[p + 1], Eigen::Index(p));
            sum += mine;
            worst = std::max(worst, std::abs(mine - c["nll"][p].get<double>()));
            same += std::abs(mine - c["nll"][p].get<double>()) < 1e-3 ? 1 : 0;
        }
        const double perplexity = std::exp(sum / double(tokens.size() - 1));
        const double theirs = c["perplexity"].get<double>();
        const int scored = int(tokens.size()) - 1;
        qInfo("perplexity %.6f (llama.cpp %.6f, %+.3f %%), mean NLL %+.5f nats apart; %d of %d tokens "
              "within 1e-3 nats, the farthest %.3g",
              perplexity, theirs, 100 * (perplexity / theirs - 1), std::log(perplexity / theirs), same,
              scored, worst);
        QVERIFY2(std::abs(perplexity / theirs - 1) < 3e-3,
                 qPrintable(QStringLiteral("perplexity %1, llama.cpp %2").arg(perplexity).arg(theirs)));
        QVERIFY2(12 * same >= scored, qPrintable(QStringLiteral("%1 of %2 tokens").arg(same).arg(scored)));
    }

    // Greedy continuation with the key/value cache: llama.cpp's text, and the same logits as
    // running the whole sequence at once.
    void greedyMatchesLlamaCpp() {
        const nlohmann::json greedy = readJson(sharedReference(QStringLiteral("vitals/greedy.json")));
        ORGAN_REQUIRE_SHARED(sharedReference(QStringLiteral("vitals/greedy.json")));
        int checked = 0;
        for (const auto& entry : greedy) {
            const QString path = sharedModel(QString::fromStdString(entry["model"].get<std::string>()));
            ORGAN_REQUIRE_SHARED(path);
            const auto gguf = GgufModel::open(path.toStdString());
            const Tokenizer tokenizer = Tokenizer::fromModel(*gguf);
            const Transformer transformer(gguf);
            const auto tokens =
                greedyContinuation(transformer, tokenizer.encode(entry["prompt"].get<std::string>()),
                                   entry["n_predict"].get<std::size_t>(), tokenizer.eos());
            // llama-completion prints the prompt, the continuation, then "\n\n" when it ends.
            QCOMPARE(tokenizer.decode(tokens) + "\n\n", entry["text"].get<std::string>());
            QCOMPARE(tokens.size(), tokenizer.encode(entry["prompt"].get<std::string>()).size() + 48);
            ++checked;
            // Piece by piece with the cache = all at once.
            TransformerSession session(transformer);
            const std::vector<std::int32_t> head(tokens.begin(), tokens.begin() + 10);
            const std::vector<std::int32_t> tail(tokens.begin() + 10, tokens.begin() + 14);
            session.run(head);
            const Eigen::MatrixXf pieces = session.run(tail);
            QCOMPARE(session.position(), std::size_t(14));
            const Eigen::MatrixXf whole =
                transformer.logits(std::vector<std::int32_t>(tokens.begin(), tokens.begin() + 14));
            QVERIFY((pieces - whole.rightCols(4)).cwiseAbs().maxCoeff() < 1e-4f);
        }
        QCOMPARE(checked, 2);
    }

    // The threads share out slices of each weight's rows: any number gives the same logits.
    void threadsGiveTheSameLogits() {
        // GPT-2's 50 257-token output projection is 50 slices.
        const QString path = sharedModel(QStringLiteral("zoo/tiny-gpt2-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        Transformer one(GgufModel::open(path.toStdString()));
        one.setThreads(1);
        Transformer three(GgufModel::open(path.toStdString()));
        three.setThreads(3);
        QCOMPARE(three.threads(), 3u);
        const std::vector<std::int32_t> tokens{7454, 2402, 257, 640, 11, 612, 373, 257};
        const Eigen::MatrixXf a = one.logits(tokens);
        QCOMPARE(a.rows(), Eigen::Index(50257));
        QCOMPARE((a - three.logits(tokens)).cwiseAbs().maxCoeff(), 0.0f);
    }

    // The FFN's gated activation on the pool's threads gives the bits of Eigen evaluating the whole
    // matrices at once (SiLU and GELU), whatever the threads: sizes whose values run into Eigen's
    // scalar tail, more values than one run of the pool, and none.
    void gatedActivationAsWhole() {
        std::mt19937 rng(5);
        std::normal_distribution<float> normal(0.0f, 3.0f);
        for (const auto& [rows, cols] :
             std::vector<std::pair<Eigen::Index, Eigen::Index>>{{5461, 37}, {8192, 9}, {3, 1}, {0, 4}}) {
            Eigen::MatrixXf gate(rows, cols);
            Eigen::MatrixXf up(rows, cols);
            for (Eigen::Index i = 0; i < gate.size(); ++i) {
                gate.data()[i] = normal(rng);
                up.data()[i] = normal(rng);
            }
            const float c = std::sqrt(2.0f / std::numbers::pi_v<float>);
            const Eigen::MatrixXf silu = gate.array() / (1.0f + (-gate.array()).exp());
            const Eigen::MatrixXf gelu =
                0.5f * gate.array() * (1.0f + (c * (gate.array() + 0.044715f * gate.array().cube())).tanh());
            const Eigen::MatrixXf wantSilu = silu.cwiseProduct(up);
            const Eigen::MatrixXf wantGelu = gelu.cwiseProduct(up);
            // Written into the same matrices on each thread count (their memory kept).
            Eigen::MatrixXf gotSilu;
            Eigen::MatrixXf gotGelu;
            for (const unsigned threads : {1u, 2u, 3u}) {
                WorkerPool pool(threads);
                gatedActivation(gate, up, false, pool, gotSilu);
                gatedActivation(gate, up, true, pool, gotGelu);
                QCOMPARE(gotSilu.rows(), rows);
                QCOMPARE(gotSilu.cols(), cols);
                const auto bytes = static_cast<std::size_t>(gate.size()) * sizeof(float);
                QVERIFY2(
                    bytes == 0 || std::memcmp(gotSilu.data(), wantSilu.data(), bytes) == 0,
                    qPrintable(QStringLiteral("SiLU %1 x %2, %3 threads").arg(rows).arg(cols).arg(threads)));
                QVERIFY2(
                    bytes == 0 || std::memcmp(gotGelu.data(), wantGelu.data(), bytes) == 0,
                    qPrintable(QStringLiteral("GELU %1 x %2, %3 threads").arg(rows).arg(cols).arg(threads)));
            }
        }
        // A gate and an up projection of different shapes are refused, not read past their ends.
        WorkerPool pool(2);
        Eigen::MatrixXf out;
        QVERIFY_THROWS_EXCEPTION(
            std::invalid_argument,
            gatedActivation(Eigen::MatrixXf(64, 3), Eigen::MatrixXf(64, 2), false, pool, out));
        QVERIFY_THROWS_EXCEPTION(
            std::invalid_argument,
            gatedActivation(Eigen::MatrixXf(63, 3), Eigen::MatrixXf(64, 3), true, pool, out));
    }

    // The logits of the last positions only (what chunked perplexity scores): the last layer after
    // attention and the output run for those columns alone, and give the whole run's bits (every
    // weight goes through the engine's tiles: quantized, F16, and decoded to F32 — rows of 172
    // values, padded, in stories260K's FFN); the key/value cache still holds every position.
    void logitsOfTheLastPositions_data() {
        QTest::addColumn<QString>("model");
        for (const char* model :
             {"stories260K-q8_0.gguf", "stories260K-f32.gguf", "stories260K-q5_1.gguf",
              "llama-2-tiny-random-f16.gguf", "quant/wide-q4_k_m.gguf", "zoo/tiny-gpt2-f32.gguf",
              "zoo/tiny-qwen2-f32.gguf", "zoo/tiny-phi3-f32.gguf", "zoo/tiny-gemma2-f32.gguf"}) {
            QTest::newRow(model) << QString::fromLatin1(model);
        }
    }
    void logitsOfTheLastPositions() {
        QFETCH(QString, model);
        const QString path = sharedModel(model);
        ORGAN_REQUIRE_SHARED(path);
        const auto gguf = GgufModel::open(path.toStdString());
        const Transformer transformer(gguf);
        std::vector<std::int32_t> tokens = Tokenizer::fromModel(*gguf).encode(storyText());
        tokens.resize(std::min<std::size_t>(tokens.size(), 40));
        const auto n = static_cast<Eigen::Index>(tokens.size());
        const Eigen::MatrixXf whole = transformer.logits(tokens);
        for (const std::size_t from : {std::size_t(1), tokens.size() / 2, tokens.size() - 1}) {
            const Eigen::MatrixXf last = transformer.logits(tokens, nullptr, from);
            QCOMPARE(last.cols(), n - static_cast<Eigen::Index>(from));
            const float gap = (last - whole.rightCols(last.cols())).cwiseAbs().maxCoeff();
            QVERIFY2(gap == 0, qPrintable(QStringLiteral("from %1: logits %2 apart").arg(from).arg(gap)));
            // The cache after such a run: the next token's logits as after a whole run.
            TransformerSession pruned(transformer);
            TransformerSession full(transformer);
            pruned.run(tokens, nullptr, nullptr, from);
            full.run(tokens);
            QCOMPARE(pruned.position(), tokens.size());
            QVERIFY(pruned.run({tokens[3]}) == full.run({tokens[3]}));
            // From a layer's states: as from the tokens.
            std::vector<Eigen::MatrixXf> hidden;
            TransformerSession(transformer).run(tokens, nullptr, &hidden);
            const std::uint32_t middle = transformer.shape().blocks / 2;
            QVERIFY(transformer.logitsFrom(middle, hidden[middle], nullptr, from) == last);
        }
        QVERIFY_THROWS_EXCEPTION(FormatError, transformer.logits(tokens, nullptr, tokens.size()));
    }

    // Attention multiplies a block of 32 queries by the keys its last query sees, and sums the
    // values only that far (rounded up to 8): a run cut elsewhere (37 tokens, 20, seven one at a
    // time, then the rest, with the cache) puts each query in another block with other lengths, and
    // gives the same bits.
    void causalBlocksInPieces_data() {
        QTest::addColumn<QString>("model");
        // Heads of 8 and 64 values (both through the tiles), keys shared by two heads each; F32
        // and BF16 weights decoded through the F32 tiles (Eigen's product of one column summed in
        // another order than that of many).
        QTest::newRow("q8_0") << QStringLiteral("stories260K-q8_0.gguf");
        QTest::newRow("f32") << QStringLiteral("stories260K-f32.gguf");
        QTest::newRow("bf16") << QStringLiteral("stories260K-bf16.gguf");
        // F16 rows of 172 values (no F16 tile): rounded activations, both padded to 176.
        QTest::newRow("f16, rows of 172") << QStringLiteral("stories260K-f16.gguf");
        QTest::newRow("f16") << QStringLiteral("quant/wide-f16.gguf");
        QTest::newRow("q4_k_m") << QStringLiteral("quant/wide-q4_k_m.gguf");
    }
    void causalBlocksInPieces() {
        QFETCH(QString, model);
        const QString path = sharedModel(model);
        ORGAN_REQUIRE_SHARED(path);
        const auto gguf = GgufModel::open(path.toStdString());
        const Transformer transformer(gguf);
        const QString unlike = pieceUnlikeWhole(transformer, Tokenizer::fromModel(*gguf).encode(storyText()));
        QVERIFY2(unlike.isEmpty(), qPrintable(unlike));
    }

    // A Q4_K_M model's generated tokens read interleaved copies of its Q4_K weights, made at the
    // first one-token product; with ORGAN_Q4K_COPY=0 none is made and the packed rows give the same
    // logits, bit for bit, as do batches.
    void interleavedCopiesForOneToken() {
        const QString path = sharedModel(QStringLiteral("quant/wide-q4_k_m.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto gguf = GgufModel::open(path.toStdString());
        std::vector<std::int32_t> tokens = Tokenizer::fromModel(*gguf).encode(storyText());
        tokens.resize(40);
        const Transformer copying(gguf);
        const Eigen::MatrixXf batch = copying.logits(tokens);
        QCOMPARE(copying.interleavedBytes(), std::uint64_t(0));
        const Eigen::MatrixXf copied = oneTokenAtATime(copying, tokens);
        QVERIFY(copying.interleavedBytes() > 0);
        QVERIFY(copied == batch);
        qputenv("ORGAN_Q4K_COPY", "0");
        const Transformer packed(gguf);
        const Eigen::MatrixXf read = oneTokenAtATime(packed, tokens);
        qunsetenv("ORGAN_Q4K_COPY");
        QCOMPARE(packed.interleavedBytes(), std::uint64_t(0));
        QVERIFY(read == batch);
    }

    // The same with sliding windows and soft-capped scores: the zoo's gemma models in F16 (the
    // projections through the tiles, whose bits do not depend on the run) with windows of 13 and
    // 20 keys, so that a query's first seen key falls on every place of a packet. A query's scores
    // scaled, capped and through its softmax give the same bits in pieces as whole, and its
    // window starts where its position puts it, not where its piece does. A block's products
    // start at its first query's window rounded down to 8 keys, which differs between a whole run
    // and pieces: the sums' lanes must not.
    void slidingWindowsInPieces_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("window");
        QTest::newRow("gemma2 (capped scores)") << QStringLiteral("zoo/tiny-gemma2-f32.gguf") << 13;
        QTest::newRow("gemma2, window 20") << QStringLiteral("zoo/tiny-gemma2-f32.gguf") << 20;
        QTest::newRow("gemma3 (query and key norms)") << QStringLiteral("zoo/tiny-gemma3-f32.gguf") << 13;
    }
    void slidingWindowsInPieces() {
        QFETCH(QString, model);
        QFETCH(int, window);
        const QString shared = sharedModel(model);
        ORGAN_REQUIRE_SHARED(shared);
        const auto source = GgufModel::open(shared.toStdString());
        QuantizeRecipe recipe;
        recipe.fileType = QuantFileType::F16;
        QuantizePlan plan = planQuantization(*source, recipe, nullptr);
        plan.spec.set(source->architecture() + ".attention.sliding_window",
                      MetaValue::fromU32(static_cast<std::uint32_t>(window)));
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("window-f16.gguf")).toStdString();
        QVERIFY(writeGguf(path, plan.spec).isOk());
        const auto gguf = GgufModel::open(path);
        const Transformer transformer(gguf);
        QCOMPARE(transformer.shape().slidingWindow, static_cast<std::uint32_t>(window));
        QVERIFY(transformer.shape().slides(0));
        const QString unlike = pieceUnlikeWhole(transformer, Tokenizer::fromModel(*gguf).encode(storyText()));
        QVERIFY2(unlike.isEmpty(), qPrintable(unlike));
    }

    // Q8_0, IQ4_NL, K-quant and IQ4_XS weights meet 8-bit activations, F16 weights F16-rounded
    // ones, the others (F32, BF16, Q5_1) decoded to F32 F32 ones; every kernel this CPU has gives
    // the same logits, bit for bit.
    void quantizedKernelsGiveTheSameLogits_data() {
        QTest::addColumn<QString>("model");
        for (const char* model :
             {"stories260K-q8_0.gguf", "stories260K-f32.gguf", "stories260K-bf16.gguf",
              "stories260K-q5_1.gguf", "llama-2-tiny-random-f16.gguf", "quant/wide-q4_k_m.gguf",
              "quant/wide-q2_k.gguf", "quant/wide-q3_k_m.gguf", "quant/wide-q5_k_m.gguf",
              "quant/wide-iq4_nl.gguf", "quant/wide-iq4_xs.gguf"}) {
            QTest::newRow(model) << QString::fromLatin1(model);
        }
    }

    void quantizedKernelsGiveTheSameLogits() {
        QFETCH(QString, model);
        const QString path = sharedModel(model);
        ORGAN_REQUIRE_SHARED(path);
        const auto gguf = GgufModel::open(path.toStdString());
        const Transformer transformer(gguf);
        const std::vector<std::int32_t> tokens = Tokenizer::fromModel(*gguf).encode(storyText());
        const std::vector<InstructionSet>& kernels = supportedInstructionSets();
        const Eigen::MatrixXf first = transformer.logits(tokens);
        const double perplexity = perplexityOf(first, tokens).perplexity;
        for (const InstructionSet set : kernels) {
            const std::string kernel(instructionSetName(set));
            useInstructionSet(kernel);
            const Eigen::MatrixXf logits = transformer.logits(tokens);
            const double mean = (logits - first).cwiseAbs().mean();
            const double theirs = perplexityOf(logits, tokens).perplexity;
            qInfo("kernel %s: mean logit difference %.2g, largest %.2g, perplexity %.6f", kernel.c_str(),
                  mean, (logits - first).cwiseAbs().maxCoeff(), theirs);
            QCOMPARE((logits - first).cwiseAbs().maxCoeff(), 0.0f);
            QCOMPARE(theirs, perplexity);
        }
        useInstructionSet(instructionSetName(kernels.front()));
    }

    void cancelLeavesTheSession() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto gguf = GgufModel::open(path.toStdString());
        const Transformer transformer(gguf);
        TransformerSession session(transformer);
        session.run({1, 403, 407});
        StopToken stop;
        stop.requestStop();
        QCOMPARE(session.run({261}, &stop).cols(), Eigen::Index(0));
        QCOMPARE(session.position(), std::size_t(3));
        QCOMPARE(session.run({261}).cols(), Eigen::Index(1));
    }

    // A run cancelled half-way, its first layers' keys and values already in the cache's room (and
    // the cache grown for it), leaves no trace: what follows has the logits of a session that
    // never ran it, bit for bit, a token at a time and in a piece.
    void cancelledHalfWayLeavesNoTrace() {
        const QString path = sharedModel(QStringLiteral("quant/wide-q4_k_m.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto gguf = GgufModel::open(path.toStdString());
        const Transformer transformer(gguf);
        std::vector<std::int32_t> tokens = Tokenizer::fromModel(*gguf).encode(storyText());
        QVERIFY(tokens.size() >= 120);
        const std::vector<std::int32_t> head(tokens.begin(), tokens.begin() + 37);
        const std::vector<std::int32_t> cancelled(tokens.begin() + 37, tokens.begin() + 107);
        TransformerSession clean(transformer);
        TransformerSession session(transformer);
        clean.run(head);
        session.run(head);
        StopToken stop;
        // Stopped during the first layer, seen at the top of the second.
        QVERIFY(transformer.shape().blocks >= 2);
        const std::string trigger = layerTensorName(0, "ffn_down.weight");
        session.observeActivations([&](const std::string& weight, const Eigen::MatrixXf&) {
            if (weight == trigger) {
                stop.requestStop();
            }
        });
        QCOMPARE(session.run(cancelled, &stop).cols(), Eigen::Index(0));
        session.observeActivations({});
        QCOMPARE(session.position(), head.size());
        for (std::size_t p = 107; p < 112; ++p) {
            QVERIFY(session.run({tokens[p]}) == clean.run({tokens[p]}));
        }
        const std::vector<std::int32_t> piece(tokens.begin() + 112, tokens.begin() + 120);
        QVERIFY(session.run(piece) == clean.run(piece));
    }

    // One token at a time, the products' slices depend on the number of threads; the logits do not.
    void oneTokenThreadsGiveTheSameLogits() {
        const QString path = sharedModel(QStringLiteral("quant/wide-q4_k_m.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto gguf = GgufModel::open(path.toStdString());
        std::vector<std::int32_t> tokens = Tokenizer::fromModel(*gguf).encode(storyText());
        tokens.resize(12);
        Eigen::MatrixXf first;
        for (const unsigned threads : {1u, 2u, 3u, 7u}) {
            Transformer transformer(gguf);
            transformer.setThreads(threads);
            const Eigen::MatrixXf logits = oneTokenAtATime(transformer, tokens);
            if (first.size() == 0) {
                first = logits;
            }
            QVERIFY2(logits == first, qPrintable(QStringLiteral("%1 threads").arg(threads)));
        }
    }

    // KL(reference ‖ model): zero against itself; the damaged model is far from the healthy
    // one and the healed chimera (the healthy organs of layers 1-3 grafted in) is not.
    void divergenceFromParents() {
        const QString healthyPath = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        const QString damagedPath = sharedModel(QStringLiteral("stories260K-damaged-f32.gguf"));
        ORGAN_REQUIRE_SHARED(healthyPath);
        ORGAN_REQUIRE_SHARED(damagedPath);
        QTemporaryDir dir;
        const GraftPlan plan = replacePlan(damagedPath, healthyPath, organsOfLayers(1, 3));
        const std::string healedPath = dir.filePath(QStringLiteral("healed.gguf")).toStdString();
        const GraftOutcome outcome = graftChimera(plan, GraftModels::open(plan), healedPath);
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());

        const auto healthy = GgufModel::open(healthyPath.toStdString());
        const std::vector<std::int32_t> tokens = Tokenizer::fromModel(*healthy).encode(storyText());
        auto logitsOf = [&](const std::string& path) {
            return Transformer(GgufModel::open(path)).logits(tokens);
        };
        const Eigen::MatrixXf reference = logitsOf(healthyPath.toStdString());
        const Divergence self = divergenceOf(reference, reference);
        QCOMPARE(self.meanKl, 0.0);
        QCOMPARE(self.p99Kl, 0.0);
        QCOMPARE(self.topAgreement, 1.0);
        QCOMPARE(self.kl.size(), tokens.size());
        const Divergence damaged = divergenceOf(reference, logitsOf(damagedPath.toStdString()));
        const Divergence healed = divergenceOf(reference, logitsOf(healedPath));
        qInfo("KL to the healthy model: damaged %.4f (p99 %.4f, top-1 %.1f %%), healed %.6f (p99 %.6f, top-1 "
              "%.1f %%)",
              damaged.meanKl, damaged.p99Kl, 100 * damaged.topAgreement, healed.meanKl, healed.p99Kl,
              100 * healed.topAgreement);
        QVERIFY(damaged.meanKl > 1.0);
        QVERIFY(damaged.topAgreement < 0.5);
        QVERIFY(healed.meanKl < 0.05);
        QVERIFY(healed.topAgreement > 0.9);
        QVERIFY(damaged.p99Kl >= damaged.meanKl);
        QVERIFY_THROWS_EXCEPTION(FormatError, divergenceOf(reference, reference.leftCols(3)));
    }

    // A planned chimera, never written, gives the same logits as the chimera written and
    // opened again: tensors taken from the mappings, and tensors converted on the fly (F32
    // organs into a Q8_0 recipient).
    void plannedEqualsWritten_data() {
        QTest::addColumn<QString>("base");
        QTest::newRow("same types") << QStringLiteral("stories260K-damaged-f32.gguf");
        QTest::newRow("converted") << QStringLiteral("stories260K-q8_0.gguf");
    }

    void plannedEqualsWritten() {
        QFETCH(QString, base);
        const QString healthyPath = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        const QString basePath = sharedModel(base);
        ORGAN_REQUIRE_SHARED(healthyPath);
        ORGAN_REQUIRE_SHARED(basePath);
        QTemporaryDir dir;
        GraftPlan plan = replacePlan(basePath, healthyPath, organsOfLayers(1, 3));
        GraftOperation remove;
        remove.kind = GraftOperation::Kind::RemoveLayer;
        remove.toLayer = 4;
        plan.operations.push_back(remove);
        plan.output = dir.filePath(QStringLiteral("chimera.gguf")).toStdString();
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        QVERIFY(!report.hasErrors());
        const Transformer planned(ModelWeights::ofPlan(plan, models, report));
        QCOMPARE(planned.shape().blocks, 4u);
        const auto healthy = GgufModel::open(healthyPath.toStdString());
        const std::vector<std::int32_t> tokens = Tokenizer::fromModel(*healthy).encode(storyText());
        const Eigen::MatrixXf before = planned.logits(tokens);
        QVERIFY(!QFileInfo::exists(QString::fromStdString(plan.output))); // nothing written
        QVERIFY(graftChimera(plan, models, plan.output).written.isOk());
        const Eigen::MatrixXf written = Transformer(GgufModel::open(plan.output)).logits(tokens);
        QCOMPARE(before.cols(), written.cols());
        QCOMPARE((before - written).cwiseAbs().maxCoeff(), 0.0f);
        QVERIFY_THROWS_EXCEPTION(FormatError, ModelWeights::ofPlan(plan, models, [&] {
                                     CompatibilityReport bad = report;
                                     bad.findings.push_back({Finding::Severity::Error, "no", {}, -1, false});
                                     return bad;
                                 }()));
    }

    void layerImportance() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto gguf = GgufModel::open(path.toStdString());
        const Transformer transformer(gguf);
        std::vector<Eigen::MatrixXf> hidden;
        TransformerSession session(transformer);
        session.run(Tokenizer::fromModel(*gguf).encode(storyText()), nullptr, &hidden);
        QCOMPARE(hidden.size(), std::size_t(6)); // 5 layers
        const LayerImportance importance = layerImportanceOf(hidden);
        QCOMPARE(importance.angular.size(), std::size_t(5));
        QString line;
        for (std::size_t l = 0; l < 5; ++l) {
            QVERIFY(importance.angular[l] > 0 && importance.angular[l] < 0.5);
            QVERIFY(importance.blockInfluence[l] > 0 && importance.blockInfluence[l] < 1);
            line += QStringLiteral(" %1/%2")
                        .arg(importance.angular[l], 0, 'f', 3)
                        .arg(importance.blockInfluence[l], 0, 'f', 3);
        }
        qInfo("stories260K, angular distance / block influence per layer:%s", qPrintable(line));
        // Layer 2 by hand: the token-wise cosine of the states around it.
        double cosSum = 0;
        double angleSum = 0;
        for (Eigen::Index c = 0; c < hidden[2].cols(); ++c) {
            const Eigen::VectorXd a = hidden[2].col(c).cast<double>();
            const Eigen::VectorXd b = hidden[3].col(c).cast<double>();
            const double cos = a.dot(b) / (a.norm() * b.norm());
            cosSum += cos;
            angleSum += std::acos(cos) / std::numbers::pi;
        }
        QVERIFY(std::abs(importance.angular[2] - angleSum / double(hidden[2].cols())) < 1e-12);
        QVERIFY(std::abs(importance.blockInfluence[2] - (1 - cosSum / double(hidden[2].cols()))) < 1e-12);
        QCOMPARE(importance.cheapest.size(), std::size_t(4));
        const auto least = std::min_element(importance.angular.begin(), importance.angular.end());
        QCOMPARE(importance.cheapest[0].first, std::uint32_t(least - importance.angular.begin()));
        QCOMPARE(importance.cheapest[0].distance, *least);
        for (std::size_t n = 1; n <= 4; ++n) {
            QVERIFY(importance.cheapest[n - 1].first + n <= 5);
        }
    }

    // resources/texts/vital-signs.txt, compiled into the engine.
    void defaultText() {
        const std::string_view text = defaultVitalsText();
        QVERIFY(text.starts_with("Tom had a small red boat."));
        QVERIFY(text.size() > 500);
        QVERIFY(text.find("ORGAN_TEXT") == std::string_view::npos);
    }

    void tokenizerEdges() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto gguf = GgufModel::open(path.toStdString());
        const Tokenizer t = Tokenizer::fromModel(*gguf);
        QCOMPARE(t.encode(""), std::vector<std::int32_t>{t.bos()});
        for (const char* text :
             {"Lily", " two  spaces ", "a\nnew line", "caf\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x90\xb6",
              "Supercalifragilisticexpialidocious", "\x01\x7f"}) {
            const auto tokens = t.encode(text);
            QCOMPARE(tokens.front(), t.bos());
            // The pieces give the text back, with the space SentencePiece puts in front.
            QCOMPARE(t.decode(tokens), " " + std::string(text));
        }
    }

    // Success that is not: a perplexity of no tokens, of NaN outputs, or of a model llama.cpp
    // would not run is an error, never a number printed with exit status 0.
    // A text longer than the context, scored as llama-perplexity -c 128 -b 128 scores it: the
    // family's perplexities of ../shared/models/family/README.md (4 decimals; Q4_K_M within 0.1 %,
    // as for whole texts), and its parents' perplexities and divergence over the same positions.
    void chunkedPerplexityIsLlamaPerplexitys_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("text");
        QTest::addColumn<double>("theirs");
        const std::vector<std::tuple<const char*, double, double, double>> rows{
            {"family-base-f16", 1.5484, 1.6268, 1.3619},
            {"family-farm-f16", 1.6040, 1.6124, 1.3863},
            {"family-sea-f16", 1.5880, 1.7014, 1.3118},
            {"family-base-q4_k_m", 1.5555, 1.6352, 1.3622},
        };
        for (const auto& [model, general, farm, sea] : rows) {
            for (const auto& [text, value] : {std::pair{"general", general}, {"farm", farm}, {"sea", sea}}) {
                QTest::newRow((std::string(model) + " on " + text).c_str())
                    << QString::fromLatin1(model) << QString::fromLatin1(text) << value;
            }
        }
    }
    void chunkedPerplexityIsLlamaPerplexitys() {
        QFETCH(QString, model);
        QFETCH(QString, text);
        QFETCH(double, theirs);
        const QString path = familyModel((model + QStringLiteral(".gguf")).toLatin1().constData());
        const QString textPath = sharedModel(QStringLiteral("family/texts/") + text + QStringLiteral(".txt"));
        ORGAN_REQUIRE_SHARED(path);
        ORGAN_REQUIRE_SHARED(textPath);
        QFile file(textPath);
        QVERIFY(file.open(QIODevice::ReadOnly));
        VitalsRequest request;
        request.text = file.readAll().toStdString();
        request.continuation = 0;
        request.chunk = 128;
        const auto report =
            takeVitals(ModelWeights::ofModel(GgufModel::open(path.toStdString())), {}, request);
        QVERIFY(report);
        QCOMPARE(report->chunk, std::size_t(128));
        QCOMPARE(report->scored, report->tokens.size() / 128 * 63);
        const double tolerance = model.endsWith(QStringLiteral("f16")) ? 1.5e-4 : 1e-3 * theirs;
        QVERIFY2(
            std::abs(report->perplexity.perplexity - theirs) <= tolerance,
            qPrintable(
                QStringLiteral("%1, llama-perplexity %2").arg(report->perplexity.perplexity).arg(theirs)));
    }

    void chunkedParents() {
        const QString base = familyModel("family-base-f16.gguf");
        const QString farm = familyModel("family-farm-f16.gguf");
        const QString textPath = sharedModel(QStringLiteral("family/texts/farm.txt"));
        for (const QString& p : {base, farm, textPath}) {
            ORGAN_REQUIRE_SHARED(p);
        }
        QFile file(textPath);
        QVERIFY(file.open(QIODevice::ReadOnly));
        VitalsRequest request;
        request.text = file.readAll().toStdString();
        request.continuation = 0;
        request.chunk = 128;
        const ModelWeights model = ModelWeights::ofModel(GgufModel::open(farm.toStdString()));
        const ModelWeights parent = ModelWeights::ofModel(GgufModel::open(base.toStdString()));
        const ModelWeights same = ModelWeights::ofModel(GgufModel::open(farm.toStdString()));
        const auto report = takeVitals(model, {&parent, &same}, request);
        QVERIFY(report);
        // Measured a chunk at a time, as measured from every chunk's logits kept side by side.
        const Tokenizer tokenizer = Tokenizer::fromWeights(model);
        const std::optional<std::int32_t> bos = tokenizer.leadingBos();
        const auto ours = scoreTokens(Transformer(model), report->tokens, 128, bos, nullptr);
        const auto theirs = scoreTokens(Transformer(parent), report->tokens, 128, bos, nullptr);
        QVERIFY(ours && theirs);
        QCOMPARE(report->perplexity.nll, perplexityOf(*ours).nll);
        QCOMPARE(report->parents[0].perplexity.nll, perplexityOf(*theirs).nll);
        const Divergence kept = divergenceOf(theirs->logits, ours->logits);
        QCOMPARE(report->parents[0].divergence.kl, kept.kl);
        QCOMPARE(report->parents[0].divergence.p99Kl, kept.p99Kl);
        QCOMPARE(report->parents[0].divergence.topAgreement, kept.topAgreement);
        QVERIFY(std::abs(report->parents[0].perplexity.perplexity - 1.6268) <= 1.5e-4);
        QCOMPARE(report->parents[0].divergence.kl.size(), report->scored);
        QVERIFY(report->parents[0].divergence.meanKl > 0.001);
        QCOMPARE(report->parents[1].divergence.meanKl, 0.0);
        QCOMPARE(report->parents[1].divergence.topAgreement, 1.0);
        QCOMPARE(report->importance.angular.size(), std::size_t(6)); // from the first chunk
        // Chunks the model cannot hold, and a text of fewer than two chunks, are refused.
        for (const auto& [chunk, message] :
             {std::pair{std::size_t(512), "chunks of 512 tokens; vital signs take 4 to 256"},
              {std::size_t(2), "chunks of 2 tokens"},
              {std::size_t(256), "chunks of 256 need at least 512"}}) {
            request.chunk = chunk;
            if (chunk == 256) {
                request.text.resize(600);
            }
            try {
                takeVitals(model, {}, request);
                QFAIL("vital signs were taken");
            } catch (const FormatError& error) {
                QVERIFY2(QString::fromUtf8(error.what()).contains(QString::fromUtf8(message)), error.what());
            }
        }
    }

    // The chunk the window scores a text in when none is set: whole when it fits the context
    // (family: 256), else the context, or half the text where that is less; the built-in text
    // (empty) is cut to fit instead. The chunk chosen is one takeVitals takes.
    void chunkToFitTheContext() {
        const QString path = familyModel("family-base-f16.gguf");
        const QString textPath = sharedModel(QStringLiteral("family/texts/farm.txt"));
        for (const QString& p : {path, textPath}) {
            ORGAN_REQUIRE_SHARED(p);
        }
        QFile file(textPath);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const std::string farm = file.readAll().toStdString();
        const ModelWeights model = ModelWeights::ofModel(GgufModel::open(path.toStdString()));
        const Tokenizer tokenizer = Tokenizer::fromWeights(model);
        QCOMPARE(chunkToFit(model, {}), std::size_t(0));
        // The longest prefix that fits 256 tokens whole, and one that does not.
        std::string fits = farm.substr(0, 200);
        while (tokenizer.encode(fits + farm[fits.size()]).size() <= 256) {
            fits += farm[fits.size()];
        }
        QCOMPARE(tokenizer.encode(fits).size(), std::size_t(256));
        QCOMPARE(chunkToFit(model, fits), std::size_t(0));
        std::string over = fits + farm.substr(fits.size(), 40);
        const std::size_t overTokens = tokenizer.encode(over).size();
        QVERIFY(overTokens > 256 && overTokens < 512);
        QCOMPARE(chunkToFit(model, over), overTokens / 2);
        // One final newline is dropped from a text in chunks, as llama-perplexity reads a file.
        const std::size_t withNewline = tokenizer.encode(over + "\n").size();
        QCOMPARE(chunkToFit(model, over + "\n"), overTokens / 2);
        QVERIFY(withNewline >= overTokens);
        QVERIFY(tokenizer.encode(farm).size() >= 512);
        QCOMPARE(chunkToFit(model, farm), std::size_t(256));
        VitalsRequest request;
        request.continuation = 0;
        for (const std::string& text : {over, farm}) {
            request.text = text;
            request.chunk = chunkToFit(model, text);
            const auto report = takeVitals(model, {}, request);
            QVERIFY(report);
            QCOMPARE(report->chunk, request.chunk);
        }
    }

    // In chunks, the model (and each parent) runs each chunk in turn and keeps what it measures of
    // it, not its logits: a text whose scored logits alone would pass the activation budget (over
    // 5 342 positions × 50 257 floats against the 1 GiB floor for a small model) is scored, every
    // position. (Parents in chunks: chunkedParents.)
    void longTextsInChunks() {
        const QString path = sharedModel(QStringLiteral("zoo/tiny-gpt2-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const ModelWeights model = ModelWeights::ofModel(GgufModel::open(path.toStdString()));
        const Tokenizer tokenizer = Tokenizer::fromWeights(model);
        VitalsRequest request;
        request.continuation = 0;
        request.layerImportance = false;
        request.chunk = 64;
        std::size_t tokens = 0;
        while (tokens / 64 * 31 * 50257 * sizeof(float) <= kVitalsActivationFloor) {
            request.text += storyText() + " ";
            tokens = tokenizer.encode(request.text).size();
        }
        const std::size_t scored = tokens / 64 * 31;
        const TransformerShape shape = Transformer(model).shape();
        QCOMPARE(shape.vocabulary, 50257u);
        QVERIFY_THROWS_EXCEPTION(FormatError, checkActivationMemory(model, shape, tokens, 64, 0, false, false,
                                                                    ScoredLogits::Kept));
        const auto report = takeVitals(model, {}, request);
        QVERIFY(report);
        QCOMPARE(report->scored, scored);
        QCOMPARE(report->perplexity.nll.size(), scored);
        QVERIFY(std::isfinite(report->perplexity.perplexity));
    }

    void meaninglessRunsAreRefused_data() {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::newRow("one token") << QStringLiteral("no-bos") << QStringLiteral("a")
                                   << QStringLiteral(
                                          "token(s) in the model's vocabulary; perplexity needs at least 2");
        QTest::newRow("empty vocabulary") << QStringLiteral("no-vocab") << QStringLiteral("Once upon a time")
                                          << QStringLiteral("the text is 0 token(s)");
        QTest::newRow("NaN weights") << QStringLiteral("nan") << QString()
                                     << QStringLiteral("its outputs are not finite numbers");
        QTest::newRow("NaN epsilon") << QStringLiteral("eps-nan") << QString()
                                     << QStringLiteral(
                                            "the norm epsilon is nan; it must be a positive number");
        QTest::newRow("negative epsilon")
            << QStringLiteral("eps-negative") << QString()
            << QStringLiteral("the norm epsilon is -1.000000; it must be a positive number");
        QTest::newRow("600 blocks") << QStringLiteral("deep") << QString()
                                    << QStringLiteral(
                                           "llama.block_count is 600; llama.cpp runs at most 512 blocks");
    }
    void meaninglessRunsAreRefused() {
        QFETCH(QString, edit);
        QFETCH(QString, text);
        QFETCH(QString, message);
        const QString stories = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(stories);
        GgufWriteSpec spec = specFromFile(*GgufFile::open(stories.toStdString()));
        if (edit == QStringLiteral("no-bos")) {
            spec.set("tokenizer.ggml.add_bos_token", MetaValue::fromBool(false));
        } else if (edit == QStringLiteral("no-vocab")) {
            spec.set("tokenizer.ggml.tokens", MetaValue::fromStrings({}));
            spec.set("tokenizer.ggml.scores", MetaValue::fromF32s({}));
            spec.set("tokenizer.ggml.token_type", MetaValue::fromI32s({}));
        } else if (edit == QStringLiteral("nan")) {
            for (auto& t : spec.tensors) {
                if (t.name == "output_norm.weight") {
                    auto nan =
                        std::make_shared<std::vector<float>>(64, std::numeric_limits<float>::quiet_NaN());
                    t.source = {};
                    t.source.bytes = std::as_bytes(std::span(*nan));
                    t.source.owner = nan;
                }
            }
        } else if (edit.startsWith(QStringLiteral("eps"))) {
            spec.set("llama.attention.layer_norm_rms_epsilon",
                     MetaValue::fromF32(edit.endsWith(QStringLiteral("nan")) ? std::nanf("") : -1.0f));
        } else if (edit == QStringLiteral("deep")) {
            spec.set("llama.block_count", MetaValue::fromU32(600));
        }
        QTemporaryDir dir;
        const std::string file = dir.filePath(QStringLiteral("edited.gguf")).toStdString();
        QVERIFY(writeGguf(file, spec).isOk());
        VitalsRequest request;
        request.text = text.toStdString();
        request.continuation = 0;
        try {
            takeVitals(ModelWeights::ofModel(GgufModel::open(file)), {}, request);
            QFAIL("vital signs were taken");
        } catch (const std::exception& error) {
            QVERIFY2(QString::fromUtf8(error.what()).contains(message), error.what());
        }
    }

    void otherArchitecturesAreRefused() {
        const QString path = sharedModel(QStringLiteral("zoo/tiny-mamba-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto gguf = GgufModel::open(path.toStdString());
        try {
            const Transformer transformer(gguf);
            QFAIL("mamba ran");
        } catch (const VitalsUnavailable& error) {
            QVERIFY2(std::string(error.what()).find("not available for architecture 'mamba'") !=
                         std::string::npos,
                     error.what());
        }
        // RoPE scaled other than linearly (YaRN here) would give wrong numbers: refused by name.
        const QString stories = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(stories);
        GgufWriteSpec spec = specFromFile(*GgufFile::open(stories.toStdString()));
        spec.set("llama.rope.scaling.type", MetaValue::fromString("yarn"));
        QTemporaryDir dir;
        const std::string yarn = dir.filePath(QStringLiteral("yarn.gguf")).toStdString();
        QVERIFY(writeGguf(yarn, spec).isOk());
        try {
            const Transformer transformer(GgufModel::open(yarn));
            QFAIL("YaRN ran");
        } catch (const VitalsUnavailable& error) {
            QVERIFY2(std::string(error.what())
                             .find("yarn.gguf: vital signs are not available with 'yarn' RoPE scaling") !=
                         std::string::npos,
                     error.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestVitals)
#include "tst_vitals.moc"
