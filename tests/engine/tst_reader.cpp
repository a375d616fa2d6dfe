// The reader against files written by llama.cpp and gguf-py: names, shapes, dtypes,
// offsets and sizes equal to the reference tables; every value and tensor type.
#include "fixtures.h"
#include "gguf/gguf_model.h"
#include "shared_models.h"
#include "support/errors.h"
#include "support/text_format.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <map>

using namespace organ;
using namespace organ::testing;

class TestReader : public QObject {
    Q_OBJECT

private slots:
    // Bytes in memory parse as the same file does (the fuzzer's way in), and bad bytes get the
    // same errors, naming the label.
    void fromBytesMatchesFromFile() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("memory.gguf"));
        GgufWriteSpec spec;
        spec.set("general.architecture", MetaValue::fromString("llama"));
        spec.tensors.push_back(patternTensor("blk.0.attn_q.weight", TensorType::F16, {8, 4}, 3));
        spec.tensors.push_back(patternTensor("output.weight", TensorType::F32, {8, 2}, 4));
        QVERIFY(writeFixture(path, spec));
        const QByteArray bytes = readAll(path);
        const auto span =
            std::span(reinterpret_cast<const std::byte*>(bytes.data()), std::size_t(bytes.size()));
        const auto fromFile = GgufFile::open(path.toStdString());
        const auto fromMemory = GgufFile::fromBytes("memory.gguf", span);
        QCOMPARE(fromMemory->tensors().size(), fromFile->tensors().size());
        QCOMPARE(fromMemory->dataOffset(), fromFile->dataOffset());
        for (std::size_t i = 0; i < fromFile->tensors().size(); ++i) {
            const auto a = fromFile->tensorData(fromFile->tensors()[i]);
            const auto b = fromMemory->tensorData(fromMemory->tensors()[i]);
            QVERIFY(std::equal(a.begin(), a.end(), b.begin(), b.end()));
        }
        QVERIFY(!MappedFile::isOpenAsInput(fromMemory->mapping()->identity())); // no file behind it
        std::vector<std::byte> copy(4);
        fromMemory->mapping()->read(0, copy);
        QCOMPARE(char(copy[0]), 'G');
        QVERIFY_THROWS_EXCEPTION(IoError, fromMemory->mapping()->read(span.size() - 2, copy));
        const auto model = GgufModel::fromFile(fromMemory);
        QCOMPARE(model->tensors().size(), std::size_t(2));
        QVERIFY(model->findTensor("output.weight") != nullptr);
        try {
            GgufFile::fromBytes("cut.gguf", span.first(span.size() - 8));
            QFAIL("a cut file parsed");
        } catch (const FormatError& error) {
            QVERIFY2(std::string(error.what()).starts_with("cut.gguf: "), error.what());
        }
        QVERIFY_THROWS_EXCEPTION(FormatError, GgufFile::fromBytes("empty.gguf", {}));
        // A part of a split model is not a model on its own.
        GgufWriteSpec part = spec;
        part.set("split.no", MetaValue::fromU16(0));
        part.set("split.count", MetaValue::fromU16(2));
        part.set("split.tensors.count", MetaValue::fromI32(4));
        const QString partPath = dir.filePath(QStringLiteral("part.gguf"));
        QVERIFY(writeFixture(partPath, part));
        const QByteArray partBytes = readAll(partPath);
        const auto partFile =
            GgufFile::fromBytes("part.gguf", std::span(reinterpret_cast<const std::byte*>(partBytes.data()),
                                                       std::size_t(partBytes.size())));
        QVERIFY_THROWS_EXCEPTION(FormatError, GgufModel::fromFile(partFile));
    }

    void matchesReferenceTable_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("table");
        QTest::newRow("stories260K-f32")
            << QStringLiteral("stories260K-f32.gguf") << QStringLiteral("stories260K-f32.tensor-stats.tsv");
        QTest::newRow("llama-2-tiny-random-f16")
            << QStringLiteral("llama-2-tiny-random-f16.gguf")
            << QStringLiteral("llama-2-tiny-random-f16.tensor-stats.tsv");
    }

    void matchesReferenceTable() {
        QFETCH(QString, model);
        QFETCH(QString, table);
        ORGAN_REQUIRE_SHARED(sharedModel(model));
        ORGAN_REQUIRE_SHARED(sharedReference(table));
        const auto file = GgufFile::open(sharedModel(model).toStdString());
        QFile tsv(sharedReference(table));
        QVERIFY(tsv.open(QIODevice::ReadOnly | QIODevice::Text));
        int rows = 0;
        while (!tsv.atEnd()) {
            const QString line = QString::fromUtf8(tsv.readLine()).trimmed();
            if (line.isEmpty() || line.startsWith(u'#') || line.startsWith(QStringLiteral("name\t"))) {
                continue;
            }
            const QStringList cells = line.split(u'\t');
            QVERIFY(cells.size() >= 6);
            const TensorInfo* t = file->findTensor(cells[0].toStdString());
            QVERIFY2(t != nullptr, qPrintable(cells[0]));
            QCOMPARE(QString::fromUtf8(tensorTypeName(t->type)), cells[1]);
            QStringList shape;
            for (std::uint32_t d = 0; d < t->nDims; ++d) {
                shape << QString::number(t->ne[d]);
            }
            QCOMPARE(shape.join(u','), cells[2]);
            QCOMPARE(t->elements, cells[3].toULongLong());
            QCOMPARE(t->fileOffset, cells[4].toULongLong());
            QCOMPARE(t->bytes, cells[5].toULongLong());
            ++rows;
        }
        QCOMPARE(std::size_t(rows), file->tensors().size());
    }

    void storiesFacts() {
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-f32.gguf")));
        const auto model = GgufModel::open(sharedModel(QStringLiteral("stories260K-f32.gguf")).toStdString());
        QCOMPARE(model->primary().version(), 3u);
        QCOMPARE(model->tensors().size(), std::size_t(48));
        QCOMPARE(model->metadata().size(), std::size_t(19));
        QCOMPARE(model->primary().alignment(), 32u);
        QCOMPARE(model->architecture(), std::string("llama"));
        QCOMPARE(model->archValue("block_count"), std::optional<std::uint64_t>(5));
        QCOMPARE(model->archValue("embedding_length"), std::optional<std::uint64_t>(64));
        QCOMPARE(model->fileSize(), std::uint64_t(1185376));
        const MetaValue* tokens = model->find("tokenizer.ggml.tokens");
        QVERIFY(tokens != nullptr);
        QCOMPARE(tokens->elementType(), ValueType::String);
        QCOMPARE(tokens->arraySize(), std::uint64_t(512));
        const auto first = tokens->elements(3);
        QCOMPARE(first.size(), std::size_t(3));
        QCOMPARE(std::string(*first[0].asString()), std::string("<unk>"));
        QCOMPARE(std::string(*first[1].asString()), std::string("<s>"));
    }

    // The v1 file has 32-bit counts and lengths, tensors in another order, the same weights.
    void versionOneMatchesVersionThree() {
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-f32-ggufv1.gguf")));
        ORGAN_REQUIRE_SHARED(sharedModel(QStringLiteral("stories260K-f32.gguf")));
        const auto v1 =
            GgufFile::open(sharedModel(QStringLiteral("stories260K-f32-ggufv1.gguf")).toStdString());
        const auto v3 = GgufFile::open(sharedModel(QStringLiteral("stories260K-f32.gguf")).toStdString());
        QCOMPARE(v1->version(), 1u);
        QCOMPARE(v1->tensors().size(), std::size_t(48));
        QCOMPARE(v1->metadata().size(), std::size_t(18));
        QCOMPARE(*v1->find("llama.context_length")->asUInt(), std::uint64_t(512));
        QCOMPARE(std::string(*v1->find("general.architecture")->asString()), std::string("llama"));
        QCOMPARE(v1->find("tokenizer.ggml.tokens")->arraySize(), std::uint64_t(512));
        for (const auto& t1 : v1->tensors()) {
            const TensorInfo* t3 = v3->findTensor(t1.name);
            QVERIFY2(t3 != nullptr, t1.name.c_str());
            QCOMPARE(t1.type, t3->type);
            QCOMPARE(t1.nDims, t3->nDims);
            QCOMPARE(t1.ne, t3->ne);
            const auto a = v1->tensorData(t1);
            const auto b = v3->tensorData(*t3);
            QVERIFY2(std::equal(a.begin(), a.end(), b.begin(), b.end()), t1.name.c_str());
        }
    }

    void everySharedFileOpens() {
        ORGAN_REQUIRE_SHARED(sharedModel(QString()));
        int files = 0;
        for (const QString& path : sharedGgufFiles()) {
            try {
                const auto model = GgufModel::open(path.toStdString());
                std::uint64_t end = 0;
                for (const auto& t : model->tensors()) {
                    QVERIFY(t.fileOffset % model->primary().alignment() == 0);
                    end = std::max(end, t.fileOffset + t.bytes);
                }
                QVERIFY(end <= model->fileSize());
            } catch (const std::exception& e) {
                QFAIL(qPrintable(path + QStringLiteral(": ") + QString::fromUtf8(e.what())));
            }
            ++files;
        }
        QVERIFY2(files >= 40, qPrintable(QString::number(files)));
    }

    // Vocab-only files: no tensors, large string arrays, merges.
    void vocabularyFiles() {
        const QString path = sharedModel(QStringLiteral("ggml-vocab-gpt-2.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto file = GgufFile::open(path.toStdString());
        QCOMPARE(file->tensors().size(), std::size_t(0));
        QCOMPARE(file->find("tokenizer.ggml.tokens")->arraySize(), std::uint64_t(50257));
        QVERIFY(file->find("tokenizer.ggml.merges")->arraySize() > 40000);
        QCOMPARE(std::string(*file->find("tokenizer.ggml.model")->asString()), std::string("gpt2"));
    }

    void quantizedTypesRead() {
        const QString path = sharedModel(QStringLiteral("quant/wide-q4_k_m.gguf"));
        ORGAN_REQUIRE_SHARED(path);
        const auto file = GgufFile::open(path.toStdString());
        std::map<std::string, int> types;
        for (const auto& t : file->tensors()) {
            ++types[std::string(tensorTypeName(t.type))];
            const auto& traits = traitsOf(t.type);
            QCOMPARE(t.bytes, t.elements / traits.blockSize * traits.bytesPerBlock);
        }
        QVERIFY(types.count("Q4_K") == 1 && types.count("Q6_K") == 1);
    }

    // ggml's block sizes and bytes per block (ggml-common.h), every type it knows today.
    void tensorTypeTable_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<uint>("number");
        QTest::addColumn<uint>("block");
        QTest::addColumn<uint>("bytes");
        const struct {
            const char* name;
            uint number, block, bytes;
        } expected[] = {
            {"F32", 0, 1, 4},         {"F16", 1, 1, 2},         {"Q4_0", 2, 32, 18},
            {"Q4_1", 3, 32, 20},      {"Q5_0", 6, 32, 22},      {"Q5_1", 7, 32, 24},
            {"Q8_0", 8, 32, 34},      {"Q8_1", 9, 32, 36},      {"Q2_K", 10, 256, 84},
            {"Q3_K", 11, 256, 110},   {"Q4_K", 12, 256, 144},   {"Q5_K", 13, 256, 176},
            {"Q6_K", 14, 256, 210},   {"Q8_K", 15, 256, 292},   {"IQ2_XXS", 16, 256, 66},
            {"IQ2_XS", 17, 256, 74},  {"IQ3_XXS", 18, 256, 98}, {"IQ1_S", 19, 256, 50},
            {"IQ4_NL", 20, 32, 18},   {"IQ3_S", 21, 256, 110},  {"IQ2_S", 22, 256, 82},
            {"IQ4_XS", 23, 256, 136}, {"I8", 24, 1, 1},         {"I16", 25, 1, 2},
            {"I32", 26, 1, 4},        {"I64", 27, 1, 8},        {"F64", 28, 1, 8},
            {"IQ1_M", 29, 256, 56},   {"BF16", 30, 1, 2},       {"TQ1_0", 34, 256, 54},
            {"TQ2_0", 35, 256, 66},   {"MXFP4", 39, 32, 17},    {"NVFP4", 40, 64, 36},
            {"Q1_0", 41, 128, 18},    {"Q2_0", 42, 64, 18},
        };
        for (const auto& e : expected) {
            QTest::newRow(e.name) << QString::fromUtf8(e.name) << e.number << e.block << e.bytes;
        }
        QCOMPARE(allTensorTypes().size(), std::size(expected));
    }

    void tensorTypeTable() {
        QFETCH(QString, name);
        QFETCH(uint, number);
        QFETCH(uint, block);
        QFETCH(uint, bytes);
        const auto traits = tensorTypeTraits(number);
        QVERIFY(traits.has_value());
        QCOMPARE(QString::fromUtf8(traits->name), name);
        QCOMPARE(traits->blockSize, block);
        QCOMPARE(traits->bytesPerBlock, bytes);
        QCOMPARE(tensorTypeFromName(name.toLower().toStdString()), traits->type);
    }

    void numbersForPeople() {
        QCOMPARE(groupDigits(0), std::string("0"));
        QCOMPARE(groupDigits(999), std::string("999"));
        QCOMPARE(groupDigits(1000), std::string("1 000"));
        QCOMPARE(groupDigits(9123456789ull), std::string("9 123 456 789"));
        QCOMPARE(humanBytes(512), std::string("512 B"));
        QCOMPARE(humanBytes(1536), std::string("1.50 KiB"));
        QCOMPARE(humanBytes(45ull << 30), std::string("45.00 GiB"));
        QCOMPARE(humanCount(999), std::string("999"));
        QCOMPARE(humanCount(70553706496ull), std::string("70.55 B"));
        QCOMPARE(fileLabel("/a/b/model.gguf"), std::string("model.gguf"));
        QCOMPARE(fileLabel("model.gguf"), std::string("model.gguf"));
        QCOMPARE(fileLabel("models/organs//"), std::string("organs"));
        QCOMPARE(fileLabel("./"), std::string("."));
        QCOMPARE(fileLabel("//"), std::string("/"));
        QCOMPARE(fileLabel(""), std::string("(an empty path)")); // not ": cannot open"
    }

    void removedTypesAreUnknown() {
        for (uint removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 1000u}) {
            QVERIFY2(!tensorTypeTraits(removed).has_value(), qPrintable(QString::number(removed)));
        }
    }

    // Every metadata value type and arrays of every element type, arrays of arrays too,
    // written by our writer and read back.
    void everyValueType() {
        QTemporaryDir dir;
        GgufWriteSpec spec;
        spec.set("v.u8", MetaValue::fromU8(250));
        spec.set("v.i8", MetaValue::fromI8(-7));
        spec.set("v.u16", MetaValue::fromU16(65000));
        spec.set("v.i16", MetaValue::fromI16(-30000));
        spec.set("v.u32", MetaValue::fromU32(4000000000u));
        spec.set("v.i32", MetaValue::fromI32(-2000000000));
        spec.set("v.f32", MetaValue::fromF32(1.5f));
        spec.set("v.bool", MetaValue::fromBool(true));
        spec.set("v.string", MetaValue::fromString("héllo"));
        spec.set("v.u64", MetaValue::fromU64(18000000000000000000ull));
        spec.set("v.i64", MetaValue::fromI64(-9000000000000000000ll));
        spec.set("v.f64", MetaValue::fromF64(-2.25));
        const std::vector<MetaValue> scalars = {
            MetaValue::fromU8(1),     MetaValue::fromI8(-1),      MetaValue::fromU16(2),
            MetaValue::fromI16(-2),   MetaValue::fromU32(3),      MetaValue::fromI32(-3),
            MetaValue::fromF32(0.5f), MetaValue::fromBool(false), MetaValue::fromString("s"),
            MetaValue::fromU64(4),    MetaValue::fromI64(-4),     MetaValue::fromF64(0.25)};
        for (const auto& scalar : scalars) {
            spec.set("a." + std::string(valueTypeName(scalar.type())),
                     MetaValue::fromArray(scalar.type(), {scalar, scalar}));
        }
        spec.set("a.array", MetaValue::fromArray(ValueType::Array,
                                                 {MetaValue::fromArray(ValueType::U8, {MetaValue::fromU8(9)}),
                                                  MetaValue::fromArray(ValueType::String, {})}));
        spec.set("a.empty", MetaValue::fromArray(ValueType::F32, {}));
        const QString path = dir.filePath(QStringLiteral("values.gguf"));
        QVERIFY(writeFixture(path, spec));
        const auto file = GgufFile::open(path.toStdString());
        QCOMPARE(file->metadata().size(), spec.metadata.size());
        for (std::size_t i = 0; i < spec.metadata.size(); ++i) {
            QCOMPARE(file->metadata()[i].key, spec.metadata[i].first);
            QVERIFY2(file->metadata()[i].value == spec.metadata[i].second, spec.metadata[i].first.c_str());
        }
        QCOMPARE(*file->find("v.u8")->asUInt(), std::uint64_t(250));
        QCOMPARE(*file->find("v.i8")->asInt(), std::int64_t(-7));
        QCOMPARE(*file->find("v.i16")->asInt(), std::int64_t(-30000));
        QCOMPARE(*file->find("v.u32")->asUInt(), std::uint64_t(4000000000u));
        QCOMPARE(*file->find("v.u64")->asUInt(), std::uint64_t(18000000000000000000ull));
        QVERIFY(!file->find("v.u64")->asInt().has_value());
        QCOMPARE(*file->find("v.i64")->asInt(), std::int64_t(-9000000000000000000ll));
        QCOMPARE(*file->find("v.f32")->asFloat(), 1.5);
        QCOMPARE(*file->find("v.f64")->asFloat(), -2.25);
        QCOMPARE(*file->find("v.bool")->asBool(), true);
        QCOMPARE(std::string(*file->find("v.string")->asString()), std::string("héllo"));
        const MetaValue* nested = file->find("a.array");
        QCOMPARE(nested->elementType(), ValueType::Array);
        const auto inner = nested->elements(10);
        QCOMPARE(inner.size(), std::size_t(2));
        QCOMPARE(*inner[0].elements(1)[0].asUInt(), std::uint64_t(9));
        QCOMPARE(inner[1].elementType(), ValueType::String);
        QCOMPARE(inner[1].arraySize(), std::uint64_t(0));
        QCOMPARE(file->find("a.string")->toDisplay(), std::string("[2 × string] s, s"));
    }
};

QTEST_APPLESS_MAIN(TestReader)
#include "tst_reader.moc"
