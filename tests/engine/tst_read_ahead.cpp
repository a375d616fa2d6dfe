// Reading ahead (ReadAhead): the steps in order, each step's spans a slice of each in turn, never
// past the window beyond the consumer's step, stopping when the reader fails or it is destroyed;
// the default reader brings a file's pages into the page cache.
#include "page_cache.h"
#include "support/read_ahead.h"

#include <QTemporaryDir>
#include <QTest>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

using namespace organ;
using namespace organ::testing;

namespace {

constexpr std::uint64_t kMiB = 1u << 20;

struct Read {
    std::string file;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    friend bool operator==(const Read&, const Read&) = default;
};

// A reader that records what it is asked for (on the read-ahead thread).
struct Recorder {
    std::mutex mutex;
    std::vector<Read> reads;
    ReadAhead::Reader reader(int failAt = -1) {
        return [this, failAt](const MappedFile& file, int, std::uint64_t offset, std::uint64_t length) {
            std::lock_guard lock(mutex);
            if (static_cast<int>(reads.size()) == failAt) {
                return false;
            }
            reads.push_back({file.path(), offset, length});
            return true;
        };
    }
    std::vector<Read> taken() {
        std::lock_guard lock(mutex);
        return reads;
    }
};

std::shared_ptr<const MappedFile> fileOf(const QTemporaryDir& dir, const char* name, std::uint64_t bytes) {
    const std::string path = dir.filePath(QString::fromLatin1(name)).toStdString();
    std::vector<char> data(static_cast<std::size_t>(bytes), 'x');
    std::ofstream(path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
    return MappedFile::open(RootedPath(path));
}

// Steps of one 2 MiB span each, one after another in the file.
std::vector<std::vector<FileSpan>> twoMiBSteps(const std::shared_ptr<const MappedFile>& file, int count) {
    std::vector<std::vector<FileSpan>> steps;
    for (int i = 0; i < count; ++i) {
        steps.push_back({{file, static_cast<std::uint64_t>(i) * 2 * kMiB, 2 * kMiB}});
    }
    return steps;
}

} // namespace

class TestReadAhead : public QObject {
    Q_OBJECT

private slots:
    void readsNoFurtherThanTheWindowPastTheConsumer() {
        QTemporaryDir dir;
        const auto file = fileOf(dir, "a", 20 * kMiB);
        Recorder recorder;
        ReadAhead ahead(twoMiBSteps(file, 10), 3 * kMiB, recorder.reader());
        // The consumer at 0: step 0 ends at 2 MiB, within 3; step 1 would end at 4.
        QCOMPARE(ahead.settle(), 2 * kMiB);
        ahead.reached(0, kMiB);
        QCOMPARE(ahead.settle(), 4 * kMiB);
        QCOMPARE(recorder.taken(),
                 (std::vector<Read>{{file->path(), 0, 2 * kMiB}, {file->path(), 2 * kMiB, 2 * kMiB}}));
        ahead.reached(1); // at 2 MiB: step 2 would end at 6, 4 past it
        QCOMPARE(ahead.settle(), 4 * kMiB);
        ahead.reached(1, kMiB);
        QCOMPARE(ahead.settle(), 6 * kMiB);
        // Going back changes nothing; going far ahead skips the steps the consumer is past.
        ahead.reached(0, 5 * kMiB);
        QCOMPARE(ahead.settle(), 6 * kMiB);
        ahead.reached(6); // at 12 MiB: step 6 (to 14) is read, step 7 (to 16) not
        QCOMPARE(ahead.settle(), 8 * kMiB);
        QCOMPARE(recorder.taken().back().offset, 12 * kMiB);
        ahead.reached(100); // past the last step: the last (steps 7 and 8 skipped)
        QCOMPARE(ahead.settle(), 10 * kMiB);
        QCOMPARE(recorder.taken().back().offset, 18 * kMiB);
        QCOMPARE(recorder.taken().size(), std::size_t{5});
    }

