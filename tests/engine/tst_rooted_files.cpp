// Paths followed beneath a folder's descriptor (support/rooted_files.h) and the writers that
// create files through descriptors (support/safe_files.h): links, "..", absolute paths and folders
// swapped under a writer never lead it elsewhere; a stop and a commit never both happen.
#include "fixtures.h"
#include "hostile_models.h"

#include "gguf/gguf_model.h"
#include "gguf/gguf_writer.h"
#include "organs/organ_directory.h"
#include "support/errors.h"
#include "support/job.h"
#include "support/mapped_file.h"
#include "support/rooted_files.h"
#include "support/safe_files.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>
#include <cerrno>
#include <fcntl.h>
#include <functional>
#include <sys/stat.h>
#include <unistd.h>

using namespace organ;
using namespace organ::testing;

namespace {

using Opener = std::function<int(int, const std::string&, int, mode_t)>;

} // namespace

Q_DECLARE_METATYPE(Opener)

class TestRootedFiles : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_root;

    std::string at(const char* name) const { return m_root.toStdString() + "/" + name; }

private slots:
    void initTestCase() {
        // root/ holds file, sub/inner, a link to a file inside, a link to a folder inside, and
        // links to a file and a folder outside.
        m_root = m_dir.filePath(QStringLiteral("root"));
        QVERIFY(QDir().mkpath(m_root + QStringLiteral("/sub")));
        QVERIFY(writeAll(m_root + QStringLiteral("/file"), "inside"));
        QVERIFY(writeAll(m_root + QStringLiteral("/sub/inner"), "inner"));
        QVERIFY(writeAll(m_dir.filePath(QStringLiteral("secret")), "outside"));
        QVERIFY(QFile::link(m_root + QStringLiteral("/file"), m_root + QStringLiteral("/link-in")));
        QVERIFY(QFile::link(m_root + QStringLiteral("/sub"), m_root + QStringLiteral("/sub-link")));
        QVERIFY(QFile::link(m_dir.filePath(QStringLiteral("secret")), m_root + QStringLiteral("/link-out")));
        QVERIFY(QFile::link(m_dir.path(), m_root + QStringLiteral("/up")));
    }

    // openat2 and the walk kernels without it take say the same of every path.
    void opensOnlyBeneath_data() {
        QTest::addColumn<Opener>("open");
        QTest::addColumn<QString>("path");
        QTest::addColumn<int>("error"); // 0: opens
        const Opener kernel = [](int folder, const std::string& path, int flags, mode_t mode) {
            return openBeneath(folder, path, flags, mode);
        };
        const Opener walk = [](int folder, const std::string& path, int flags, mode_t mode) {
            return walkBeneath(folder, path, flags, mode);
        };
        for (const auto& [name, open] : {std::pair{"openat2", kernel}, std::pair{"walk", walk}}) {
            auto row = [&](const char* what, const char* path, int error) {
                QTest::addRow("%s: %s", name, what) << open << QString::fromLatin1(path) << error;
            };
            row("a file", "file", 0);
            row("in a folder", "sub/inner", 0);
            row("the folder itself", ".", 0);
            row("dots inside", "sub/./../sub/inner", 0);
            row("absent", "none", ENOENT);
            row("through a file", "file/x", ENOTDIR);
            row("a link to a file inside", "link-in", ELOOP);
            row("through a link to a folder inside", "sub-link/inner", ELOOP);
            row("a link to a file outside", "link-out", ELOOP);
            row("through a link to a folder outside", "up/secret", ELOOP);
            row("up and out", "../secret", EXDEV);
            row("down, up and out", "sub/../../secret", EXDEV);
            row("absolute", "/etc/passwd", EXDEV);
        }
    }
    void opensOnlyBeneath() {
        QFETCH(Opener, open);
        QFETCH(QString, path);
        QFETCH(int, error);
        const UniqueFd root(::open(m_root.toUtf8().constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        errno = 0;
        const UniqueFd fd(open(root.get(), path.toStdString(), O_RDONLY, 0));
        QCOMPARE(fd.valid() ? 0 : errno, error);
        // A new name is created beneath as well, never through a link.
        const UniqueFd made(open(root.get(), "sub/new", O_WRONLY | O_CREAT | O_EXCL, 0644));
        QVERIFY(made.valid());
        QCOMPARE(::unlink((m_root + QStringLiteral("/sub/new")).toUtf8().constData()), 0);
        errno = 0;
        QVERIFY(!UniqueFd(open(root.get(), "link-out", O_WRONLY | O_CREAT | O_EXCL, 0644)).valid());
        QCOMPARE(errno, EEXIST);
        QCOMPARE(readAll(m_dir.filePath(QStringLiteral("secret"))), QByteArray("outside"));
    }

    // Absolute paths are taken beneath the root when they name something inside it; messages say
    // why a path was refused.
    void rootedPaths() {
        const auto root = FileRoot::open(m_root.toStdString());
        QCOMPARE(root->beneath(at("sub/inner")).value_or("?"), std::string("sub/inner"));
        QCOMPARE(root->beneath(m_root.toStdString()).value_or("?"), std::string("."));
        QCOMPARE(root->beneath(at("sub/../file")).value_or("?"), std::string("file"));
        QVERIFY(!root->beneath(m_dir.filePath(QStringLiteral("secret")).toStdString()));
        QVERIFY(!root->beneath(m_root.toStdString() + "-twin/file"));
        QCOMPARE(readSmallFile(RootedPath(root, at("sub/inner")), 100), std::string("inner"));
        auto refusal = [&](const std::string& path) {
            try {
                readSmallFile(RootedPath(root, path), 100);
            } catch (const IoError& error) {
                return std::string(error.what());
            }
            return std::string();
        };
        QVERIFY2(refusal("link-out").find("link-out: cannot open: it leads through a symbolic link") == 0,
                 refusal("link-out").c_str());
        QVERIFY2(refusal(m_dir.filePath(QStringLiteral("secret")).toStdString()).find("it lies outside") !=
                     std::string::npos,
                 refusal("/x").c_str());
        // Without a root a path is followed as the user typed it, links included.
        QCOMPARE(readSmallFile(at("link-in"), 100), std::string("inside"));
    }

    // A writer opens its folder once: renamed away meanwhile, the file lands in it, not at the
    // name; beneath a root a name that appeared meanwhile is never replaced.
    void writersHoldTheirFolder() {
        const auto root = FileRoot::open(m_root.toStdString());
        QVERIFY(QDir().mkpath(m_root + QStringLiteral("/w")));
        {
            SafeOutput out(RootedPath(root, "w/a.txt"));
            out.write(std::string_view("first"));
            QVERIFY(QDir().rename(m_root + QStringLiteral("/w"), m_root + QStringLiteral("/w-moved")));
            QVERIFY(QDir().mkpath(m_root + QStringLiteral("/w")));
            out.commit();
        }
        QCOMPARE(readAll(m_root + QStringLiteral("/w-moved/a.txt")), QByteArray("first"));
        QVERIFY(!QFileInfo::exists(m_root + QStringLiteral("/w/a.txt")));
        {
            SafeOutput out(RootedPath(root, "w/b.txt"));
            out.write(std::string_view("second"));
            QVERIFY(writeAll(m_root + QStringLiteral("/w/b.txt"), "someone else's"));
            QVERIFY_THROWS_EXCEPTION(IoError, out.commit());
        }
        QCOMPARE(readAll(m_root + QStringLiteral("/w/b.txt")), QByteArray("someone else's"));
        // Without a root, the command line's writers replace a file, as they always have.
        writeFileSafely(at("w/b.txt"), "replaced");
        QCOMPARE(readAll(m_root + QStringLiteral("/w/b.txt")), QByteArray("replaced"));
        // A folder written whole, or not at all: refused over a name, removed when dropped.
        QVERIFY_THROWS_EXCEPTION(IoError, SafeFolderOutput(RootedPath(root, "w")));
        {
            SafeFolderOutput folder(RootedPath(root, "w/dropped"));
            QVERIFY(folder.create("deep/er/file.bin").valid());
        }
        const QStringList left =
            QDir(m_root + QStringLiteral("/w")).entryList(QDir::AllEntries | QDir::NoDotAndDotDot);
        QCOMPARE(left, QStringList{QStringLiteral("b.txt")});
    }

    // A hard link is made by name; when the name leads to another file than the one opened, the
    // link is not kept (the caller copies the bytes it has instead).
    void linksOnlyTheFileOpened() {
        const QString source = m_root + QStringLiteral("/linked.bin");
        QVERIFY(writeAll(source, "the bytes opened"));
        const auto opened = MappedFile::open(source.toStdString());
        struct stat st {};
        {
            SafeFolderOutput folder(at("links-kept"));
            QVERIFY(folder.link(*opened, "organs/a.bin"));
            folder.commit();
        }
        QCOMPARE(::stat(at("links-kept/organs/a.bin").c_str(), &st), 0);
        QCOMPARE(std::uint64_t(st.st_ino), opened->identity().inode);
        QVERIFY(QFile::remove(source));
        QVERIFY(writeAll(source, "another file under that name"));
        const QString made = m_root + QStringLiteral("/links-refused/organs/a.bin");
        bool linked = false;
        {
            SafeFolderOutput folder(at("links-refused"));
            linked = folder.link(*opened, "organs/a.bin");
            folder.commit();
        }
        // Nothing (the caller copies the bytes), or a reflink of the file opened: never the other.
        QCOMPARE(QFileInfo::exists(made) ? readAll(made) : QByteArray("nothing"),
                 linked ? QByteArray("the bytes opened") : QByteArray("nothing"));
    }

    // Models beneath a root: a split part or an organ file reached through a link is refused.
    void modelsBeneathARoot() {
        const auto root = FileRoot::open(m_root.toStdString());
        const QString model = m_root + QStringLiteral("/model.gguf");
        QVERIFY(writeFixture(model, perLayerLlama(1)));
        QVERIFY(GgufModel::open(RootedPath(root, "model.gguf")) != nullptr);
        const QStringList parts = writeSplitFixture(model, m_root + QStringLiteral("/split"), 2);
        QVERIFY(GgufModel::open(RootedPath(root, "split-00001-of-00002.gguf")) != nullptr);
        QVERIFY(QFile::rename(parts[1], m_dir.filePath(QStringLiteral("part2.gguf"))));
        QVERIFY(QFile::link(m_dir.filePath(QStringLiteral("part2.gguf")), parts[1]));
        QVERIFY_THROWS_EXCEPTION(IoError, GgufModel::open(RootedPath(root, "split-00001-of-00002.gguf")));
        QVERIFY(GgufModel::open(parts[0].toStdString()) != nullptr); // the user's own paths: links followed
        const JobResult extracted =
            extractOrgans(*GgufModel::open(model.toStdString()), RootedPath(root, "organs"));
        QVERIFY2(extracted.isOk(), extracted.message.c_str());
        QVERIFY(openModel(RootedPath(root, "organs")) != nullptr);
        // A folder of the directory swapped for a link to a copy of itself outside.
        const QString inner =
            QDir(m_root + QStringLiteral("/organs")).entryList(QDir::Dirs | QDir::NoDotAndDotDot).value(0);
        QVERIFY(!inner.isEmpty());
        const QString folder = m_root + QStringLiteral("/organs/") + inner;
        QVERIFY(QDir().rename(folder, m_dir.filePath(QStringLiteral("moved"))));
        QVERIFY(QFile::link(m_dir.filePath(QStringLiteral("moved")), folder));
        QVERIFY_THROWS_EXCEPTION(FormatError, OrganDirectory::open(RootedPath(root, "organs")));
    }

    // A stop and a commit: whichever comes first wins, and the other is refused.
    void stopOrCommit() {
        StopToken stopped;
        QVERIFY(stopped.requestStop());
        QVERIFY(stopped.requestStop());
        QVERIFY(!stopped.beginCommit());
        QVERIFY(stopped.stopRequested());
        StopToken committed;
        QVERIFY(committed.beginCommit());
        QVERIFY(committed.beginCommit());
        QVERIFY(!committed.requestStop());
        QVERIFY(!committed.stopRequested());
        // A writer whose stop came first leaves nothing.
        StopToken stop;
        stop.requestStop();
        QCOMPARE(writeGguf(at("never.gguf"), hostileModelSpec(2), {}, &stop).status,
                 JobResult::Status::Cancelled);
        QVERIFY(!QFileInfo::exists(QString::fromStdString(at("never.gguf"))));
    }
};

QTEST_APPLESS_MAIN(TestRootedFiles)
#include "tst_rooted_files.moc"
