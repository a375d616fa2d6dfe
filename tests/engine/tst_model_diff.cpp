// organ diff's engine: every figure against values computed here from the tensors' values, each
// model's types decoded on their own; tensors in one model only, of another shape, or outside
// the selection; summaries per system and layer; threads and cancelling.
#include "fixtures.h"
#include "measure/model_diff.h"
#include "quant/dequant.h"

#include <QTemporaryDir>
#include <QTest>
#include <cmath>

using namespace organ;
using namespace organ::testing;

namespace {

TensorToWrite valuesTensor(const std::string& name, TensorType type, std::vector<std::uint64_t> dims,
                           const std::vector<float>& values) {
    TensorToWrite t;
    t.name = name;
    t.type = type;
    t.nDims = static_cast<std::uint32_t>(dims.size());
    for (std::size_t d = 0; d < dims.size(); ++d) {
        t.ne[d] = dims[d];
    }
    auto buffer = std::make_shared<std::vector<std::byte>>();
    if (type == TensorType::F32) {
        buffer->resize(values.size() * 4);
        std::memcpy(buffer->data(), values.data(), buffer->size());
    } else {
        buffer->resize(values.size() * 2);
        for (std::size_t i = 0; i < values.size(); ++i) {
            const std::uint16_t h = floatToHalf(values[i]);
            std::memcpy(buffer->data() + 2 * i, &h, 2);
        }
    }
    t.source.bytes = *buffer;
    t.source.owner = buffer;
    return t;
}

std::vector<float> wave(std::size_t n, double phase) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = static_cast<float>(std::sin(0.7 * double(i) + phase));
    }
    return v;
}

GgufWriteSpec specOf(std::vector<TensorToWrite> tensors) {
    GgufWriteSpec spec;
    spec.metadata.emplace_back("general.architecture", MetaValue::fromString("llama"));
    spec.tensors = std::move(tensors);
    return spec;
}

// The figures as defined, in double, from the values each model decodes.
struct Want {
    double aa = 0, bb = 0, ab = 0, dd = 0, maxAbs = 0;
    std::uint64_t changed = 0, values = 0;
};
Want wantOf(const std::vector<float>& a, const std::vector<float>& b) {
    Want w;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = double(b[i]) - double(a[i]);
        w.aa += double(a[i]) * a[i];
        w.bb += double(b[i]) * b[i];
        w.ab += double(a[i]) * b[i];
        w.dd += d * d;
        w.maxAbs = std::max(w.maxAbs, std::abs(d));
        w.changed += a[i] != b[i] ? 1 : 0;
        ++w.values;
    }
    return w;
}

void compareSums(const DiffSums& got, const Want& want) {
    QCOMPARE(got.values, want.values);
    QCOMPARE(got.changed, want.changed);
    QVERIFY(std::abs(got.maxAbs - want.maxAbs) <= 1e-12);
    QVERIFY(std::abs(*got.relativeError() - std::sqrt(want.dd / want.aa)) <= 1e-12);
    QVERIFY(std::abs(*got.cosine() - want.ab / std::sqrt(want.aa * want.bb)) <= 1e-12);
    QVERIFY(std::abs(*got.sqnrDb() - 10 * std::log10(want.aa / want.dd)) <= 1e-9);
}

const TensorDiff* find(const ModelDiff& diff, const std::string& name) {
    for (const TensorDiff& t : diff.tensors) {
        if (t.name == name) {
            return &t;
        }
    }
    return nullptr;
}

} // namespace

