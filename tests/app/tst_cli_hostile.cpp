// The organ command line against hostile input, run as a user (or an attacker) runs it: a file
// whose names and values carry control characters and invalid UTF-8 through every
// subcommand; outputs that would destroy inputs or special files; FIFOs as inputs; and a
// chimera's assembly killed at several points.
#include "fixtures.h"
#include "gguf/gguf_writer.h"
#include "hostile_models.h"

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <cstring>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

using namespace organ;
using namespace organ::testing;

namespace {

struct Run {
    int exitCode = -1; // -2: crashed; -3: did not finish in time
    QByteArray out;
    QByteArray err;
};

Run runOrgan(const QStringList& args, const QString& folder = QString(), int timeoutMs = 60000) {
    QProcess process;
    if (!folder.isEmpty()) {
        process.setWorkingDirectory(folder);
    }
    process.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")), args);
    Run run;
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished();
        run.exitCode = -3;
        return run;
    }
    run.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -2;
    run.out = process.readAllStandardOutput();
    run.err = process.readAllStandardError();
    return run;
}

// What reaches a terminal: valid UTF-8, and no control byte but the line ends.
QString unsafeBytes(const QByteArray& text) {
    if (QString::fromUtf8(text).toUtf8() != text) {
        return QStringLiteral("invalid UTF-8");
    }
    for (char c : text) {
        const auto b = static_cast<unsigned char>(c);
        if ((b < 0x20 && b != '\n') || b == 0x7f) {
            return QStringLiteral("control byte 0x%1").arg(b, 2, 16, QLatin1Char('0'));
        }
    }
    return {};
}

QByteArray digestOf(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256)
                                       : QByteArray();
}

// A llama-shaped model of about 60 MiB: long enough to write that a kill lands mid-way.
GgufWriteSpec largeModel(std::uint8_t seed) {
    GgufWriteSpec spec = hostileModelSpec(seed);
    spec.set("general.name", MetaValue::fromString("large"));
    spec.set("llama.embedding_length", MetaValue::fromU32(256));
    spec.set("llama.feed_forward_length", MetaValue::fromU32(16384));
    spec.tensors.clear();
    spec.tensors.push_back(patternTensor("token_embd.weight", TensorType::F32, {256, 8}, seed));
    spec.tensors.push_back(patternTensor("blk.0.attn_norm.weight", TensorType::F32, {256}, seed));
    for (const char* name :
         {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_output.weight"}) {
        spec.tensors.push_back(patternTensor(name, TensorType::F32, {256, 256}, seed));
    }
    spec.tensors.push_back(patternTensor("blk.0.ffn_norm.weight", TensorType::F32, {256}, seed));
    spec.tensors.push_back(patternTensor("blk.0.ffn_gate.weight", TensorType::F32, {256, 16384}, seed + 1));
    spec.tensors.push_back(patternTensor("blk.0.ffn_up.weight", TensorType::F32, {256, 16384}, seed + 2));
    spec.tensors.push_back(patternTensor("blk.0.ffn_down.weight", TensorType::F32, {16384, 256}, seed + 3));
    spec.tensors.push_back(patternTensor("output_norm.weight", TensorType::F32, {256}, seed));
    return spec;
}

} // namespace

