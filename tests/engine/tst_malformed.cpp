// Every malformed file gets a clear error naming the file, never a crash, a hang or a
// large allocation. The fixture is written by our own writer; each row corrupts one field.
#include "allocation_tracker.h"
#include "fixtures.h"
#include "gguf/gguf_file.h"
#include "support/errors.h"
#include "support/text_format.h"

#include <QTemporaryDir>
#include <QTest>
#include <cstring>
#include <limits>

using namespace organ;
using namespace organ::testing;

namespace {

constexpr std::uint64_t kAll = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kMaxSigned = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
constexpr std::size_t kAllocationBudget = 4u << 20;

// Where the fields of the fixture are, learned by parsing it with the reader.
enum class Field {
    Magic,
    Version,
    TensorCount,
    KvCount,
    KeyLength,    // of key `index`
    ValueType,    // of key `index`
    Value,        // first bytes of the value of key `index` (a string's length, an array's element type)
    ArrayCount,   // of the array value of key `index`
    InnerType,    // element type of the first inner array of the nested array at key `index`
    NameLength,   // of tensor `index`
    DimCount,     // of tensor `index`
    Dim0,         // of tensor `index`
    Dim1,         // of tensor `index`
    TensorType,   // of tensor `index`
    TensorOffset, // of tensor `index`
};

struct Fixture {
    QByteArray bytes;
    std::shared_ptr<const GgufFile> file;
};

enum Key { kArch, kAlign, kFlag, kArray, kNested, kAaaa, kBbbb };

GgufWriteSpec fixtureSpec() {
    GgufWriteSpec spec;
    spec.set("general.architecture", MetaValue::fromString("llama"));
    spec.set("general.alignment", MetaValue::fromU32(32));
    spec.set("test.flag", MetaValue::fromBool(true));
    spec.set("test.array",
             MetaValue::fromArray(ValueType::U32, {MetaValue::fromU32(1), MetaValue::fromU32(2)}));
    spec.set("test.nested",
             MetaValue::fromArray(ValueType::Array,
                                  {MetaValue::fromArray(ValueType::I8, {MetaValue::fromI8(-1)}),
                                   MetaValue::fromArray(ValueType::String, {MetaValue::fromString("x")})}));
    spec.set("test.aaaa", MetaValue::fromString("first"));
    spec.set("test.bbbb", MetaValue::fromString("second"));
    spec.tensors.push_back(patternTensor("a.weight", TensorType::F32, {8, 2}, 1));
    spec.tensors.push_back(patternTensor("b.weight", TensorType::Q8_0, {32, 2}, 2));
    return spec;
}

std::uint64_t fieldOffset(const GgufFile& file, Field field, int index) {
    switch (field) {
    case Field::Magic:
        return 0;
    case Field::Version:
        return 4;
    case Field::TensorCount:
        return 8;
    case Field::KvCount:
        return 16;
    default:
        break;
    }
    if (field <= Field::InnerType) {
        const MetaEntry& entry = file.metadata().at(index);
        const std::uint64_t value = entry.offset + 8 + entry.key.size() + 4;
        switch (field) {
        case Field::KeyLength:
            return entry.offset;
        case Field::ValueType:
            return value - 4;
        case Field::Value:
            return value;
        case Field::ArrayCount:
            return value + 4;
        default:
            return value + 4 + 8; // past the outer element type and count
        }
    }
    const TensorInfo& t = file.tensors().at(index);
    const std::uint64_t dims = t.infoOffset + 8 + t.name.size() + 4;
    switch (field) {
    case Field::NameLength:
        return t.infoOffset;
    case Field::DimCount:
        return dims - 4;
    case Field::Dim0:
        return dims;
    case Field::Dim1:
        return dims + 8;
    case Field::TensorType:
        return dims + 8 * t.nDims;
    default:
        return dims + 8 * t.nDims + 4;
    }
}

unsigned fieldWidth(Field field, int index) {
    if (field == Field::Value) {
        switch (index) {
        case kFlag:
            return 1;
        case kAlign:
        case kArray:
        case kNested:
            return 4;
        default:
            return 8; // a string's length
        }
    }
    switch (field) {
    case Field::InnerType:
    case Field::Magic:
    case Field::Version:
    case Field::ValueType:
    case Field::DimCount:
    case Field::TensorType:
        return 4;
    default:
        return 8;
    }
}

} // namespace