class TestModelDiff : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_a;
    QString m_b;
    std::vector<float> m_q, m_qB, m_k, m_kB, m_up;

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_q = wave(32, 0.0);
        m_qB = m_q;
        for (std::size_t i = 0; i < m_qB.size(); i += 2) {
            m_qB[i] += 0.03f * float(i % 5) - 0.05f; // every other value moved, by different amounts
        }
        m_k = wave(16, 1.0);
        m_kB = wave(16, 1.1);
        m_up = wave(16, 2.0);
        m_a = m_dir.filePath(QStringLiteral("a.gguf"));
        m_b = m_dir.filePath(QStringLiteral("b.gguf"));
        QVERIFY(writeFixture(
            m_a,
            specOf({valuesTensor("token_embd.weight", TensorType::F32, {4, 2}, std::vector<float>(8, 0.0f)),
                    valuesTensor("blk.0.attn_q.weight", TensorType::F32, {8, 4}, m_q),
                    valuesTensor("blk.0.ffn_up.weight", TensorType::F32, {8, 2}, m_up),
                    valuesTensor("blk.1.attn_k.weight", TensorType::F32, {4, 4}, m_k),
                    valuesTensor("blk.1.ffn_down.weight", TensorType::F32, {4, 4}, wave(16, 3.0)),
                    valuesTensor("output.weight", TensorType::F32, {4, 2}, wave(8, 4.0))})));
        QVERIFY(writeFixture(
            m_b, specOf({valuesTensor("token_embd.weight", TensorType::F32, {4, 2}, wave(8, 5.0)),
                         valuesTensor("blk.0.attn_q.weight", TensorType::F32, {8, 4}, m_qB),
                         valuesTensor("blk.0.ffn_up.weight", TensorType::F32, {8, 2}, m_up),
                         valuesTensor("blk.1.attn_k.weight", TensorType::F16, {4, 4}, m_kB),
                         valuesTensor("blk.1.ffn_down.weight", TensorType::F32, {2, 8}, wave(16, 3.0)),
                         valuesTensor("blk.2.attn_v.weight", TensorType::F32, {4, 2}, wave(8, 6.0))})));
    }

    void everyFigure() {
        const auto a = GgufModel::open(RootedPath(m_a.toStdString()));
        const auto b = GgufModel::open(RootedPath(m_b.toStdString()));
        const auto diff = diffModels(*a, *b, TensorSelector{});
        QVERIFY(diff);
        QCOMPARE(diff->tensors.size(), std::size_t(4));
        // Changed in place, the same type.
        const TensorDiff* q = find(*diff, "blk.0.attn_q.weight");
        QVERIFY(q && !q->identical);
        compareSums(q->sums, wantOf(m_q, m_qB));
        QCOMPARE(q->sums.changed, std::uint64_t(16)); // every other value
        // The same bytes.
        const TensorDiff* up = find(*diff, "blk.0.ffn_up.weight");
        QVERIFY(up && up->identical);
        QCOMPARE(*up->sums.relativeError(), 0.0);
        QCOMPARE(*up->sums.cosine(), 1.0);
        QVERIFY(!up->sums.sqnrDb()); // infinite
        QCOMPARE(up->sums.changed, std::uint64_t(0));
        // F32 against F16: B's values as F16 decodes them.
        const TensorDiff* k = find(*diff, "blk.1.attn_k.weight");
        QVERIFY(k && !k->identical && k->typeB == TensorType::F16);
        std::vector<float> kB(m_kB.size());
        for (std::size_t i = 0; i < kB.size(); ++i) {
            kB[i] = halfToFloat(floatToHalf(m_kB[i]));
        }
        compareSums(k->sums, wantOf(m_k, kB));
        // Zeros in A: no relative error or SQNR to give, a cosine of 0.
        const TensorDiff* embed = find(*diff, "token_embd.weight");
        QVERIFY(embed && !embed->sums.relativeError() && !embed->sums.sqnrDb());
        QCOMPARE(*embed->sums.cosine(), 0.0);
        // Listed, not compared.
        QCOMPARE(diff->onlyInA, std::vector<std::string>{"output.weight"});
        QCOMPARE(diff->onlyInB, std::vector<std::string>{"blk.2.attn_v.weight"});
        QCOMPARE(diff->shapes.size(), std::size_t(1));
        QCOMPARE(diff->shapes[0].name, std::string("blk.1.ffn_down.weight"));
        QCOMPARE(diff->shapes[0].shapeA, std::string("4 × 4"));
        QCOMPARE(diff->shapes[0].shapeB, std::string("2 × 8"));
    }

    // A system's and a layer's figures pool their tensors' sums.
    void groups() {
        const auto a = GgufModel::open(RootedPath(m_a.toStdString()));
        const auto b = GgufModel::open(RootedPath(m_b.toStdString()));
        const auto diff = diffModels(*a, *b, TensorSelector{});
        QVERIFY(diff);
        std::vector<std::string> systems;
        for (const DiffGroup& g : diff->bySystem) {
            systems.push_back(g.label);
        }
        QCOMPARE(systems, (std::vector<std::string>{"embed", "skeleton", "organ"}));
        const DiffGroup& skeleton = diff->bySystem[1];
        QCOMPARE(skeleton.tensors, std::uint64_t(2));
        QCOMPARE(skeleton.identical, std::uint64_t(0));
        std::vector<float> kB(m_kB.size());
        for (std::size_t i = 0; i < kB.size(); ++i) {
            kB[i] = halfToFloat(floatToHalf(m_kB[i]));
        }
        const Want q = wantOf(m_q, m_qB);
        const Want k = wantOf(m_k, kB);
        QVERIFY(std::abs(*skeleton.sums.relativeError() - std::sqrt((q.dd + k.dd) / (q.aa + k.aa))) <= 1e-12);
        QCOMPARE(skeleton.sums.maxAbs, std::max(q.maxAbs, k.maxAbs));
        const DiffGroup& organs = diff->bySystem[2];
        QCOMPARE(organs.identical, std::uint64_t(1));
        std::vector<std::string> layers;
        for (const DiffGroup& g : diff->byLayer) {
            layers.push_back(g.label);
        }
        QCOMPARE(layers, (std::vector<std::string>{"layer 0", "layer 1", "no layer"}));
        QCOMPARE(diff->byLayer[0].tensors, std::uint64_t(2));
        QCOMPARE(diff->byLayer[1].tensors, std::uint64_t(1));
        // The JSON's names, per tensor.
        const nlohmann::json j = modelDiffToJson(*diff);
        for (const char* key :
             {"name", "relative_error", "cosine", "sqnr_db", "max_abs", "changed_share", "identical"}) {
            QVERIFY2(j["tensors"][0].contains(key), key);
        }
        QVERIFY(j["tensors"][0]["relative_error"].is_null()); // token_embd: A is all zeros
        QCOMPARE(j["other_shapes"][0]["name"].get<std::string>(), std::string("blk.1.ffn_down.weight"));
        QVERIFY(modelDiffText(*diff).find("only in a.gguf: output.weight") != std::string::npos);
    }

    void selection() {
        const auto a = GgufModel::open(RootedPath(m_a.toStdString()));
        const auto b = GgufModel::open(RootedPath(m_b.toStdString()));
        TensorSelector organs;
        organs.system = System::Organ;
        const auto diff = diffModels(*a, *b, organs);
        QVERIFY(diff);
        QCOMPARE(diff->tensors.size(), std::size_t(1));
        QCOMPARE(diff->tensors[0].name, std::string("blk.0.ffn_up.weight"));
        QCOMPARE(diff->shapes.size(), std::size_t(1)); // ffn_down is an organ too
        QVERIFY(diff->onlyInA.empty() && diff->onlyInB.empty());
        TensorSelector layer1;
        layer1.firstLayer = 1;
        layer1.lastLayer = 1;
        const auto one = diffModels(*a, *b, layer1);
        QCOMPARE(one->tensors.size(), std::size_t(1));
        QCOMPARE(one->tensors[0].name, std::string("blk.1.attn_k.weight"));
    }

    // The same figures on 1 and 3 threads; a stop asked for before the start gives nothing.
    void threadsAndStop() {
        const auto a = GgufModel::open(RootedPath(m_a.toStdString()));
        const auto b = GgufModel::open(RootedPath(m_b.toStdString()));
        const auto one = diffModels(*a, *b, TensorSelector{}, {}, nullptr, 1);
        const auto three = diffModels(*a, *b, TensorSelector{}, {}, nullptr, 3);
        QCOMPARE(modelDiffToJson(*one).dump(), modelDiffToJson(*three).dump());
        StopToken stop;
        stop.requestStop();
        QVERIFY(!diffModels(*a, *b, TensorSelector{}, {}, &stop));
    }
};

QTEST_APPLESS_MAIN(TestModelDiff)
#include "tst_model_diff.moc"
