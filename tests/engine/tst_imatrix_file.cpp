// Importance matrices in and out (quant/imatrix_file.h): our writer's file read back, the legacy
// .dat laid out by hand, llama-imatrix's own file read and written back byte for byte, and
// malformed files refused with an error that names the file and the problem.
#include "quant/imatrix_file.h"
#include "support/errors.h"

#include "fixtures.h"
#include "shared_models.h"

#include <QDir>
#include <QTemporaryDir>
#include <QTest>
#include <cstring>
#include <random>

using namespace organ;
using namespace organ::testing;

namespace {

ImatrixData sampleMatrix() {
    ImatrixData data;
    data.datasets = {"texts/general.txt", "second.txt"};
    data.chunkCount = 7;
    data.chunkSize = 128;
    data.entries["blk.0.attn_q.weight"] = {{1.5f, 2.25f, 0.0f, 1e-8f}, {896.0f}};
    // Three experts of 2 columns; the second met no activation.
    data.entries["blk.1.ffn_up_exps.weight"] = {{4.0f, 8.0f, 3.0f, 5.0f, 0.5f, 0.25f}, {2.0f, 0.0f, 0.5f}};
    return data;
}

// The legacy .dat as llama-imatrix --output-format dat writes it: per entry the name, the call
// count and the mean squares times the calls; then the chunk count and the dataset's name.
QByteArray legacyBytes(bool trailer, const QByteArray& second = QByteArrayLiteral("blk.0.ffn_down.weight")) {
    QByteArray out;
    auto i32 = [&](std::int32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); };
    auto f32 = [&](float v) { out.append(reinterpret_cast<const char*>(&v), 4); };
    i32(2);
    i32(19);
    out.append("blk.0.attn_k.weight");
    i32(4);
    i32(3);
    f32(8.0f);
    f32(2.0f);
    f32(0.5f);
    i32(static_cast<std::int32_t>(second.size()));
    out.append(second);
    i32(2);
    i32(2);
    f32(3.0f);
    f32(1.0f);
    if (trailer) {
        i32(4);
        i32(9);
        out.append("story.txt");
    }
    return out;
}

void putI32(QByteArray& bytes, qsizetype at, std::int32_t v) {
    std::memcpy(bytes.data() + at, &v, 4);
}

// A GGUF importance matrix with tensors as given, each F32 filled with `fill` (or as given).
GgufWriteSpec imatrixSpec(const std::string& type = "imatrix") {
    GgufWriteSpec spec;
    spec.set("general.type", MetaValue::fromString(type));
    spec.set("imatrix.datasets", MetaValue::fromStrings({"t.txt"}));
    spec.set("imatrix.chunk_count", MetaValue::fromU32(1));
    spec.set("imatrix.chunk_size", MetaValue::fromU32(16));
    return spec;
}

void addTensor(GgufWriteSpec& spec, const std::string& name, std::vector<std::uint64_t> dims,
               TensorType type = TensorType::F32, float value = 1.0f) {
    TensorToWrite t;
    t.name = name;
    t.type = type;
    t.nDims = static_cast<std::uint32_t>(dims.size());
    std::uint64_t n = 1;
    for (std::size_t i = 0; i < dims.size(); ++i) {
        t.ne[i] = dims[i];
        n *= dims[i];
    }
    auto values = std::make_shared<std::vector<float>>(n, value);
    if (type == TensorType::F32) {
        t.source.bytes = std::as_bytes(std::span<const float>(*values));
    } else { // F16: half as many bytes
        t.source.bytes = std::as_bytes(std::span<const float>(*values)).first(n * 2);
    }
    t.source.owner = values;
    spec.tensors.push_back(std::move(t));
}