    // The window holds within a step too: a tensor's inputs larger than it are read as the
    // consumer goes through them.
    void theWindowHoldsWithinAStep() {
        QTemporaryDir dir;
        const auto file = fileOf(dir, "a", 10 * kMiB);
        Recorder recorder;
        ReadAhead ahead({{{file, 0, 10 * kMiB}}}, 4 * kMiB, recorder.reader());
        const std::uint64_t third = 10 * kMiB / 3; // slices of at most 4 MiB
        QCOMPARE(ahead.settle(), third);
        ahead.reached(0, 3 * kMiB);
        QCOMPARE(ahead.settle(), 2 * third);
        ahead.reached(0, 6 * kMiB);
        QCOMPARE(ahead.settle(), 10 * kMiB);
    }

    void aStepsSpansAreReadSideBySide() {
        QTemporaryDir dir;
        const auto a = fileOf(dir, "a", 10 * kMiB);
        const auto b = fileOf(dir, "b", 5 * kMiB);
        Recorder recorder;
        ReadAhead ahead({{{a, 0, 10 * kMiB}, {b, 1 * kMiB, 3 * kMiB}}}, 13 * kMiB, recorder.reader());
        QCOMPARE(ahead.settle(), 13 * kMiB);
        // 10 MiB in slices of at most 4 MiB: three of each span, in turn.
        const std::uint64_t third = 10 * kMiB / 3;
        QCOMPARE(recorder.taken(), (std::vector<Read>{{a->path(), 0, third},
                                                      {b->path(), 1 * kMiB, 1 * kMiB},
                                                      {a->path(), third, 2 * third - third},
                                                      {b->path(), 2 * kMiB, 1 * kMiB},
                                                      {a->path(), 2 * third, 10 * kMiB - 2 * third},
                                                      {b->path(), 3 * kMiB, 1 * kMiB}}));
    }

    void aFailedReadStopsIt() {
        QTemporaryDir dir;
        const auto file = fileOf(dir, "a", 20 * kMiB);
        Recorder recorder;
        ReadAhead ahead(twoMiBSteps(file, 10), 100 * kMiB, recorder.reader(2));
        QCOMPARE(ahead.settle(), 4 * kMiB);
        ahead.reached(5);
        QCOMPARE(ahead.settle(), 4 * kMiB);
        QCOMPARE(recorder.taken().size(), std::size_t{2});
    }

    void destroyingItStopsAThreadWaiting() {
        QTemporaryDir dir;
        const auto file = fileOf(dir, "a", 20 * kMiB);
        Recorder recorder;
        {
            ReadAhead ahead(twoMiBSteps(file, 10), kMiB, recorder.reader());
            QCOMPARE(ahead.settle(), std::uint64_t{0});
        }
        QVERIFY(recorder.taken().empty());
    }

    void aBufferIsNotRead() {
        const std::vector<std::byte> bytes(kMiB);
        const auto buffer = MappedFile::fromBuffer("buffer", bytes);
        QTemporaryDir dir;
        const auto file = fileOf(dir, "a", kMiB);
        Recorder recorder;
        // A buffer ends the reading ahead, as a failed read does: the file after it is not read.
        ReadAhead ahead({{{buffer, 0, kMiB}}, {{file, 0, kMiB}}}, 4 * kMiB, recorder.reader());
        QCOMPARE(ahead.settle(), std::uint64_t{0});
        QVERIFY(recorder.taken().empty());
    }

    // The default reader: a file's pages, evicted, are in the page cache once it has read them.
    void itBringsPagesIntoThePageCache() {
        const std::string folder = folderOnDisk();
        if (folder.empty()) {
            QSKIP(kNoFolderOnDisk);
        }
        QTemporaryDir dir(QString::fromStdString(folder) + QStringLiteral("/read-ahead-XXXXXX"));
        QVERIFY(dir.isValid());
        constexpr std::uint64_t kBytes = 16 * kMiB;
        const auto file = fileOf(dir, "a", kBytes);
        const std::string path = file->path();
        if (const auto problem = evictFromPageCache(path, kBytes)) {
            QFAIL(problem->c_str());
        }
        ReadAhead ahead({{{file, 0, kBytes}}}, kBytes);
        QCOMPARE(ahead.settle(), kBytes);
        QCOMPARE(residentPages(path, kBytes).value_or(0),
                 static_cast<std::size_t>(kBytes / ::sysconf(_SC_PAGESIZE)));
    }
};

QTEST_GUILESS_MAIN(TestReadAhead)
#include "tst_read_ahead.moc"
