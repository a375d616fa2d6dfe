// Split models: opening any part opens the set, checked against split.count and
// split.tensors.count; a missing or inconsistent part is a clear error.
#include "fixtures.h"

#include "gguf/gguf_model.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using namespace organ;
using namespace organ::testing;

class TestSplit : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    std::string prefix(const QString& name) const { return m_dir.filePath(name).toStdString(); }

    // Writes `parts` files of two tensors each; `tamper` may change a part's spec.
    void writeSplit(const QString& name, std::uint16_t parts, std::uint16_t declaredCount,
                    std::int32_t declaredTensors, int tamperedPart = -1, std::uint16_t tamperedCount = 0) {
        for (std::uint16_t part = 0; part < parts; ++part) {
            GgufWriteSpec spec;
            if (part == 0) {
                spec.set("general.architecture", MetaValue::fromString("llama"));
                spec.set("general.name", MetaValue::fromString("split-test"));
            }
            spec.set("split.no", MetaValue::fromU16(part));
            spec.set("split.count", MetaValue::fromU16(part == tamperedPart ? tamperedCount : declaredCount));
            spec.set("split.tensors.count", MetaValue::fromI32(declaredTensors));
            for (int i = 0; i < 2; ++i) {
                const std::string tensor =
                    "blk." + std::to_string(part) + ".t" + std::to_string(i) + ".weight";
                spec.tensors.push_back(
                    patternTensor(tensor, TensorType::F32, {4, 2}, std::uint8_t(part * 2 + i)));
            }
            QVERIFY(writeFixture(QString::fromStdString(splitPartPath(prefix(name), part + 1, parts)), spec));
        }
    }

    QString openError(const std::string& path) {
        try {
            GgufModel::open(path);
        } catch (const std::exception& e) {
            return QString::fromStdString(e.what());
        }
        return {};
    }

private slots:
    void namesParse() {
        SplitName split;
        QVERIFY(parseSplitName("/m/Grok-100B-Q4_0-00003-of-00009.gguf", split));
        QCOMPARE(split.prefix, std::string("/m/Grok-100B-Q4_0"));
        QCOMPARE(split.part, 3u);
        QCOMPARE(split.count, 9u);
        QVERIFY(!parseSplitName("/m/model.gguf", split));
        QVERIFY(!parseSplitName("/m/x-00000-of-00002.gguf", split));
        QVERIFY(!parseSplitName("/m/x-00003-of-00002.gguf", split));
        QCOMPARE(splitPartPath("a/b", 2, 10), std::string("a/b-00002-of-00010.gguf"));
        QVERIFY(parseSplitName("-00001-of-00001.gguf", split));
        QCOMPARE(split.prefix, std::string());
        for (const char* other : {"x-0000a-of-00002.gguf", "x-00001-of-0002.gguf", "x-00001_of-00002.gguf",
                                  "x-00001-of-00002.GGUF", "x-00001-of-00002.ggufx", "00001-of-00002.gguf",
                                  "x-00001-of-00002gguf", "x-+0001-of-00002.gguf"}) {
            QVERIFY2(!parseSplitName(other, split), other);
        }
        QVERIFY(parseSplitName("x-00002-of-99999.gguf", split));
        QCOMPARE(split.count, 99999u);
        // A path of any length: a regular expression recursed per character and overflowed the
        // stack from some 26 000 of them.
        const std::string longPrefix(200000, 'a');
        QVERIFY(parseSplitName(longPrefix + "-00001-of-00002.gguf", split));
        QCOMPARE(split.prefix, longPrefix);
        QVERIFY(!parseSplitName(longPrefix + ".gguf", split));
        QVERIFY2(openError(longPrefix + ".gguf").contains(QStringLiteral("File name too long")),
                 qPrintable(openError(longPrefix + ".gguf")));
    }

    void opensWholeSetFromAnyPart() {
        writeSplit(QStringLiteral("good"), 3, 3, 6);
        for (unsigned part = 1; part <= 3; ++part) {
            const auto model = GgufModel::open(splitPartPath(prefix(QStringLiteral("good")), part, 3));
            QCOMPARE(model->shards().size(), std::size_t(3));
            QCOMPARE(model->tensors().size(), std::size_t(6));
            QCOMPARE(model->name(), std::string("split-test"));
            QCOMPARE(model->path(), splitPartPath(prefix(QStringLiteral("good")), 1, 3));
        }
        const auto model = GgufModel::open(splitPartPath(prefix(QStringLiteral("good")), 1, 3));
        const TensorInfo* last = model->findTensor("blk.2.t1.weight");
        QVERIFY(last != nullptr);
        QCOMPARE(last->shard, 2u);
        const auto data = model->tensorData(*last);
        QCOMPARE(data.size(), std::size_t(32));
        QCOMPARE(static_cast<int>(data[0]), 5); // pattern seed 5: (0 * 7 + 5) % 61
        std::uint64_t total = 0;
        for (const auto& shard : model->shards()) {
            total += shard->fileSize();
        }
        QCOMPARE(model->fileSize(), total);
    }

    void missingPart() {
        writeSplit(QStringLiteral("missing"), 3, 3, 6);
        QVERIFY(
            QFile::remove(QString::fromStdString(splitPartPath(prefix(QStringLiteral("missing")), 3, 3))));
        const QString error = openError(splitPartPath(prefix(QStringLiteral("missing")), 1, 3));
        QVERIFY2(error.contains(QStringLiteral("part 3 of 3 is missing")) &&
                     error.contains(QStringLiteral("missing-00003-of-00003.gguf: cannot open")),
                 qPrintable(error));
    }

    void inconsistentCount() {
        writeSplit(QStringLiteral("count"), 3, 3, 6, 1, 4);
        const QString error = openError(splitPartPath(prefix(QStringLiteral("count")), 1, 3));
        QVERIFY2(
            error.contains(QStringLiteral("count-00002-of-00003.gguf: key 'split.count' is 4, expected 3")),
            qPrintable(error));
    }

    void wrongTensorTotal() {
        writeSplit(QStringLiteral("total"), 2, 2, 5);
        const QString error = openError(splitPartPath(prefix(QStringLiteral("total")), 1, 2));
        QVERIFY2(error.contains(QStringLiteral("'split.tensors.count' is 5, but the 2 parts hold 4 tensors")),
                 qPrintable(error));
    }

    void countDisagreesWithFileName() {
        writeSplit(QStringLiteral("named"), 2, 3, 4);
        const QString error = openError(splitPartPath(prefix(QStringLiteral("named")), 1, 2));
        QVERIFY2(error.contains(
                     QStringLiteral("says 3 parts, but the file name does not end in -00001-of-00003.gguf")),
                 qPrintable(error));
    }
};

QTEST_APPLESS_MAIN(TestSplit)
#include "tst_split.moc"
