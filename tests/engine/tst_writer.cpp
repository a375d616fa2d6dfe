// The writer: byte-identical round trips of real files, v1/v2 -> v3, alignment,
// streamed sources, cancel and failure leaving nothing behind, inputs never overwritten; the
// digests it verifies what it wrote by.
#include "fixtures.h"

#include "gguf/gguf_writer.h"
#include "page_cache.h"
#include "shared_models.h"
#include "support/digest.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <cstring>
#include <fstream>
#include <random>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace organ;
using namespace organ::testing;

class TestWriter : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void roundTripIsByteIdentical_data() {
        QTest::addColumn<QString>("source");
        for (const QString& file : sharedGgufFiles()) {
            QTest::newRow(qPrintable(QFileInfo(file).fileName())) << file;
        }
        if (sharedGgufFiles().isEmpty()) {
            QTest::newRow("shared models") << sharedModel(QStringLiteral("stories260K-f32.gguf"));
        }
    }

    void roundTripIsByteIdentical() {
        QFETCH(QString, source);
        ORGAN_REQUIRE_SHARED(source);
        const auto file = GgufFile::open(source.toStdString());
        const QString out = path(QStringLiteral("roundtrip.gguf"));
        const JobResult result = writeGguf(out.toStdString(), specFromFile(*file));
        QVERIFY2(result.isOk(), result.message.c_str());
        QCOMPARE(
            QFileInfo(out).dir().entryList({QFileInfo(out).fileName() + QStringLiteral(".partial*")}).size(),
            0);
        if (file->version() == 3) {
            QVERIFY2(readAll(out) == readAll(source), "a v3 file did not come back byte for byte");
            return;
        }
        const auto written = GgufFile::open(out.toStdString());
        QCOMPARE(written->version(), 3u);
        QCOMPARE(written->tensors().size(), file->tensors().size());
        for (std::size_t i = 0; i < file->tensors().size(); ++i) {
            const auto a = file->tensorData(file->tensors()[i]);
            const auto b = written->tensorData(written->tensors()[i]);
            QVERIFY(std::equal(a.begin(), a.end(), b.begin(), b.end()));
        }
        for (std::size_t i = 0; i < file->metadata().size(); ++i) {
            QVERIFY(written->metadata()[i].value == file->metadata()[i].value);
        }
    }

    // Tensors of a file are copied file to file by the kernel (copy_file_range), or through a buffer
    // where it refuses (a source on another file system: /dev/shm, /tmp or /var/tmp, the first on one):
    // either way the output is the one the bytes written from memory give, byte for byte.
    void copiesFileToFileAsFromMemory_data() {
        QTest::addColumn<QString>("folder");
        QTest::newRow("same file system") << m_dir.path();
        // Empty when no writable folder tried is on another file system.
        QString other;
        struct stat ours {};
        QVERIFY(::stat(QFile::encodeName(m_dir.path()).constData(), &ours) == 0);
        for (const QString& candidate :
             {QStringLiteral("/dev/shm"), QStringLiteral("/tmp"), QStringLiteral("/var/tmp")}) {
            struct stat theirs {};
            if (other.isEmpty() && QFileInfo(candidate).isWritable() &&
                ::stat(QFile::encodeName(candidate).constData(), &theirs) == 0 &&
                theirs.st_dev != ours.st_dev) {
                other = candidate;
            }
        }
        QTest::newRow("other file system") << other;
    }

    void copiesFileToFileAsFromMemory() {
        QFETCH(QString, folder);
        if (folder.isEmpty()) {
            QSKIP("/dev/shm, /tmp and /var/tmp are not writable or on the test folder's file system: "
                  "the copy through a buffer is not reached");
        }
        QTemporaryDir sourceDir(folder + QStringLiteral("/organ-writer-XXXXXX"));
        QVERIFY(sourceDir.isValid());
        const QString source = sourceDir.filePath(QStringLiteral("source.gguf"));
        QVERIFY(writeFixture(source, perLayerLlama(5)));
        const auto file = GgufFile::open(source.toStdString());
        GgufWriteSpec copied = specFromFile(*file);
        // A header of another length: the tensors land at other offsets than in the source.
        copied.set("general.name", MetaValue::fromString("renamed by three bytes"));
        GgufWriteSpec fromMemory = copied;
        for (TensorToWrite& tensor : fromMemory.tensors) {
            auto bytes = std::make_shared<std::vector<std::byte>>(tensor.source.bytes.begin(),
                                                                  tensor.source.bytes.end());
            tensor.source = {};
            tensor.source.bytes = *bytes;
            tensor.source.owner = bytes;
        }
        const QString a = path(QStringLiteral("copied.gguf"));
        const QString b = path(QStringLiteral("from-memory.gguf"));
        const JobResult first = writeGguf(a.toStdString(), copied);
        QVERIFY2(first.isOk(), first.message.c_str());
        const JobResult second = writeGguf(b.toStdString(), fromMemory);
        QVERIFY2(second.isOk(), second.message.c_str());
        QVERIFY2(readAll(a) == readAll(b), "the kernel's copy differs from the bytes written from memory");
        QCOMPARE(GgufFile::open(a.toStdString())->find("general.name")->asString().value_or(""),
                 std::string_view("renamed by three bytes"));
    }

    void rewritesVersionOneAsThree() {
        const QString source = sharedModel(QStringLiteral("stories260K-f32-ggufv1.gguf"));
        ORGAN_REQUIRE_SHARED(source);
        const auto v1 = GgufFile::open(source.toStdString());
        const QString out = path(QStringLiteral("v3.gguf"));
        QVERIFY(writeGguf(out.toStdString(), specFromFile(*v1)).isOk());
        const auto v3 = GgufFile::open(out.toStdString());
        QCOMPARE(v3->version(), 3u);
        QCOMPARE(v3->find("tokenizer.ggml.tokens")->arraySize(), std::uint64_t(512));
        QCOMPARE(v3->find("tokenizer.ggml.tokens")->toDisplay(3),
                 v1->find("tokenizer.ggml.tokens")->toDisplay(3));
        for (const auto& t1 : v1->tensors()) {
            const TensorInfo* t3 = v3->findTensor(t1.name);
            QVERIFY(t3 != nullptr);
            const auto a = v1->tensorData(t1);
            const auto b = v3->tensorData(*t3);
            QVERIFY(std::equal(a.begin(), a.end(), b.begin(), b.end()));
        }
    }

    void alignmentFromMetadata() {
        GgufWriteSpec spec;
        spec.set("general.alignment", MetaValue::fromU32(256));
        spec.tensors.push_back(patternTensor("x", TensorType::F32, {3}, 1));
        spec.tensors.push_back(patternTensor("y", TensorType::F16, {5, 3}, 2));
        const QString out = path(QStringLiteral("aligned.gguf"));
        QVERIFY(writeFixture(out, spec));
        const auto file = GgufFile::open(out.toStdString());
        QCOMPARE(file->alignment(), 256u);
        QCOMPARE(file->dataOffset() % 256, std::uint64_t(0));
        QCOMPARE(file->tensors()[1].relativeOffset, std::uint64_t(256));
        const QByteArray bytes = readAll(out);
        QCOMPARE(std::uint64_t(bytes.size()), file->dataOffset() + 512);
        // Padding is zeros.
        for (std::uint64_t i = file->headerSize(); i < file->dataOffset(); ++i) {
            QCOMPARE(bytes[int(i)], char(0));
        }
        for (std::uint64_t i = file->dataOffset() + 12; i < file->dataOffset() + 256; ++i) {
            QCOMPARE(bytes[int(i)], char(0));
        }
    }

    void badAlignmentRefused() {
        GgufWriteSpec spec;
        spec.set("general.alignment", MetaValue::fromU32(48));
        const JobResult result = writeGguf(path(QStringLiteral("bad.gguf")).toStdString(), spec);
        QVERIFY(!result.isOk());
        QVERIFY2(QString::fromStdString(result.message).contains(QStringLiteral("power of two")),
                 result.message.c_str());
        QVERIFY(!QFileInfo::exists(path(QStringLiteral("bad.gguf"))));
    }

    // A callback source is asked for each chunk; a 12 MiB tensor crosses chunk borders.
    void streamsFromCallback() {
        GgufWriteSpec spec;
        TensorToWrite t;
        t.name = "big";
        t.type = TensorType::I8;
        t.nDims = 1;
        t.ne[0] = 12u << 20;
        int calls = 0;
        t.source.generate = [&calls](std::uint64_t offset, std::span<std::byte> out) {
            ++calls;
            for (std::size_t i = 0; i < out.size(); ++i) {
                out[i] = static_cast<std::byte>((offset + i) % 251);
            }
        };
        spec.tensors.push_back(std::move(t));
        const QString out = path(QStringLiteral("stream.gguf"));
        std::vector<Progress> reports;
        const JobResult result = writeGguf(out.toStdString(), spec, [&](const Progress& p) {
            reports.push_back({p.done, p.total, {}});
        });
        QVERIFY2(result.isOk(), result.message.c_str());
        QCOMPARE(calls, 3);
        QVERIFY(!reports.empty());
        QCOMPARE(reports.back().done, reports.back().total);
        const auto file = GgufFile::open(out.toStdString());
        const auto data = file->tensorData(file->tensors()[0]);
        for (std::uint64_t i :
             {std::uint64_t(0), std::uint64_t(4u << 20) - 1, std::uint64_t(4u << 20), data.size() - 1}) {
            QCOMPARE(static_cast<int>(data[i]), int(i % 251));
        }
        QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("*.partial*")}).size(), 0);
    }

    // What generated tensors read from files comes into the page cache ahead of them, as far as
    // the window past the tensor being written: while a tensor is made, the next one's input
    // arrives, and the one after it waits.
    void generatedTensorsInputsAreReadAhead() {
        const std::string folder = folderOnDisk();
        if (folder.empty()) {
            QSKIP(kNoFolderOnDisk);
        }
        QTemporaryDir dir(QString::fromStdString(folder) + QStringLiteral("/organ-read-ahead-XXXXXX"));
        QVERIFY(dir.isValid());
        constexpr std::uint64_t kBytes = 8u << 20;
        // The inputs 40 MiB apart: the kernel's own readahead after one (read_ahead_kb, 8 MiB on
        // some disks) does not reach the next.
        constexpr std::uint64_t kApart = 40u << 20;
        const std::string input = dir.filePath(QStringLiteral("input.bin")).toStdString();
        {
            const std::vector<char> bytes(kBytes, 'x');
            std::ofstream file(input, std::ios::binary);
            for (std::uint64_t i = 0; i < 3; ++i) {
                file.seekp(static_cast<std::streamoff>(i * kApart));
                file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
            }
        }
        const std::uint64_t size = 2 * kApart + kBytes;
        const auto mapping = MappedFile::open(RootedPath(input));
        if (const auto problem = evictFromPageCache(input, size)) {
            QFAIL(problem->c_str());
        }
        const auto pages =
            static_cast<std::size_t>(kBytes / static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)));
        const auto inputOf = [&](std::uint64_t i) {
            return residentPages(input, kBytes, i * kApart).value_or(0);
        };
        // Up to about ten seconds for the thread to read what it should.
        const auto arrives = [&](std::uint64_t i) {
            for (int wait = 0; wait < 1000; ++wait) {
                if (inputOf(i) == pages) {
                    return true;
                }
                QTest::qSleep(10);
            }
            return false;
        };
        bool secondArrived = false;
        bool thirdWaited = true;
        bool thirdArrived = false;
        GgufWriteSpec spec;
        spec.readAheadWindow = 2 * kBytes; // the tensor being written and the next
        // A tensor from memory first: no input to read, so the steps are not the tensors' places.
        auto bytes = std::make_shared<std::vector<std::byte>>(64);
        TensorToWrite first;
        first.name = "from memory";
        first.type = TensorType::I8;
        first.ne[0] = 64;
        first.source.bytes = *bytes;
        first.source.owner = bytes;
        spec.tensors.push_back(std::move(first));
        for (std::uint64_t i = 0; i < 3; ++i) {
            TensorToWrite t;
            t.name = "t" + std::to_string(i);
            t.type = TensorType::I8;
            t.ne[0] = 1u << 20;
            t.source.reads = {{mapping, i * kApart, kBytes}};
            t.source.generate = [&, i](std::uint64_t offset, std::span<std::byte> out) {
                std::fill(out.begin(), out.end(), std::byte{0});
                if (offset == 0 && i == 0) {
                    secondArrived = arrives(1);
                    for (int look = 0; look < 20 && thirdWaited; ++look) {
                        thirdWaited = inputOf(2) == 0;
                        QTest::qSleep(10);
                    }
                } else if (offset == 0 && i == 1) {
                    thirdArrived = arrives(2);
                }
            };
            spec.tensors.push_back(std::move(t));
        }
        const JobResult result = writeGguf(path(QStringLiteral("read-ahead.gguf")).toStdString(), spec);
        QVERIFY2(result.isOk(), result.message.c_str());
        QVERIFY2(secondArrived, "the second tensor's input was not read while the first was made");
        QVERIFY2(thirdWaited, "the third tensor's input was read past the window");
        QVERIFY2(thirdArrived, "the third tensor's input was not read while the second was made");
    }

    void cancelLeavesNoFile() {
        GgufWriteSpec spec;
        TensorToWrite t;
        t.name = "big";
        t.type = TensorType::I8;
        t.nDims = 1;
        t.ne[0] = 16u << 20;
        StopToken stop;
        t.source.generate = [&stop](std::uint64_t offset, std::span<std::byte> out) {
            std::memset(out.data(), 1, out.size());
            if (offset > 0) {
                stop.requestStop();
            }
        };
        spec.tensors.push_back(std::move(t));
        const QString out = path(QStringLiteral("cancelled.gguf"));
        const JobResult result = writeGguf(out.toStdString(), spec, {}, &stop);
        QCOMPARE(result.status, JobResult::Status::Cancelled);
        QVERIFY(!QFileInfo::exists(out));
        QCOMPARE(
            QFileInfo(out).dir().entryList({QFileInfo(out).fileName() + QStringLiteral(".partial*")}).size(),
            0);
    }

    void failureLeavesNoFile() {
        GgufWriteSpec spec;
        spec.tensors.push_back(patternTensor("x", TensorType::F32, {4}, 1));
        spec.tensors.push_back(patternTensor("x", TensorType::F32, {4}, 1));
        const QString out = path(QStringLiteral("duplicate.gguf"));
        const JobResult duplicate = writeGguf(out.toStdString(), spec);
        QVERIFY(!duplicate.isOk());
        QVERIFY2(QString::fromStdString(duplicate.message).contains(QStringLiteral("appears twice")),
                 duplicate.message.c_str());
        QVERIFY(!QFileInfo::exists(out));

        spec.tensors.pop_back();
        const QString missingFolder = path(QStringLiteral("no/such/folder/out.gguf"));
        const JobResult io = writeGguf(missingFolder.toStdString(), spec);
        QVERIFY(!io.isOk());
        QVERIFY2(QString::fromStdString(io.message).contains(QStringLiteral("out.gguf: the folder ")),
                 io.message.c_str());

        spec.tensors[0].source.bytes = spec.tensors[0].source.bytes.first(3);
        const JobResult shortSource = writeGguf(out.toStdString(), spec);
        QVERIFY(!shortSource.isOk());
        QVERIFY(!QFileInfo::exists(out));
    }

    void refusesToOverwriteAnInput() {
        GgufWriteSpec spec;
        spec.tensors.push_back(patternTensor("x", TensorType::F32, {4}, 1));
        const QString input = path(QStringLiteral("input.gguf"));
        QVERIFY(writeFixture(input, spec));
        const QByteArray before = readAll(input);
        const auto opened = GgufFile::open(input.toStdString());
        // Writing the open file's own contents over it, and writing anything else over it.
        for (const GgufWriteSpec& attempt : {specFromFile(*opened), spec}) {
            const JobResult result = writeGguf(input.toStdString(), attempt);
            QVERIFY(!result.isOk());
            QVERIFY2(QString::fromStdString(result.message)
                         .contains(QStringLiteral("refusing to write over a file that is also an input")),
                     result.message.c_str());
        }
        // Through a symbolic link and a hard link too.
        const QString symlink = path(QStringLiteral("symlink.gguf"));
        const QString hardlink = path(QStringLiteral("hardlink.gguf"));
        QVERIFY(QFile::link(input, symlink));
        QCOMPARE(::link(input.toLocal8Bit().constData(), hardlink.toLocal8Bit().constData()), 0);
        QVERIFY(!writeGguf(symlink.toStdString(), spec).isOk());
        QVERIFY(!writeGguf(hardlink.toStdString(), spec).isOk());
        QCOMPARE(readAll(input), before);
    }

    // The writer's four-lane digest and the one-lane one: the same value however the bytes are
    // split, another for any byte changed, two words swapped, or a byte more.
    void digestsDoNotDependOnChunks() {
        checkChunks<Digest>();
        checkChunks<StripedDigest>();
    }

    void digestsSeeEveryByteAndItsPlace() {
        checkChanges<Digest>();
        checkChanges<StripedDigest>();
    }

    // The measurement cache's entries are named by the one-lane digest: its values stay as they were.
    void oneLaneDigestIsUnchanged() {
        Digest d;
        d.update(std::string_view("organ-zmeasure-"));
        d.update(sampleBytes(1000));
        d.updateValue(std::uint64_t{100000});
        QCOMPARE(d.value(), std::uint64_t{0x448159C1DAA6F9BAull});
    }

