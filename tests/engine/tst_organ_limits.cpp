// A directory of thousands of tensor files under a small limit of open files: opening it as a
// model, measuring it, assembling it, and writing directories from it keep no file open per
// tensor (`organ inspect` failed with "Too many open files" on a 500-layer model's 4 503 files
// under ulimit -n 1024). The limit is set in this process, hard too, so nothing can raise it.
#include "fixtures.h"

#include "measure/model_measure.h"
#include "organs/organ_directory.h"
#include "purify/purify_model.h"

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>
#include <sys/resource.h>

using namespace organ;
using namespace organ::testing;

namespace {

constexpr rlim_t kOpenFiles = 128;
constexpr std::uint32_t kLayers = 300; // 9 tensors a layer: 2 703 files, 21 times the limit

GgufWriteSpec deepModel() {
    GgufWriteSpec spec;
    spec.set("general.architecture", MetaValue::fromString("llama"));
    spec.set("llama.block_count", MetaValue::fromU32(kLayers));
    spec.set("llama.embedding_length", MetaValue::fromU32(32));
    spec.tensors.push_back(patternTensor("token_embd.weight", TensorType::F32, {32, 64}, 1));
    spec.tensors.push_back(patternTensor("output_norm.weight", TensorType::F32, {32}, 2));
    spec.tensors.push_back(patternTensor("output.weight", TensorType::F32, {32, 64}, 3));
    for (std::uint32_t l = 0; l < kLayers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        for (const char* name : {"attn_norm", "ffn_norm"}) {
            spec.tensors.push_back(
                patternTensor(p + name + ".weight", TensorType::F32, {32}, std::uint8_t(l)));
        }
        for (const char* name :
             {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
            spec.tensors.push_back(
                patternTensor(p + name + ".weight", TensorType::F16, {32, 32}, std::uint8_t(l)));
        }
    }
    return spec;
}

} // namespace

class TestOrganLimits : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_directory;

    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        const QString file = path(QStringLiteral("deep.gguf"));
        QVERIFY(writeFixture(file, deepModel()));
        m_directory = path(QStringLiteral("deep"));
        QVERIFY(extractOrgans(*GgufModel::open(file.toStdString()), m_directory.toStdString()).isOk());
        const rlimit limit{kOpenFiles, kOpenFiles};
        QCOMPARE(::setrlimit(RLIMIT_NOFILE, &limit), 0);
    }

    void opensAndMeasures() {
        const auto model = openModel(m_directory.toStdString());
        QCOMPARE(model->tensors().size(), std::size_t(3 + 9 * kLayers));
        const ModelAnatomy anatomy = analyzeAnatomy(*model);
        ModelMeasurement measurement;
        const JobResult measured = measureModel(*model, anatomy, {}, measurement);
        QVERIFY2(measured.isOk(), measured.message.c_str());
        QCOMPARE(measurement.tensors.size(), model->tensors().size());
    }

    void assemblesByteForByte() {
        const QString back = path(QStringLiteral("back.gguf"));
        const JobResult done =
            assembleOrgans(OrganDirectory::open(m_directory.toStdString()), back.toStdString(), true);
        QVERIFY2(done.isOk(), done.message.c_str());
        QVERIFY(readAll(back) == readAll(path(QStringLiteral("deep.gguf"))));
    }

    // Directories written from it link every unchanged file: one descriptor at a time.
    void writesDirectoriesFromIt() {
        const auto model = openModel(m_directory.toStdString());
        const QString again = path(QStringLiteral("again"));
        const JobResult extracted = extractOrgans(*model, again.toStdString());
        QVERIFY2(extracted.isOk(), extracted.message.c_str());
        TensorSelector select;
        select.names = {"blk.7.ffn_up.weight"};
        const QString purified = path(QStringLiteral("purified"));
        const PurifyOutcome outcome = purifyModel(*model, select, PurifyParams{}, purified.toStdString());
        QVERIFY2(outcome.written.isOk(), outcome.written.message.c_str());
        QCOMPARE(OrganDirectory::open(purified.toStdString()).tensors().size(), model->tensors().size());
    }
};

QTEST_GUILESS_MAIN(TestOrganLimits)
#include "tst_organ_limits.moc"