class TestCliHostile : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_a;
    QString m_b;

    QString path(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() {
        QVERIFY2(!qgetenv("ORGAN_CLI").isEmpty(), "ORGAN_CLI is not set");
        qputenv("ORGAN_CACHE_DIR", m_dir.filePath(QStringLiteral("cache")).toLocal8Bit());
        m_a = path(QStringLiteral("hostile-a.gguf"));
        m_b = path(QStringLiteral("hostile-b.gguf"));
        QVERIFY(writeFixture(m_a, hostileModelSpec(1, false)));
        QVERIFY(writeFixture(m_b, hostileModelSpec(2, false)));
        QVERIFY(writeFixture(path(QStringLiteral("hostile-tensor.gguf")), hostileModelSpec(3)));
    }

    // Every subcommand on files whose names and values carry escape sequences, control
    // characters and invalid UTF-8: no crash, nothing raw on the terminal, every written
    // report readable (JSON parses, no raw control bytes in CSV and Markdown).
    void everySubcommandOnAHostileFile_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        const QString a = path(QStringLiteral("hostile-a.gguf"));
        const QString b = path(QStringLiteral("hostile-b.gguf"));
        const QString t = path(QStringLiteral("hostile-tensor.gguf")); // also a tensor named in escapes
        const QString plan = path(QStringLiteral("hostile-plan.json"));
        QTest::newRow("inspect") << QStringList{QStringLiteral("inspect"), t} << 0;
        QTest::newRow("inspect --tensors --metadata")
            << QStringList{QStringLiteral("inspect"), t, QStringLiteral("--tensors"),
                           QStringLiteral("--metadata")}
            << 0;
        QTest::newRow("inspect --json")
            << QStringList{QStringLiteral("inspect"), a, t, QStringLiteral("--json")} << 0;
        QTest::newRow("measure") << QStringList{QStringLiteral("measure"), t} << 0;
        QTest::newRow("measure from the cache") << QStringList{QStringLiteral("measure"), t} << 0;
        QTest::newRow("measure reports") << QStringList{QStringLiteral("measure"),
                                                        a,
                                                        t,
                                                        QStringLiteral("--json"),
                                                        path(QStringLiteral("h.json")),
                                                        QStringLiteral("--csv"),
                                                        path(QStringLiteral("h.csv")),
                                                        QStringLiteral("--markdown"),
                                                        path(QStringLiteral("h.md"))}
                                         << 0;
        QTest::newRow("graft") << QStringList{QStringLiteral("graft"),
                                              QStringLiteral("--base"),
                                              a,
                                              QStringLiteral("--donor"),
                                              b,
                                              QStringLiteral("--system"),
                                              QStringLiteral("organ"),
                                              QStringLiteral("-o"),
                                              path(QStringLiteral("h-chimera.gguf")),
                                              QStringLiteral("--save-plan"),
                                              plan}
                               << 0; // written; validation warns of the unknown (hostile) tensor
        QTest::newRow("graft a tensor named in escapes")
            << QStringList{QStringLiteral("graft"),
                           QStringLiteral("--base"),
                           a,
                           QStringLiteral("--donor"),
                           b,
                           QStringLiteral("--tensor"),
                           QString::fromUtf8("\x1b[2Jnothing\x07"),
                           QStringLiteral("-o"),
                           path(QStringLiteral("h-none.gguf"))}
            << 1;
        QTest::newRow("plan check") << QStringList{QStringLiteral("plan"), QStringLiteral("check"), plan}
                                    << 0;
        QTest::newRow("assemble") << QStringList{QStringLiteral("assemble"), QStringLiteral("--plan"), plan,
                                                 QStringLiteral("-o"),
                                                 path(QStringLiteral("h-assembled.gguf"))}
                                  << 0;
        QTest::newRow("validate") << QStringList{QStringLiteral("validate"), a,
                                                 path(QStringLiteral("h-chimera.gguf"))}
                                  << 0;
        QTest::newRow("validate a tensor llama.cpp does not load")
            << QStringList{QStringLiteral("validate"), t} << 1;
        QTest::newRow("unknown command") << QStringList{QString::fromUtf8("\x1b]0;owned\x07")} << 2;
    }
    void everySubcommandOnAHostileFile() {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        const Run run = runOrgan(args);
        QCOMPARE(run.exitCode, exitCode);
        QVERIFY2(unsafeBytes(run.out).isEmpty(), qPrintable(unsafeBytes(run.out)));
        QVERIFY2(unsafeBytes(run.err).isEmpty(), qPrintable(unsafeBytes(run.err)));
        const QByteArray all = run.out + run.err;
        if (args.front() == QStringLiteral("inspect") && !args.contains(QStringLiteral("--json"))) {
            QVERIFY2(all.contains("l\\xFF\\xFEa\\x1B]0;owned\\x07\\x1B[2J"), all.constData());
        }
        if (args.contains(QStringLiteral("--metadata"))) {
            QVERIFY(all.contains("evil.key\\x1B[31m\\x9B"));
            QVERIFY(all.contains("bad \\xC3( value\\x0Awith a newline\\x1B[H"));
        }
        if (args.contains(QStringLiteral("--json"))) {
            QJsonParseError error;
            QJsonDocument::fromJson(
                args.front() == QStringLiteral("inspect") ? run.out : readAll(path(QStringLiteral("h.json"))),
                &error);
            QCOMPARE(error.error, QJsonParseError::NoError);
        }
        if (args.contains(QStringLiteral("--csv"))) {
            QVERIFY(unsafeBytes(readAll(path(QStringLiteral("h.csv")))).isEmpty());
            QVERIFY(unsafeBytes(readAll(path(QStringLiteral("h.md")))).isEmpty());
            QVERIFY(readAll(path(QStringLiteral("h.md"))).contains("l\\\\xFF\\\\xFEa"));
        }
        if (args.front() == QStringLiteral("validate") && args.size() == 2) {
            QVERIFY2(all.contains("evil\\x1B[2J\\xFF.weight"), all.constData());
        }
        if (args.front() == QStringLiteral("measure") && args.size() == 2) {
            QVERIFY(all.contains("l\\xFF\\xFEa"));
            QCOMPARE(QDir(path(QStringLiteral("cache"))).entryList({QStringLiteral("*.partial*")}).size(), 0);
        }
    }

    // --save-plan can never destroy an input, lands only in a folder that exists, and its
    // paths open from anywhere.
    void savePlanSafely() {
        const QByteArray a = digestOf(m_a);
        const QByteArray b = digestOf(m_b);
        const QString out = path(QStringLiteral("sp.gguf"));
        auto graft = [&](const QString& save, const QString& folder = QString()) {
            return runOrgan({QStringLiteral("graft"), QStringLiteral("--base"), m_a,
                             QStringLiteral("--donor"), m_b, QStringLiteral("--system"),
                             QStringLiteral("organ"), QStringLiteral("-o"), out,
                             QStringLiteral("--save-plan"), save},
                            folder);
        };
        for (const QString& input : {m_a, m_b}) {
            const Run run = graft(input);
            QCOMPARE(run.exitCode, 1);
            QVERIFY2(run.err.contains("refusing to write over a file that is also an input"),
                     run.err.constData());
        }
        QCOMPARE(digestOf(m_a), a);
        QCOMPARE(digestOf(m_b), b);
        QVERIFY(!QFileInfo::exists(out));
        const Run missing = graft(path(QStringLiteral("no/such/folder/p.json")));
        QCOMPARE(missing.exitCode, 1);
        QVERIFY(missing.err.contains("does not exist"));
        const Run folder = graft(m_dir.path() + QStringLiteral("/"));
        QCOMPARE(folder.exitCode, 1);
        const Run same = graft(out);
        QCOMPARE(same.exitCode, 2);
        QVERIFY(same.err.contains("name the same file"));
        // A plan saved in a sub-folder, by relative paths, checks from any other folder.
        QVERIFY(QDir(m_dir.path()).mkpath(QStringLiteral("sub")));
        QVERIFY(QDir(m_dir.path()).mkpath(QStringLiteral("elsewhere")));
        const Run saved =
            runOrgan({QStringLiteral("graft"), QStringLiteral("--base"), QStringLiteral("hostile-a.gguf"),
                      QStringLiteral("--donor"), QStringLiteral("hostile-b.gguf"), QStringLiteral("--system"),
                      QStringLiteral("organ"), QStringLiteral("-o"), QStringLiteral("sub/c.gguf"),
                      QStringLiteral("--save-plan"), QStringLiteral("sub/p.json")},
                     m_dir.path());
        QCOMPARE(saved.exitCode, 0);
        const Run check =
            runOrgan({QStringLiteral("plan"), QStringLiteral("check"), QStringLiteral("../sub/p.json")},
                     path(QStringLiteral("elsewhere")));
        QVERIFY2(check.exitCode == 0, check.err.constData());
        QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("*.partial*")}).size(), 0);
    }

    // Special files: a device is never an output; a FIFO as a plan's model or in the cache
    // never blocks.
    void specialFiles() {
        const Run devnull =
            runOrgan({QStringLiteral("graft"), QStringLiteral("--base"), m_a, QStringLiteral("--donor"), m_b,
                      QStringLiteral("--system"), QStringLiteral("organ"), QStringLiteral("-o"),
                      QStringLiteral("/dev/null")});
        QCOMPARE(devnull.exitCode, 1);
        QVERIFY2(devnull.err.contains(
                     "/dev/null: is a character device, not a regular file; refusing to write over it"),
                 devnull.err.constData());
        struct stat st {};
        QVERIFY(::stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
        const Run report =
            runOrgan({QStringLiteral("measure"), m_a, QStringLiteral("--json"), QStringLiteral("/dev/null")});
        QCOMPARE(report.exitCode, 1);
        // Its standard output (a pipe here) is named by its whole path too, not as "stdout".
        const Run toStdout = runOrgan(
            {QStringLiteral("measure"), m_a, QStringLiteral("--json"), QStringLiteral("/dev/stdout")});
        QCOMPARE(toStdout.exitCode, 1);
        QVERIFY2(
            toStdout.err.contains("organ measure: /dev/stdout: is a FIFO (named pipe), not a regular file; "
                                  "refusing to write over it"),
            toStdout.err.constData());
        const QString fifo = path(QStringLiteral("fifo.gguf"));
        QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0644), 0);
        const QString plan = path(QStringLiteral("fifo-plan.json"));
        QVERIFY(
            writeAll(plan, QStringLiteral(R"({"format":"organ-graft-plan","version":1,"base":"fifo.gguf",)"
                                          R"("donors":{},"operations":[{"op":"duplicate_layer","layer":0}]})")
                               .toUtf8()));
        QElapsedTimer timer;
        timer.start();
        for (const QStringList& args :
             {QStringList{QStringLiteral("plan"), QStringLiteral("check"), plan},
              QStringList{QStringLiteral("assemble"), QStringLiteral("--plan"), plan, QStringLiteral("-o"),
                          path(QStringLiteral("f.gguf"))},
              QStringList{QStringLiteral("inspect"), fifo},
              QStringList{QStringLiteral("plan"), QStringLiteral("check"), fifo}}) {
            const Run run = runOrgan(args, QString(), 10000);
            QCOMPARE(run.exitCode, 1);
            QVERIFY2(run.err.contains("is a FIFO (named pipe), not a regular file"), run.err.constData());
        }
        QVERIFY(timer.elapsed() < 10000);
        // A device is named by its whole path ("zero" alone says nothing); a folder says what it lacks.
        const Run zero =
            runOrgan({QStringLiteral("merge"), QStringLiteral("--method"), QStringLiteral("linear"),
                      QStringLiteral("--base"), m_a, QStringLiteral("--model"), QStringLiteral("/dev/zero"),
                      QStringLiteral("-o"), path(QStringLiteral("zero.gguf"))});
        QCOMPARE(zero.exitCode, 1);
        QVERIFY2(zero.err.contains("organ merge: /dev/zero: is a character device, not a regular file\n"),
                 zero.err.constData());
        // A socket cannot be opened at all: it is said to be one.
        const QString socketPath = path(QStringLiteral("sock.gguf"));
        const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        const QByteArray socketName = socketPath.toLocal8Bit();
        QVERIFY(listener >= 0 && std::size_t(socketName.size()) < sizeof address.sun_path);
        std::memcpy(address.sun_path, socketName.constData(), std::size_t(socketName.size()));
        QCOMPARE(::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
        const Run socketRun = runOrgan({QStringLiteral("inspect"), socketPath});
        ::close(listener);
        QCOMPARE(socketRun.exitCode, 1);
        QVERIFY2(socketRun.err.contains("sock.gguf: is a socket, not a regular file"),
                 socketRun.err.constData());
        QVERIFY(QDir(m_dir.path()).mkdir(QStringLiteral("plain")));
        const Run folder = runOrgan({QStringLiteral("inspect"), path(QStringLiteral("plain"))});
        QCOMPARE(folder.exitCode, 1);
        QVERIFY2(folder.err.contains(
                     "plain: is a folder without manifest.json: neither a GGUF file nor an organ directory"),
                 folder.err.constData());
    }

    // A text to score that is not one (empty, a binary file, another encoding than UTF-8) is refused
    // by name before anything runs, by organ vitals and by organ merge --vitals alike.
    void textsThatAreNotTexts() {
        QVERIFY(writeAll(path(QStringLiteral("empty.txt")), QByteArray()));
        QVERIFY(writeAll(path(QStringLiteral("nul.txt")), QByteArray("a story\0 more", 14)));
        QVERIFY(writeAll(path(QStringLiteral("latin1.txt")), QByteArray("caf\xe9 au lait\n")));
        const std::pair<QString, QByteArray> cases[] = {
            {path(QStringLiteral("empty.txt")), "empty.txt: the text is empty"},
            {path(QStringLiteral("nul.txt")),
             "nul.txt: a NUL byte at byte 7: a binary file, not a text to score"},
            {path(QStringLiteral("latin1.txt")),
             "latin1.txt: not UTF-8 text (another encoding, or not a text): convert it to UTF-8 to score it"},
            {m_a, "hostile-a.gguf: a NUL byte at byte "},
            {QString(), "(an empty path): cannot open"},
        };
        for (const auto& [text, says] : cases) {
            const Run vitals = runOrgan({QStringLiteral("vitals"), m_a, QStringLiteral("--text"), text});
            QCOMPARE(vitals.exitCode, 1);
            QVERIFY2(vitals.err.contains(QByteArray(QByteArray("organ vitals: ") + says)),
                     vitals.err.constData());
            const QString out = path(QStringLiteral("scored.gguf"));
            const Run merge =
                runOrgan({QStringLiteral("merge"), QStringLiteral("--method"), QStringLiteral("linear"),
                          QStringLiteral("--model"), m_a, QStringLiteral("--model"), m_b,
                          QStringLiteral("--vitals"), text, QStringLiteral("-o"), out});
            QCOMPARE(merge.exitCode, 1);
            QVERIFY2(merge.err.contains(QByteArray(QByteArray("organ merge: ") + says)),
                     merge.err.constData());
            QVERIFY(!QFileInfo::exists(out));
        }
    }

    // A chimera's assembly killed at several points: afterwards the output is absent or exactly
    // a clean run's, the inputs are unchanged, and the next run succeeds (and removes what the
    // killed runs left, saying so).
    void killedAssembly() {
        const QString base = path(QStringLiteral("large-base.gguf"));
        const QString donor = path(QStringLiteral("large-donor.gguf"));
        QVERIFY(writeFixture(base, largeModel(1)));
        QVERIFY(writeFixture(donor, largeModel(2)));
        const QString plan = path(QStringLiteral("large-plan.json"));
        const QString out = path(QStringLiteral("large-chimera.gguf"));
        const Run save =
            runOrgan({QStringLiteral("graft"), QStringLiteral("--base"), base, QStringLiteral("--donor"),
                      donor, QStringLiteral("--system"), QStringLiteral("organ"), QStringLiteral("-o"), out,
                      QStringLiteral("--save-plan"), plan});
        QVERIFY2(save.exitCode == 0, save.err.constData());
        QVERIFY(QFileInfo::exists(out));
        const QByteArray clean = digestOf(out);
        const QByteArray inputs = digestOf(base) + digestOf(donor) + digestOf(plan);
        int killedWhileWriting = 0;
        const int delays[] = {0, 320, 10, 220, 30, 150, 100, 60};
        for (std::size_t k = 0; k < std::size(delays); ++k) {
            if (k % 2 == 0) {
                QFile::remove(out); // half the runs start without the output, half over it
            }
            QProcess child;
            child.start(
                QString::fromLocal8Bit(qgetenv("ORGAN_CLI")),
                {QStringLiteral("assemble"), QStringLiteral("--plan"), plan, QStringLiteral("-o"), out});
            QVERIFY(child.waitForStarted());
            QThread::msleep(static_cast<unsigned long>(delays[k]));
            killedWhileWriting +=
                !QDir(m_dir.path()).entryList({QStringLiteral("large-chimera.gguf.partial*")}).isEmpty();
            child.kill();
            child.waitForFinished();
            QVERIFY2(!QFileInfo::exists(out) || digestOf(out) == clean,
                     qPrintable(QStringLiteral("kill %1").arg(k)));
            QCOMPARE(digestOf(base) + digestOf(donor) + digestOf(plan), inputs);
        }
        qInfo("killed %d of %zu runs while their partial file existed", killedWhileWriting,
              std::size(delays));
        QVERIFY(killedWhileWriting > 0);
        // Each run removes what killed runs before it left; whatever the last one left, the
        // next run removes and names.
        const bool leftover =
            !QDir(m_dir.path()).entryList({QStringLiteral("large-chimera.gguf.partial*")}).isEmpty();
        const Run next =
            runOrgan({QStringLiteral("assemble"), QStringLiteral("--plan"), plan, QStringLiteral("-o"), out});
        QVERIFY2(next.exitCode == 0, next.err.constData());
        QCOMPARE(digestOf(out), clean);
        QCOMPARE(next.err.contains("removed a partial file left by an earlier run"), leftover);
        QCOMPARE(QDir(m_dir.path()).entryList({QStringLiteral("large-chimera.gguf.partial*")}).size(), 0);
    }
};

QTEST_GUILESS_MAIN(TestCliHostile)
#include "tst_cli_hostile.moc"