private:
    static std::vector<std::byte> sampleBytes(std::size_t n) {
        std::vector<std::byte> bytes(n);
        for (std::size_t i = 0; i < n; ++i) {
            bytes[i] = static_cast<std::byte>(i * 37 + 11);
        }
        return bytes;
    }

    template <class D> static std::uint64_t digestOf(std::span<const std::byte> bytes) {
        D d;
        d.update(bytes);
        return d.value();
    }

    template <class D> void checkChunks() {
        std::mt19937 random(7);
        for (const std::size_t n : {0u, 1u, 7u, 8u, 31u, 32u, 33u, 1000u, 4099u}) {
            const std::vector<std::byte> bytes = sampleBytes(n);
            const std::uint64_t whole = digestOf<D>(bytes);
            for (int trial = 0; trial < 50; ++trial) {
                D d;
                for (std::size_t at = 0; at < n;) {
                    const std::size_t size =
                        std::min<std::size_t>(n - at, random() % (trial % 2 == 0 ? 41 : 300));
                    d.update(std::span(bytes).subspan(at, size));
                    at += size;
                }
                QCOMPARE(d.value(), whole);
            }
        }
    }

    // 203 bytes: 25 words and a tail of 3, which the writer meets in tensors of Q8_0's 34-byte blocks.
    template <class D> void checkChanges() {
        const std::vector<std::byte> bytes = sampleBytes(203);
        const std::uint64_t original = digestOf<D>(bytes);
        for (std::size_t i = 0; i < bytes.size(); ++i) {
            std::vector<std::byte> changed = bytes;
            changed[i] ^= std::byte{0x01};
            QVERIFY2(digestOf<D>(changed) != original, qPrintable(QStringLiteral("byte %1").arg(i)));
        }
        // Words next to each other (in other lanes) and four apart (in one lane) swapped.
        for (const std::size_t apart : {1u, 4u}) {
            for (std::size_t word = 0; word + apart < bytes.size() / 8; ++word) {
                std::vector<std::byte> swapped = bytes;
                std::swap_ranges(swapped.begin() + 8 * word, swapped.begin() + 8 * word + 8,
                                 swapped.begin() + 8 * (word + apart));
                QVERIFY2(digestOf<D>(swapped) != original,
                         qPrintable(QStringLiteral("words %1 and %2").arg(word).arg(word + apart)));
            }
        }
        std::vector<std::byte> longer = bytes;
        longer.push_back(std::byte{0});
        QVERIFY(digestOf<D>(longer) != original);
        QVERIFY(digestOf<D>(std::vector<std::byte>(8)) != digestOf<D>(std::vector<std::byte>{}));
        QVERIFY(digestOf<D>(std::vector<std::byte>(32)) != digestOf<D>(std::vector<std::byte>(40)));
    }
};

QTEST_APPLESS_MAIN(TestWriter)
#include "tst_writer.moc"