QString readError(const QString& path) {
    try {
        readImatrix(path.toStdString());
    } catch (const FormatError& e) {
        return QString::fromStdString(e.what());
    } catch (const IoError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace

class TestImatrixFile : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void roundTrip() {
        const ImatrixData data = sampleMatrix();
        const QString file = path(QStringLiteral("round.gguf"));
        const JobResult written = writeImatrix(file.toStdString(), data);
        QVERIFY2(written.isOk(), written.message.c_str());
        const ImatrixData back = readImatrix(file.toStdString());
        QCOMPARE(back.datasets, data.datasets);
        QCOMPARE(back.chunkCount, 7u);
        QCOMPARE(back.chunkSize, 128u);
        QCOMPARE(back.entries.size(), std::size_t(2));
        for (const auto& [name, entry] : data.entries) {
            QVERIFY(back.entries.contains(name));
            QCOMPARE(back.entries.at(name).sums, entry.sums);
            QCOMPARE(back.entries.at(name).counts, entry.counts);
        }
        // As llama-quantize reads it: sum / count, and 1 for an expert that met nothing.
        const ImatrixEntry& experts = back.entries.at("blk.1.ffn_up_exps.weight");
        QCOMPARE(experts.columns(), std::size_t(2));
        QCOMPARE(experts.means(), (std::vector<float>{2.0f, 4.0f, 1.0f, 1.0f, 1.0f, 0.5f}));
        // One matrix: sums and counts one-dimensional; three: two-dimensional, as ggml writes them.
        const auto file2 = GgufFile::open(file.toStdString());
        const TensorInfo* sums = file2->findTensor("blk.0.attn_q.weight.in_sum2");
        const TensorInfo* counts = file2->findTensor("blk.1.ffn_up_exps.weight.counts");
        QVERIFY(sums != nullptr && counts != nullptr);
        QCOMPARE(sums->nDims, 1u);
        QCOMPARE(counts->nDims, 2u);
        QCOMPARE(counts->ne[1], std::uint64_t(3));
    }

    void writerRefusesIncompleteData() {
        ImatrixData data = sampleMatrix();
        data.datasets.clear();
        const QString file = path(QStringLiteral("refused.gguf"));
        JobResult written = writeImatrix(file.toStdString(), data);
        QVERIFY(!written.isOk());
        QVERIFY2(written.message.find("no dataset") != std::string::npos, written.message.c_str());
        data = sampleMatrix();
        data.entries["blk.2.ffn_up_exps.weight"] = {{1.0f, 2.0f, 3.0f}, {1.0f, 1.0f}};
        written = writeImatrix(file.toStdString(), data);
        QVERIFY(!written.isOk());
        QVERIFY2(written.message.find("blk.2.ffn_up_exps.weight: 3 sums do not fill 2 matrices") !=
                     std::string::npos,
                 written.message.c_str());
        QVERIFY(QDir(m_dir.path()).entryList({QStringLiteral("refused*")}).isEmpty());
    }

    void readsLegacyDat_data() {
        QTest::addColumn<bool>("trailer");
        QTest::newRow("with chunk count and dataset") << true;
        QTest::newRow("without (older files)") << false;
    }

    void readsLegacyDat() {
        QFETCH(bool, trailer);
        const QString file = path(QStringLiteral("legacy.dat"));
        QVERIFY(writeAll(file, legacyBytes(trailer)));
        const ImatrixData data = readImatrix(file.toStdString());
        QCOMPARE(data.entries.size(), std::size_t(2));
        // The values are mean squares times the calls: the means are the values / calls.
        QCOMPARE(data.entries.at("blk.0.attn_k.weight").means(), (std::vector<float>{2.0f, 0.5f, 0.125f}));
        QCOMPARE(data.entries.at("blk.0.ffn_down.weight").means(), (std::vector<float>{1.5f, 0.5f}));
        QCOMPARE(data.chunkCount, trailer ? 4u : 0u);
        QCOMPARE(data.chunkSize, 0u);
        QCOMPARE(data.datasets, trailer ? std::vector<std::string>{"story.txt"} : std::vector<std::string>{});
    }

    // llama-imatrix's own file (../shared/reference/family): read whole, and written back by our
    // writer byte for byte — what llama-quantize --imatrix reads.
    void readsAndRewritesLlamaImatrix() {
        const QString file = sharedReference(QStringLiteral("family/family-base-imatrix.gguf"));
        ORGAN_REQUIRE_SHARED(file);
        const ImatrixData data = readImatrix(file.toStdString());
        QCOMPARE(data.chunkSize, 128u);
        QVERIFY(data.chunkCount > 0);
        QCOMPARE(data.datasets.size(), std::size_t(1));
        // Six blocks of seven weights (q, k, v, output; gate, up, down), one matrix each.
        QCOMPARE(data.entries.size(), std::size_t(42));
        const ImatrixEntry& down = data.entries.at("blk.5.ffn_down.weight");
        QCOMPARE(down.columns(), std::size_t(512));
        QCOMPARE(down.counts, (std::vector<float>{float(data.chunkCount * data.chunkSize)}));
        for (const float s : down.sums) {
            QVERIFY(s >= 0);
        }
        const QString copy = path(QStringLiteral("copy.gguf"));
        const JobResult written = writeImatrix(copy.toStdString(), data);
        QVERIFY2(written.isOk(), written.message.c_str());
        QVERIFY(readAll(copy) == readAll(file));
    }

    void refusesMalformedFiles_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("expected");
        const QString dir = m_dir.path() + QStringLiteral("/gguf-");
        auto gguf = [&](const char* name, const GgufWriteSpec& spec) {
            const QString file = dir + QString::fromLatin1(name);
            return writeFixture(file, spec) ? readAll(file) : QByteArray();
        };
        GgufWriteSpec spec = imatrixSpec("model");
        addTensor(spec, "blk.0.ffn_up.weight.in_sum2", {16});
        addTensor(spec, "blk.0.ffn_up.weight.counts", {1});
        QTest::newRow("a model, not a matrix")
            << gguf("model", spec) << QStringLiteral("not an importance matrix (general.type is 'model')");
        spec = imatrixSpec();
        addTensor(spec, "blk.0.ffn_up.weight.in_sum2", {16});
        QTest::newRow("sums without counts")
            << gguf("nocounts", spec)
            << QStringLiteral("blk.0.ffn_up.weight has sums (in_sum2) but no counts");
        spec = imatrixSpec();
        addTensor(spec, "blk.0.ffn_up.weight.counts", {1});
        QTest::newRow("counts without sums")
            << gguf("nosums", spec) << QStringLiteral("blk.0.ffn_up.weight has counts but no sums (in_sum2)");
        spec = imatrixSpec();
        addTensor(spec, "blk.0.ffn_up.weight.in_sum2", {16}, TensorType::F16);
        addTensor(spec, "blk.0.ffn_up.weight.counts", {1});
        QTest::newRow("F16 sums")
            << gguf("f16", spec)
            << QStringLiteral("blk.0.ffn_up.weight.in_sum2 is F16 16, expected F32 columns × matrices");
        spec = imatrixSpec();
        addTensor(spec, "blk.0.ffn_up.weight.in_sum2", {16, 2});
        addTensor(spec, "blk.0.ffn_up.weight.counts", {1, 3});
        QTest::newRow("counts for other matrices")
            << gguf("experts", spec) << QStringLiteral("blk.0.ffn_up.weight has 3 counts for sums of 16 × 2");
        spec = imatrixSpec();
        addTensor(spec, "blk.0.ffn_up.weight.in_sum2", {16});
        addTensor(spec, "blk.0.ffn_up.weight.counts", {2});
        QTest::newRow("counts of two values")
            << gguf("wide-counts", spec)
            << QStringLiteral("blk.0.ffn_up.weight.counts is F32 2, expected F32 1 × matrices");
        spec = imatrixSpec();
        addTensor(spec, "blk.0.ffn_up.weight.in_sum2", {16});
        addTensor(spec, "blk.0.ffn_up.weight.counts", {1}, TensorType::F32, -3.0f);
        QTest::newRow("negative count")
            << gguf("negative", spec) << QStringLiteral("blk.0.ffn_up.weight has a count of -3");
        spec = imatrixSpec();
        addTensor(spec, "token_embd.weight", {16});
        QTest::newRow("no sums at all") << gguf("empty", spec) << QStringLiteral("without any weight's sums");

        const QByteArray legacy = legacyBytes(true);
        QTest::newRow("legacy: empty file") << QByteArray() << QStringLiteral("entry count");
        QByteArray bytes = legacy;
        putI32(bytes, 0, 0);
        QTest::newRow("legacy: no entries") << bytes << QStringLiteral("no entries (0)");
        bytes = legacy;
        putI32(bytes, 0, 1 << 30);
        QTest::newRow("legacy: a billion entries")
            << bytes << QStringLiteral("1073741824 entries do not fit in 105 bytes");
        bytes = legacy;
        putI32(bytes, 4, -5);
        QTest::newRow("legacy: negative name length")
            << bytes << QStringLiteral("name length -5 at byte 4 is out of range");
        bytes = legacy;
        putI32(bytes, 31, 1 << 28);
        QTest::newRow("legacy: more values than bytes")
            << bytes << QStringLiteral("value count 268435456 at byte 31 is out of range");
        bytes = legacy;
        putI32(bytes, 27, 0);
        QTest::newRow("legacy: no calls")
            << bytes << QStringLiteral("call count 0 at byte 27 is out of range");
        QTest::newRow("legacy: a name twice") << legacyBytes(true, QByteArrayLiteral("blk.0.attn_k.weight"))
                                              << QStringLiteral("blk.0.attn_k.weight appears twice");
        QTest::newRow("legacy: cut in the values") << legacy.left(40) << QStringLiteral("value count");
        QTest::newRow("legacy: cut in the dataset name")
            << legacy.left(legacy.size() - 3) << QStringLiteral("dataset name");
        QTest::newRow("text") << QByteArray("Once upon a time there was a cow.\n")
                              << QStringLiteral("entries do not fit in 34 bytes: not an importance matrix");
    }

    void refusesMalformedFiles() {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, expected);
        const QString file = path(QStringLiteral("bad.imatrix"));
        QVERIFY(writeAll(file, bytes));
        const QString error = readError(file);
        QVERIFY2(error.startsWith(QStringLiteral("bad.imatrix: ")) ||
                     error.contains(QStringLiteral("bad.imatrix")),
                 qPrintable(error));
        QVERIFY2(error.contains(expected), qPrintable(error));
    }

    void refusesMissingFile() {
        const QString error = readError(path(QStringLiteral("absent.gguf")));
        QVERIFY2(error.contains(QStringLiteral("absent.gguf")), qPrintable(error));
    }

    // Bytes flipped, runs overwritten with 0xFF and files cut anywhere, in our GGUF matrix and in
    // the legacy .dat: each read either succeeds or is refused with a FormatError; nothing else
    // escapes, nothing crashes (the ASan build checks the reads).
    void survivesMutations_data() {
        QTest::addColumn<QByteArray>("original");
        const QString gguf = path(QStringLiteral("mutation-source.gguf"));
        QVERIFY(writeImatrix(gguf.toStdString(), sampleMatrix()).isOk());
        QTest::newRow("GGUF") << readAll(gguf);
        QTest::newRow("legacy .dat") << legacyBytes(true);
    }

    void survivesMutations() {
        QFETCH(QByteArray, original);
        std::mt19937 rng(26);
        const QString file = path(QStringLiteral("mutated.imatrix"));
        int refused = 0;
        for (int i = 0; i < 600; ++i) {
            QByteArray bytes = original;
            std::uniform_int_distribution<qsizetype> at(0, bytes.size() - 1);
            switch (i % 3) {
            case 0:
                bytes[at(rng)] = static_cast<char>(bytes[at(rng)] ^ (1 << (i % 8)));
                break;
            case 1:
                bytes.replace(at(rng), 4, QByteArray(4, '\xFF'));
                break;
            default:
                bytes.truncate(at(rng));
                break;
            }
            QVERIFY(writeAll(file, bytes));
            try {
                readImatrix(file.toStdString());
            } catch (const FormatError&) {
                ++refused;
            }
        }
        qInfo("%d of 600 mutated files refused, the others read", refused);
        QVERIFY(refused > 0);
    }
};

QTEST_APPLESS_MAIN(TestImatrixFile)
#include "tst_imatrix_file.moc"
