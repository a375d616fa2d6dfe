// organ specimen: a loadable llama with structured weights; seeds change weights only.
#include "anatomy/anatomy.h"
#include "gguf/specimen.h"
#include "gguf/gguf_model.h"

#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <cstring>
#include <set>

using namespace organ;

namespace {

std::vector<float> floats(const GgufModel& model, const std::string& name) {
    const TensorInfo* t = model.findTensor(name);
    const auto bytes = model.tensorData(*t);
    std::vector<float> out(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
}

double excessKurtosis(const std::vector<float>& v) {
    double mean = 0;
    for (float x : v) {
        mean += x;
    }
    mean /= v.size();
    double m2 = 0;
    double m4 = 0;
    for (float x : v) {
        const double d = x - mean;
        m2 += d * d;
        m4 += d * d * d * d;
    }
    m2 /= v.size();
    m4 /= v.size();
    return m4 / (m2 * m2) - 3.0;
}

// Mean absolute correlation between consecutive rows: near 0 for noise, large for low rank.
double rowCorrelation(const std::vector<float>& v, std::size_t cols) {
    const std::size_t rows = v.size() / cols;
    double total = 0;
    for (std::size_t r = 0; r + 1 < rows; ++r) {
        double ab = 0, aa = 0, bb = 0;
        for (std::size_t c = 0; c < cols; ++c) {
            const double a = v[r * cols + c];
            const double b = v[(r + 1) * cols + c];
            ab += a * b;
            aa += a * a;
            bb += b * b;
        }
        total += std::abs(ab) / std::sqrt(aa * bb);
    }
    return total / (rows - 1);
}

} // namespace

class TestSpecimen : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::shared_ptr<const GgufModel> m_a;
    std::shared_ptr<const GgufModel> m_b;

private slots:
    void initTestCase() {
        const std::string a = m_dir.filePath(QStringLiteral("a.gguf")).toStdString();
        const std::string b = m_dir.filePath(QStringLiteral("b.gguf")).toStdString();
        QVERIFY(writeSpecimen(a, 1).isOk());
        QVERIFY(writeSpecimen(b, 2).isOk());
        m_a = GgufModel::open(a);
        m_b = GgufModel::open(b);
    }

    void hasWhatLlamaCppNeeds() {
        const char* keys[] = {"general.architecture",
                              "llama.context_length",
                              "llama.embedding_length",
                              "llama.block_count",
                              "llama.feed_forward_length",
                              "llama.rope.dimension_count",
                              "llama.attention.head_count",
                              "llama.attention.head_count_kv",
                              "llama.attention.layer_norm_rms_epsilon",
                              "tokenizer.ggml.model",
                              "tokenizer.ggml.tokens",
                              "tokenizer.ggml.scores",
                              "tokenizer.ggml.token_type",
                              "tokenizer.ggml.bos_token_id",
                              "tokenizer.ggml.eos_token_id"};
        for (const char* key : keys) {
            QVERIFY2(m_a->find(key) != nullptr, key);
        }
        QCOMPARE(m_a->architecture(), std::string("llama"));
        const std::uint64_t vocab = m_a->find("tokenizer.ggml.tokens")->arraySize();
        QCOMPARE(vocab, std::uint64_t(512));
        QCOMPARE(m_a->find("tokenizer.ggml.scores")->arraySize(), vocab);
        QCOMPARE(m_a->find("tokenizer.ggml.token_type")->arraySize(), vocab);
        // Every token is distinct, byte fallback tokens are all present.
        std::set<std::string> tokens;
        int bytes = 0;
        m_a->find("tokenizer.ggml.tokens")->forEachElement([&](const MetaValue& v) {
            const std::string token(*v.asString());
            bytes += token.size() == 6 && token.starts_with("<0x");
            tokens.insert(token);
            return true;
        });
        QCOMPARE(tokens.size(), std::size_t(vocab));
        QCOMPARE(bytes, 256);
        // Shapes agree with the hyperparameters.
        const std::uint64_t e = *m_a->archValue("embedding_length");
        const std::uint64_t f = *m_a->archValue("feed_forward_length");
        const std::uint64_t blocks = *m_a->archValue("block_count");
        const std::uint64_t kv =
            e / *m_a->archValue("attention.head_count") * *m_a->archValue("attention.head_count_kv");
        QCOMPARE(m_a->findTensor("token_embd.weight")->ne, (std::array<std::uint64_t, 4>{e, vocab, 1, 1}));
        QCOMPARE(m_a->findTensor("output.weight")->ne, (std::array<std::uint64_t, 4>{e, vocab, 1, 1}));
        for (std::uint64_t b = 0; b < blocks; ++b) {
            const std::string blk = "blk." + std::to_string(b) + ".";
            QCOMPARE(m_a->findTensor(blk + "attn_k.weight")->ne[1], kv);
            QCOMPARE(m_a->findTensor(blk + "ffn_down.weight")->ne[0], f);
            QCOMPARE(m_a->findTensor(blk + "ffn_up.weight")->ne[1], f);
        }
        QCOMPARE(m_a->tensors().size(), std::size_t(3 + 9 * blocks));
        const ModelAnatomy anatomy = analyzeAnatomy(*m_a);
        QCOMPARE(anatomy.bySystem[size_t(System::Other)].tensors, std::uint64_t(0));
    }

    void seedsChangeWeightsOnly() {
        QCOMPARE(m_a->tensors().size(), m_b->tensors().size());
        for (std::size_t i = 0; i < m_a->tensors().size(); ++i) {
            const TensorInfo& ta = m_a->tensors()[i];
            const TensorInfo& tb = m_b->tensors()[i];
            QCOMPARE(ta.name, tb.name);
            QCOMPARE(ta.ne, tb.ne);
            QCOMPARE(ta.type, tb.type);
            const auto da = m_a->tensorData(ta);
            const auto db = m_b->tensorData(tb);
            QVERIFY2(!std::equal(da.begin(), da.end(), db.begin(), db.end()), ta.name.c_str());
        }
    }

    void sameSeedSameFile() {
        const std::string c = m_dir.filePath(QStringLiteral("c.gguf")).toStdString();
        QVERIFY(writeSpecimen(c, 1).isOk());
        const auto model = GgufModel::open(c);
        for (const auto& t : model->tensors()) {
            const auto x = model->tensorData(t);
            const auto y = m_a->tensorData(*m_a->findTensor(t.name));
            QVERIFY(std::equal(x.begin(), x.end(), y.begin(), y.end()));
        }
    }

    // Not plain noise: heavy tails, correlated rows, and a structure that varies by layer.
    void weightsHaveStructure() {
        std::vector<double> correlations;
        for (int b = 0; b < 4; ++b) {
            const auto up = floats(*m_a, "blk." + std::to_string(b) + ".ffn_up.weight");
            QVERIFY2(excessKurtosis(up) > 0.3, qPrintable(QString::number(excessKurtosis(up))));
            correlations.push_back(rowCorrelation(up, 64));
            QVERIFY2(correlations.back() > 0.2, qPrintable(QString::number(correlations.back())));
        }
        QVERIFY(std::abs(correlations.front() - correlations.back()) > 0.02);
        const auto norm = floats(*m_a, "blk.0.attn_norm.weight");
        for (float x : norm) {
            QVERIFY(x > 0.5f && x < 1.5f);
        }
    }
};

QTEST_APPLESS_MAIN(TestSpecimen)
#include "tst_specimen.moc"
