// Anatomy: the classification table on names of every family, on every real file, and
// the per-model statistics. docs/anatomy.md must list every rule of the table.
#include "anatomy/anatomy.h"
#include "shared_models.h"

#include <QFile>
#include <QTest>
#include <set>

using namespace organ;
using namespace organ::testing;

namespace {

std::map<std::string, int> systemCounts(const ModelAnatomy& anatomy) {
    std::map<std::string, int> counts;
    for (const auto& t : anatomy.tensors) {
        ++counts[std::string(systemName(t.system))];
    }
    return counts;
}

std::set<std::string> roles(const ModelAnatomy& anatomy) {
    std::set<std::string> out;
    for (const auto& t : anatomy.tensors) {
        out.insert(t.role);
    }
    return out;
}

} // namespace

class TestAnatomy : public QObject {
    Q_OBJECT

private slots:
    void classify_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("system");
        QTest::addColumn<QString>("role");
        QTest::addColumn<int>("layer"); // -1: none
        auto row = [](const char* name, const char* system, const char* role, int layer) {
            QTest::newRow(name) << QString::fromUtf8(name) << QString::fromUtf8(system)
                                << QString::fromUtf8(role) << layer;
        };
        row("token_embd.weight", "embed", "token_embd", -1);
        row("output.weight", "embed", "output", -1);
        row("position_embd.weight", "embed", "pos_embd", -1);
        row("token_types.weight", "embed", "token_types", -1);
        row("output_norm.weight", "norm", "output_norm", -1);
        row("output_norm.bias", "norm", "output_norm.bias", -1);
        row("token_embd_norm.weight", "norm", "token_embd_norm", -1);
        row("rope_freqs.weight", "other", "rope_freqs", -1);
        row("blk.0.attn_q.weight", "skeleton", "attn_q", 0);
        row("blk.12.attn_k.weight", "skeleton", "attn_k", 12);
        row("blk.3.attn_v.bias", "skeleton", "attn_v.bias", 3);
        row("blk.79.attn_output.weight", "skeleton", "attn_output", 79);
        row("blk.1.attn_qkv.weight", "skeleton", "attn_qkv", 1);
        row("blk.1.attn_q_a.weight", "skeleton", "attn_q_a", 1);
        row("blk.1.attn_q_b.weight", "skeleton", "attn_q_b", 1);
        row("blk.1.attn_kv_a_mqa.weight", "skeleton", "attn_kv_a_mqa", 1);
        row("blk.1.attn_kv_b.weight", "skeleton", "attn_kv_b", 1);
        row("blk.1.attn_k_b.weight", "skeleton", "attn_k_b", 1);
        row("blk.1.attn_v_b.weight", "skeleton", "attn_v_b", 1);
        row("blk.1.attn_q_a_norm.weight", "norm", "attn_q_a_norm", 1);
        row("blk.1.attn_kv_a_norm.weight", "norm", "attn_kv_a_norm", 1);
        row("blk.2.attn_norm.weight", "norm", "attn_norm", 2);
        row("blk.2.ffn_norm.weight", "norm", "ffn_norm", 2);
        row("blk.2.attn_q_norm.weight", "norm", "attn_q_norm", 2);
        row("blk.2.post_attention_norm.weight", "norm", "post_attention_norm", 2);
        row("blk.2.post_ffw_norm.weight", "norm", "post_ffw_norm", 2);
        row("blk.4.ffn_gate.weight", "organ", "ffn_gate", 4);
        row("blk.4.ffn_up.weight", "organ", "ffn_up", 4);
        row("blk.4.ffn_down.weight", "organ", "ffn_down", 4);
        row("blk.4.ffn_down.bias", "organ", "ffn_down.bias", 4);
        row("blk.5.ffn_gate_exps.weight", "organ", "ffn_gate_exps", 5);
        row("blk.5.ffn_up_exps.weight", "organ", "ffn_up_exps", 5);
        row("blk.5.ffn_down_exps.weight", "organ", "ffn_down_exps", 5);
        row("blk.5.ffn_gate_shexp.weight", "organ", "ffn_gate_shexp", 5);
        row("blk.5.ffn_down_shexp.weight", "organ", "ffn_down_shexp", 5);
        row("blk.5.ffn_gate_inp.weight", "organ", "ffn_gate_inp", 5);
        row("blk.5.ffn_gate_inp_shexp.weight", "organ", "ffn_gate_inp_shexp", 5);
        row("blk.5.exp_probs_b.bias", "organ", "exp_probs_b.bias", 5);
        row("blk.0.ssm_in.weight", "skeleton", "ssm_in", 0);
        row("blk.0.ssm_a", "skeleton", "ssm_a", 0);
        row("blk.0.ssm_d", "skeleton", "ssm_d", 0);
        row("blk.0.ssm_conv1d.bias", "skeleton", "ssm_conv1d.bias", 0);
        row("blk.0.ssm_norm.weight", "norm", "ssm_norm", 0);
        row("blk.0.time_mix_key.weight", "skeleton", "time_mix_key", 0);
        row("blk.0.time_mix_ln.weight", "norm", "time_mix_ln", 0);
        row("blk.0.channel_mix_key.weight", "organ", "channel_mix_key", 0);
        row("blk.0.attn_q.weight.lora_a", "adapter", "attn_q.lora_a", 0);
        row("blk.0.ffn_down.weight.lora_b", "adapter", "ffn_down.lora_b", 0);
        row("enc.blk.2.attn_o.weight", "skeleton", "enc_attn_output", 2);
        row("dec.blk.1.cross_attn_q.weight", "skeleton", "dec_cross_attn_q", 1);
        row("blk.7.something_new.weight", "other", "something_new", 7);
        row("mystery", "other", "mystery", -1);
        row("blk.x.attn_q.weight", "other", "blk.x.attn_q", -1);
        row("blk.3", "other", "blk.3", -1);
    }

    void classify() {
        QFETCH(QString, name);
        QFETCH(QString, system);
        QFETCH(QString, role);
        QFETCH(int, layer);
        const TensorAnatomy a = classifyTensor(name.toStdString());
        QCOMPARE(QString::fromUtf8(systemName(a.system)), system);
        QCOMPARE(QString::fromStdString(a.role), role);
        QCOMPARE(a.layer ? int(*a.layer) : -1, layer);
    }

    // The one parser and writer of layer names, used by anatomy, validation, the graft check,
    // the window's graft document and the specimens.
    void layerNames() {
        const auto parsed = parseLayerName("blk.12.attn_q.weight");
        QVERIFY(parsed);
        QCOMPARE(parsed->layer, 12u);
        QCOMPARE(std::string(parsed->rest), std::string("attn_q.weight"));
        for (const char* notInLayer : {"token_embd.weight", "blk.x.attn_q", "blk.12", "blk.12attn", "blk..a",
                                       "blk.-1.a", "blk.65536.a", "blk.4000000000.a", "enc.blk.1.a"}) {
            QVERIFY2(!parseLayerName(notInLayer), notInLayer);
        }
        QCOMPARE(parseLayerName("blk.65535.a")->layer, 65535u);
        QCOMPARE(std::string(suffixInLayer("blk.3.ffn_up.weight", 3)), std::string("ffn_up.weight"));
        QVERIFY(suffixInLayer("blk.3.ffn_up.weight", 30).empty());
        QVERIFY(suffixInLayer("blk.30.ffn_up.weight", 3).empty());
        QVERIFY(suffixInLayer("output.weight", 0).empty());
        QCOMPARE(layerTensorName(7, "attn_k.bias"), std::string("blk.7.attn_k.bias"));
        const std::string round = layerTensorName(kMaxLayerIndex, "x");
        QCOMPARE(parseLayerName(round)->layer, kMaxLayerIndex);
    }

    void everySharedModel() {
        ORGAN_REQUIRE_SHARED(sharedModel(QString()));
        int files = 0;
        for (const QString& path : sharedGgufFiles()) {
            const auto model = GgufModel::open(path.toStdString());
            const ModelAnatomy anatomy = analyzeAnatomy(*model);
            QCOMPARE(anatomy.tensors.size(), model->tensors().size());
            GroupStats sum;
            for (const auto& s : anatomy.bySystem) {
                sum.tensors += s.tensors;
                sum.parameters += s.parameters;
                sum.bytes += s.bytes;
            }
            QCOMPARE(sum.tensors, std::uint64_t(model->tensors().size()));
            QCOMPARE(sum.parameters, anatomy.total.parameters);
            QCOMPARE(sum.bytes, anatomy.total.bytes);
            GroupStats layers = anatomy.outsideLayers;
            for (const auto& l : anatomy.byLayer) {
                layers.tensors += l.tensors;
                layers.bytes += l.bytes;
            }
            QCOMPARE(layers.tensors, anatomy.total.tensors);
            QCOMPARE(layers.bytes, anatomy.total.bytes);
            // Every tensor of these real files is known to the table.
            for (std::size_t i = 0; i < anatomy.tensors.size(); ++i) {
                QVERIFY2(anatomy.tensors[i].system != System::Other,
                         qPrintable(path + QStringLiteral(": ") +
                                    QString::fromStdString(model->tensors()[i].name)));
            }
            if (const auto blocks = model->archValue("block_count"); blocks && !model->tensors().empty()) {
                QCOMPARE(std::uint64_t(anatomy.layerCount()), *blocks);
            }
            ++files;
        }
        QVERIFY(files >= 40);
    }

    void storiesSystems() {
        const QString path = sharedModel(QStringLiteral("stories260K-f32.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto model = GgufModel::open(path.toStdString());
        const ModelAnatomy a = analyzeAnatomy(*model);
        const std::map<std::string, int> expected{
            {"embed", 2}, {"skeleton", 20}, {"organ", 15}, {"norm", 11}};
        QCOMPARE(systemCounts(a), expected);
        QCOMPARE(a.layerCount(), 5u);
        for (const auto& layer : a.byLayer) {
            QCOMPARE(layer.tensors, std::uint64_t(9));
        }
        QCOMPARE(a.total.parameters, std::uint64_t(292800));
        QCOMPARE(a.bySystem[size_t(System::Organ)].parameters, std::uint64_t(15 * 64 * 172));
        QCOMPARE(a.total.bitsPerWeight(), 32.0);
    }

    void quantizationMix() {
        const QString path = sharedModel(QStringLiteral("stories260K-q8_0.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto model = GgufModel::open(path.toStdString());
        const ModelAnatomy a = analyzeAnatomy(*model);
        QCOMPARE(a.byType.size(), std::size_t(3));
        QCOMPARE(a.byType.at(TensorType::F16).tensors, std::uint64_t(5));  // ffn_down kept in F16
        QCOMPARE(a.byType.at(TensorType::F32).tensors, std::uint64_t(11)); // norms
        QVERIFY(a.total.bitsPerWeight() > 8.5 && a.total.bitsPerWeight() < 16.0);
        QVERIFY(QString::fromStdString(organ::quantizationMix(a)).startsWith(QStringLiteral("Q8_0 ")));
    }

    void zooFamilies_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QStringList>("expectedRoles");
        QTest::addColumn<QString>("systems"); // "embed=1,skeleton=..."
        QTest::newRow("deepseek2")
            << QStringLiteral("zoo/tiny-deepseek2-f32.gguf")
            << QStringList{QStringLiteral("attn_q_a"),        QStringLiteral("attn_q_b"),
                           QStringLiteral("attn_kv_a_mqa"),   QStringLiteral("attn_k_b"),
                           QStringLiteral("attn_v_b"),        QStringLiteral("ffn_gate_exps"),
                           QStringLiteral("ffn_up_shexp"),    QStringLiteral("ffn_gate_inp"),
                           QStringLiteral("exp_probs_b.bias")}
            << QString();
        QTest::newRow("qwen2moe") << QStringLiteral("zoo/tiny-qwen2moe-f32.gguf")
                                  << QStringList{QStringLiteral("ffn_gate_inp_shexp"),
                                                 QStringLiteral("ffn_down_exps"),
                                                 QStringLiteral("attn_q.bias")}
                                  << QString();
        QTest::newRow("lora") << QStringLiteral("zoo/stories260K-lora-r8-f32.gguf")
                              << QStringList{QStringLiteral("attn_q.lora_a"),
                                             QStringLiteral("ffn_down.lora_b")}
                              << QStringLiteral("adapter=70");
        QTest::newRow("mamba") << QStringLiteral("zoo/tiny-mamba-f32.gguf")
                               << QStringList{QStringLiteral("ssm_a"), QStringLiteral("ssm_conv1d.bias")}
                               << QStringLiteral("embed=1,norm=3,skeleton=18");
        QTest::newRow("bert") << QStringLiteral("zoo/tiny-bert-f32.gguf")
                              << QStringList{QStringLiteral("token_types"), QStringLiteral("pos_embd"),
                                             QStringLiteral("attn_output_norm"),
                                             QStringLiteral("layer_output_norm.bias")}
                              << QString();
        QTest::newRow("gpt2") << QStringLiteral("zoo/tiny-gpt2-f32.gguf")
                              << QStringList{QStringLiteral("attn_qkv"), QStringLiteral("attn_qkv.bias"),
                                             QStringLiteral("pos_embd")}
                              << QString();
        QTest::newRow("gemma3") << QStringLiteral("zoo/tiny-gemma3-f32.gguf")
                                << QStringList{QStringLiteral("post_attention_norm"),
                                               QStringLiteral("post_ffw_norm"), QStringLiteral("attn_k_norm")}
                                << QString();
        QTest::newRow("phi3") << QStringLiteral("zoo/tiny-phi3-f32.gguf")
                              << QStringList{QStringLiteral("attn_qkv")}
                              << QStringLiteral("embed=2,norm=5,organ=4,skeleton=4");
    }

    void zooFamilies() {
        QFETCH(QString, file);
        QFETCH(QStringList, expectedRoles);
        QFETCH(QString, systems);
        ORGAN_REQUIRE_SHARED(sharedModel(file));
        const auto model = GgufModel::open(sharedModel(file).toStdString());
        const ModelAnatomy a = analyzeAnatomy(*model);
        const auto present = roles(a);
        for (const QString& role : expectedRoles) {
            QVERIFY2(present.count(role.toStdString()) == 1, qPrintable(role));
        }
        if (!systems.isEmpty()) {
            QStringList actual;
            for (const auto& [name, count] : systemCounts(a)) {
                actual << QString::fromStdString(name) + u'=' + QString::number(count);
            }
            QCOMPARE(actual.join(u','), systems);
        }
    }

    // One table in code, one in docs/anatomy.md: every rule is documented.
    void documentedInDocs() {
        QFile docs(QStringLiteral(ORGAN_SOURCE_DIR "/docs/anatomy.md"));
        QVERIFY(docs.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(docs.readAll());
        for (const auto& rule : anatomyRules()) {
            const QString stem = QString::fromUtf8(rule.stem.data(), qsizetype(rule.stem.size()));
            const QString cell =
                QStringLiteral("| `") + stem +
                (rule.match == AnatomyRule::Match::Prefix ? QStringLiteral("*") : QString()) +
                QStringLiteral("` | ") + QString::fromUtf8(systemName(rule.system).data()) +
                QStringLiteral(" |");
            QVERIFY2(text.contains(cell),
                     qPrintable(QStringLiteral("docs/anatomy.md lacks the row ") + cell));
        }
    }
};

QTEST_APPLESS_MAIN(TestAnatomy)
#include "tst_anatomy.moc"
