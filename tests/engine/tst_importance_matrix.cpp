// The importance matrix reader: llama-imatrix's GGUF files read as llama-quantize reads them
// (in_sum2 / counts per column, 1 where a matrix met no activation), other files refused with the
// file and the problem named.
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "quant/importance_matrix.h"
#include "shared_models.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <cstring>
#include <limits>
#include <list>

using namespace organ;
using namespace organ::testing;

namespace {

QString familyImatrix() {
    return sharedReference(QStringLiteral("family/family-base-imatrix.gguf"));
}

struct F32Tensor {
    std::string name;
    std::vector<float> values;
    std::uint64_t columns = 0; // 0: one row
};

// A small GGUF of F32 tensors and metadata, written by our writer, for the reader's error paths.
QString writeGguf(const QTemporaryDir& dir, const QString& name,
                  const std::vector<std::pair<std::string, MetaValue>>& metadata,
                  const std::vector<F32Tensor>& tensors) {
    auto owned = std::make_shared<std::list<std::vector<float>>>();
    GgufWriteSpec spec;
    spec.metadata = metadata;
    for (const auto& [tensorName, values, columns] : tensors) {
        owned->push_back(values);
        TensorToWrite w;
        w.name = tensorName;
        w.type = TensorType::F32;
        const std::uint64_t width = columns != 0 ? columns : values.size();
        w.nDims = width == values.size() ? 1 : 2;
        w.ne = {width, values.size() / width, 1, 1};
        w.source.bytes = std::as_bytes(std::span(owned->back()));
        w.source.owner = owned;
        spec.tensors.push_back(std::move(w));
    }
    const QString path = dir.filePath(name);
    const JobResult written = organ::writeGguf(path.toStdString(), spec);
    return written.isOk() ? path : QString();
}

std::vector<std::pair<std::string, MetaValue>> imatrixKeys() {
    return {{"general.type", MetaValue::fromString("imatrix")},
            {"imatrix.datasets", MetaValue::fromStrings({"texts/a.txt"})},
            {"imatrix.chunk_count", MetaValue::fromU32(3)},
            {"imatrix.chunk_size", MetaValue::fromU32(128)}};
}

} // namespace

class TestImportanceMatrix : public QObject {
    Q_OBJECT

private slots:
    void readsTheFamilyImportanceMatrix() {
        ORGAN_REQUIRE_SHARED(familyImatrix());
        const ImportanceMatrix m = readImportanceMatrix(familyImatrix().toStdString());
        QCOMPARE(m.weights.size(), std::size_t(42)); // 7 matrices in each of 6 layers
        QCOMPARE(m.chunkCount, 13u);
        QCOMPARE(m.chunkSize, 128u);
        QCOMPARE(m.datasets, std::vector<std::string>{"texts/general.txt"});
        QVERIFY(m.weightsFor("output.weight") == nullptr);
        const std::vector<float>* w = m.weightsFor("blk.3.ffn_down.weight");
        QVERIFY(w != nullptr);
        QCOMPARE(w->size(), std::size_t(512));
        // in_sum2 / counts, as llama-quantize divides them.
        const auto file = GgufFile::open(familyImatrix().toStdString());
        const TensorInfo* sums = file->findTensor("blk.3.ffn_down.weight.in_sum2");
        const TensorInfo* counts = file->findTensor("blk.3.ffn_down.weight.counts");
        float sum = 0;
        float count = 0;
        std::memcpy(&sum, file->tensorData(*sums).data() + 4 * 7, 4);
        std::memcpy(&count, file->tensorData(*counts).data(), 4);
        QCOMPARE((*w)[7], sum / count);
    }

    void expertsAndUnusedColumns() {
        QTemporaryDir dir;
        // Two experts of three columns: the second never saw a token and weighs 1 throughout.
        const QString path = writeGguf(dir, QStringLiteral("moe.imatrix.gguf"), imatrixKeys(),
                                       {{"blk.0.ffn_up_exps.weight.in_sum2", {2, 4, 6, 5, 5, 5}, 3},
                                        {"blk.0.ffn_up_exps.weight.counts", {2, 0}}});
        QVERIFY(!path.isEmpty());
        const ImportanceMatrix m = readImportanceMatrix(path.toStdString());
        QCOMPARE(m.weights.size(), std::size_t(1));
        const std::vector<float>* w = m.weightsFor("blk.0.ffn_up_exps.weight");
        QVERIFY(w != nullptr);
        QCOMPARE(*w, (std::vector<float>{1, 2, 3, 1, 1, 1}));
    }

    void refusesWhatIsNotAnImportanceMatrix_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("message");
        QTest::newRow("not gguf") << QStringLiteral("text")
                                  << QStringLiteral("not an importance matrix in GGUF format");
        QTest::newRow("a model") << QStringLiteral("model") << QStringLiteral("imatrix.datasets");
        QTest::newRow("sums without counts")
            << QStringLiteral("lonely") << QStringLiteral("sums without counts");
        QTest::newRow("counts disagree") << QStringLiteral("counts") << QStringLiteral("2 counts for 1 rows");
        QTest::newRow("not finite") << QStringLiteral("nan") << QStringLiteral("not finite");
        QTest::newRow("missing") << QStringLiteral("missing") << QStringLiteral("absent.gguf");
    }

    void refusesWhatIsNotAnImportanceMatrix() {
        QFETCH(QString, kind);
        QFETCH(QString, message);
        QTemporaryDir dir;
        QString path = dir.filePath(QStringLiteral("absent.gguf"));
        const float nan = std::numeric_limits<float>::quiet_NaN();
        if (kind == QStringLiteral("text")) {
            path = dir.filePath(QStringLiteral("text.dat"));
            QFile file(path);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write("this is not a matrix");
        } else if (kind == QStringLiteral("model")) {
            path = writeGguf(dir, QStringLiteral("m.gguf"),
                             {{"general.architecture", MetaValue::fromString("llama")}},
                             {{"blk.0.attn_q.weight", {1, 2}}});
        } else if (kind == QStringLiteral("lonely")) {
            path = writeGguf(dir, QStringLiteral("m.gguf"), imatrixKeys(), {{"a.weight.in_sum2", {1, 2}}});
        } else if (kind == QStringLiteral("counts")) {
            path = writeGguf(dir, QStringLiteral("m.gguf"), imatrixKeys(),
                             {{"a.weight.in_sum2", {1, 2}}, {"a.weight.counts", {1, 1}}});
        } else if (kind == QStringLiteral("nan")) {
            path = writeGguf(dir, QStringLiteral("m.gguf"), imatrixKeys(),
                             {{"a.weight.in_sum2", {1, nan}}, {"a.weight.counts", {1}}});
        }
        QVERIFY(!path.isEmpty());
        try {
            readImportanceMatrix(path.toStdString());
            QFAIL("read");
        } catch (const std::exception& error) {
            QVERIFY2(QString::fromUtf8(error.what()).contains(message), error.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestImportanceMatrix)
#include "tst_importance_matrix.moc"