class TestMalformed : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    Fixture m_fixture;

    QString path(const QString& name) const { return m_dir.filePath(name); }

    // Opens a file and returns the error text, or an empty string when it opened.
    QString openError(const QString& file, std::size_t* peak = nullptr) {
        resetPeakAllocation();
        QString error;
        try {
            GgufFile::open(file.toStdString());
        } catch (const FormatError& e) {
            error = QString::fromStdString(e.what());
        } catch (const IoError& e) {
            error = QString::fromStdString(e.what());
        }
        if (peak != nullptr) {
            *peak = peakAllocationSinceReset();
        }
        return error;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        QVERIFY(writeFixture(path(QStringLiteral("valid.gguf")), fixtureSpec()));
        m_fixture.bytes = readAll(path(QStringLiteral("valid.gguf")));
        m_fixture.file = GgufFile::open(path(QStringLiteral("valid.gguf")).toStdString());
        QCOMPARE(m_fixture.file->metadata().size(), std::size_t(7));
        QCOMPARE(m_fixture.file->tensors().size(), std::size_t(2));
    }

    void corruptField_data() {
        QTest::addColumn<int>("field");
        QTest::addColumn<int>("index");
        QTest::addColumn<quint64>("value");
        QTest::addColumn<QString>("expected"); // "" opens; "*" any error; else a substring of the error

        auto row = [](const char* name, Field field, int index, std::uint64_t value, const char* expected) {
            QTest::newRow(name) << int(field) << index << quint64(value) << QString::fromUtf8(expected);
        };
        row("magic 0", Field::Magic, 0, 0, "not a GGUF file");
        row("magic -1", Field::Magic, 0, 0xFFFFFFFFu, "not a GGUF file");
        row("version 0", Field::Version, 0, 0, "unsupported GGUF version 0");
        row("version 4", Field::Version, 0, 4, "unsupported GGUF version 4");
        row("version max", Field::Version, 0, 0xFFFFFFFFu, "unsupported GGUF version 4294967295");
        row("tensor count 0", Field::TensorCount, 0, 0, "");
        row("tensor count one more", Field::TensorCount, 0, 3, "*");
        row("tensor count -1", Field::TensorCount, 0, kAll, "cannot fit");
        row("tensor count max", Field::TensorCount, 0, kMaxSigned, "cannot fit");
        row("tensor count past end", Field::TensorCount, 0, 100000, "cannot fit");
        row("kv count 0", Field::KvCount, 0, 0, "*");
        row("kv count -1", Field::KvCount, 0, kAll, "cannot fit");
        row("kv count max", Field::KvCount, 0, kMaxSigned, "cannot fit");
        row("kv count past end", Field::KvCount, 0, 100000, "cannot fit");
        row("key length 0", Field::KeyLength, kArch, 0, "the key is empty");
        row("key length -1", Field::KeyLength, kArch, kAll, "runs past the end");
        row("key length max", Field::KeyLength, kArch, kMaxSigned, "runs past the end");
        row("key length past end", Field::KeyLength, kBbbb, 4096, "runs past the end");
        row("value type 13", Field::ValueType, kArch, 13, "unknown value type 13");
        row("value type -1", Field::ValueType, kArch, 0xFFFFFFFFu, "unknown value type 4294967295");
        row("string length -1", Field::Value, kArch, kAll, "runs past the end");
        row("string length past end", Field::Value, kBbbb, 4096, "runs past the end");
        row("string length 0", Field::Value, kBbbb, 0, "*");
        row("alignment 0", Field::Value, kAlign, 0, "not a power of two");
        row("alignment 3", Field::Value, kAlign, 3, "not a power of two");
        row("alignment max", Field::Value, kAlign, 0xFFFFFFFFu, "not a power of two");
        row("alignment as i32", Field::ValueType, kAlign, 5, "must be a u32");
        row("bool 2", Field::Value, kFlag, 2, "a bool must be 0 or 1");
        row("array element type -1", Field::Value, kArray, 0xFFFFFFFFu, "unknown array element type");
        row("array count -1", Field::ArrayCount, kArray, kAll, "cannot fit");
        row("array count max", Field::ArrayCount, kArray, kMaxSigned, "cannot fit");
        row("array count past end", Field::ArrayCount, kArray, 4096, "cannot fit");
        row("nested count -1", Field::ArrayCount, kNested, kAll, "cannot fit");
        row("nested inner type -1", Field::InnerType, kNested, 0xFFFFFFFFu, "unknown array element type");
        row("tensor name length 0", Field::NameLength, 0, 0, "the name is empty");
        row("tensor name length -1", Field::NameLength, 0, kAll, "runs past the end");
        row("tensor name length past end", Field::NameLength, 1, 4096, "runs past the end");
        row("dimension count 0", Field::DimCount, 0, 0, "*");
        row("dimension count 5", Field::DimCount, 0, 5, "5 dimensions (ggml allows at most 4)");
        row("dimension count -1", Field::DimCount, 0, 0xFFFFFFFFu, "dimensions (ggml allows at most 4)");
        row("dimension 0", Field::Dim0, 0, 0, "");
        row("dimension -1", Field::Dim0, 0, kAll, "which ggml reads as negative");
        row("dimension max", Field::Dim0, 0, kMaxSigned, "overflows 64 bits");
        row("dimension past end", Field::Dim0, 0, std::uint64_t(1) << 40, "past the end of the file");
        row("elements overflow", Field::Dim1, 0, std::uint64_t(1) << 62, "overflows 64 bits");
        row("tensor type -1", Field::TensorType, 0, 0xFFFFFFFFu, "unknown tensor type 4294967295");
        row("tensor type removed Q4_2", Field::TensorType, 0, 4, "unknown tensor type 4");
        row("tensor type removed Q4_0_4_4", Field::TensorType, 0, 31, "unknown tensor type 31");
        row("tensor type past list", Field::TensorType, 0, 43, "unknown tensor type 43");
        row("rows not whole blocks", Field::TensorType, 0, 2, "not a whole number of Q4_0 blocks of 32");
        row("offset 0 overlaps", Field::TensorOffset, 1, 0, "overlaps tensor 'a.weight'");
        row("offset unaligned", Field::TensorOffset, 1, 65, "not a multiple of the alignment 32");
        row("offset -1", Field::TensorOffset, 0, kAll, "not a multiple of the alignment");
        row("offset max aligned", Field::TensorOffset, 1, kAll - 31, "past the end of the file");
        row("offset past end", Field::TensorOffset, 1, 1u << 20, "past the end of the file");
    }

    void corruptField() {
        QFETCH(int, field);
        QFETCH(int, index);
        QFETCH(quint64, value);
        QFETCH(QString, expected);
        const auto f = static_cast<Field>(field);
        QByteArray bytes = m_fixture.bytes;
        const std::uint64_t at = fieldOffset(*m_fixture.file, f, index);
        const unsigned width = fieldWidth(f, index);
        QVERIFY(at + width <= std::uint64_t(bytes.size()));
        std::memcpy(bytes.data() + at, &value, width);
        const QString file = path(QStringLiteral("corrupt.gguf"));
        QVERIFY(writeAll(file, bytes));
        // tests/fuzz/run.sh seeds the reader's fuzzer with these cases.
        if (const QString seeds = qEnvironmentVariable("ORGAN_FUZZ_SEEDS"); !seeds.isEmpty()) {
            QVERIFY(writeAll(seeds + QStringLiteral("/malformed-") +
                                 QString::fromLatin1(QTest::currentDataTag()).replace(u' ', u'-'),
                             bytes));
        }
        std::size_t peak = 0;
        const QString error = openError(file, &peak);
        if (expected.isEmpty()) {
            QVERIFY2(error.isEmpty(), qPrintable(error));
        } else {
            QVERIFY2(!error.isEmpty(), "a corrupt file opened without an error");
            QVERIFY2(error.startsWith(QStringLiteral("corrupt.gguf: ")), qPrintable(error));
            if (expected != QStringLiteral("*")) {
                QVERIFY2(error.contains(expected), qPrintable(error));
            }
        }
        QVERIFY2(peak < kAllocationBudget, qPrintable(QStringLiteral("allocated %1 bytes").arg(peak)));
    }

    // F64 with 2^61 elements fits in the element count but is 2^64 bytes.
    void byteSizeOverflow() {
        QByteArray bytes = m_fixture.bytes;
        const std::uint64_t dim0 = std::uint64_t(1) << 61;
        const std::uint64_t dim1 = 1;
        const std::uint32_t f64 = 28;
        std::memcpy(bytes.data() + fieldOffset(*m_fixture.file, Field::Dim0, 0), &dim0, 8);
        std::memcpy(bytes.data() + fieldOffset(*m_fixture.file, Field::Dim1, 0), &dim1, 8);
        std::memcpy(bytes.data() + fieldOffset(*m_fixture.file, Field::TensorType, 0), &f64, 4);
        QVERIFY(writeAll(path(QStringLiteral("bytes.gguf")), bytes));
        const QString error = openError(path(QStringLiteral("bytes.gguf")));
        QVERIFY2(error.contains(QStringLiteral("size in bytes overflows 64 bits")), qPrintable(error));
    }

    void duplicateKey() {
        QByteArray bytes = m_fixture.bytes;
        const MetaEntry& second = m_fixture.file->metadata().at(kBbbb);
        std::memcpy(bytes.data() + second.offset + 8, "test.aaaa", 9);
        QVERIFY(writeAll(path(QStringLiteral("dupkey.gguf")), bytes));
        const QString error = openError(path(QStringLiteral("dupkey.gguf")));
        QVERIFY2(error.contains(QStringLiteral("key 'test.aaaa'")) &&
                     error.contains(QStringLiteral("appears twice")),
                 qPrintable(error));
    }

    void duplicateTensorName() {
        QByteArray bytes = m_fixture.bytes;
        const TensorInfo& second = m_fixture.file->tensors().at(1);
        std::memcpy(bytes.data() + second.infoOffset + 8, "a.weight", 8);
        QVERIFY(writeAll(path(QStringLiteral("dupname.gguf")), bytes));
        const QString error = openError(path(QStringLiteral("dupname.gguf")));
        QVERIFY2(error.contains(QStringLiteral("tensor 'a.weight'")) &&
                     error.contains(QStringLiteral("appears twice")),
                 qPrintable(error));
    }

    void nameTooLong() {
        GgufWriteSpec spec = fixtureSpec();
        QVERIFY(writeFixture(path(QStringLiteral("long.gguf")), spec));
        QByteArray bytes = readAll(path(QStringLiteral("long.gguf")));
        // Grow "a.weight" to 64 bytes by rewriting the header around it.
        const TensorInfo& first = m_fixture.file->tensors().at(0);
        const std::uint64_t length = 64;
        QByteArray grown = bytes.left(int(first.infoOffset));
        grown.append(reinterpret_cast<const char*>(&length), 8);
        grown.append(QByteArray(64, 'n'));
        grown.append(bytes.mid(int(first.infoOffset + 8 + first.name.size())));
        QVERIFY(writeAll(path(QStringLiteral("long.gguf")), grown));
        const QString error = openError(path(QStringLiteral("long.gguf")));
        QVERIFY2(error.contains(QStringLiteral("64 bytes long (ggml allows 63)")), qPrintable(error));
    }

    void arraysNestedTooDeep() {
        MetaValue value = MetaValue::fromArray(ValueType::U8, {MetaValue::fromU8(7)});
        for (int depth = 0; depth < 20; ++depth) {
            value = MetaValue::fromArray(ValueType::Array, {value});
        }
        GgufWriteSpec spec;
        spec.set("test.deep", value);
        const JobResult written = writeGguf(path(QStringLiteral("deep.gguf")).toStdString(), spec);
        QVERIFY(!written.isOk()); // the writer re-opens and verifies, so it refuses what the reader refuses
        QVERIFY2(QString::fromStdString(written.message).contains(QStringLiteral("nested more than 16 deep")),
                 written.message.c_str());
        QVERIFY(!QFileInfo::exists(path(QStringLiteral("deep.gguf"))));
    }

    // Cutting the file anywhere before the end of the last tensor's data is an error;
    // cutting only the trailing padding is not.
    void truncatedAtEveryByte() {
        const TensorInfo& last = m_fixture.file->tensors().back();
        const std::uint64_t needed = last.fileOffset + last.bytes;
        const QString file = path(QStringLiteral("cut.gguf"));
        std::size_t worst = 0;
        for (int length = 0; length < m_fixture.bytes.size(); ++length) {
            QVERIFY(writeAll(file, m_fixture.bytes.left(length)));
            std::size_t peak = 0;
            const QString error = openError(file, &peak);
            worst = std::max(worst, peak);
            if (std::uint64_t(length) < needed) {
                QVERIFY2(error.startsWith(QStringLiteral("cut.gguf: ")),
                         qPrintable(QStringLiteral("length %1: '%2'").arg(length).arg(error)));
            } else {
                QVERIFY2(error.isEmpty(), qPrintable(error));
            }
        }
        QVERIFY(worst < kAllocationBudget);
    }

    void notAFile_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("expected");
        QTest::newRow("missing") << QStringLiteral("missing.gguf") << QStringLiteral("cannot open");
        QTest::newRow("directory") << QStringLiteral("folder.gguf")
                                   << QStringLiteral("is a folder");
        QTest::newRow("empty") << QStringLiteral("empty.gguf") << QStringLiteral("not a GGUF file");
        QTest::newRow("text") << QStringLiteral("text.gguf") << QStringLiteral("not a GGUF file");
    }

    void notAFile() {
        QFETCH(QString, name);
        QFETCH(QString, expected);
        QDir(m_dir.path()).mkdir(QStringLiteral("folder.gguf"));
        writeAll(path(QStringLiteral("empty.gguf")), QByteArray());
        writeAll(path(QStringLiteral("text.gguf")), QByteArray("hello, this is not a model\n"));
        const QString error = openError(path(name));
        QVERIFY2(error.startsWith(name + QStringLiteral(": ")) && error.contains(expected),
                 qPrintable(error));
    }

    // The example the issue gives: a tensor past the end names the file, the tensor and both sizes.
    void messageNamesTensorAndBytes() {
        QByteArray bytes = m_fixture.bytes;
        const std::uint64_t offset = 1u << 20;
        std::memcpy(bytes.data() + fieldOffset(*m_fixture.file, Field::TensorOffset, 1), &offset, 8);
        QVERIFY(writeAll(path(QStringLiteral("model.gguf")), bytes));
        const QString error = openError(path(QStringLiteral("model.gguf")));
        const std::uint64_t end = m_fixture.file->dataOffset() + offset + 68;
        const QString expected =
            QStringLiteral(
                "model.gguf: tensor 'b.weight': data ends at byte %1, past the end of the file (%2 bytes)")
                .arg(QString::fromStdString(groupDigits(end)))
                .arg(QString::fromStdString(groupDigits(std::uint64_t(bytes.size()))));
        QCOMPARE(error, expected);
    }
};

QTEST_APPLESS_MAIN(TestMalformed)
#include "tst_malformed.moc"
