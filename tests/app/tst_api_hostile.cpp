// organ serve against clients that race it: folders swapped for links while requests follow them,
// two jobs for one output, a cancel at the moment a job ends, and clients that hold connections
// by sending slowly. Each case runs for a bounded time and then checks what was left on disk and
// what was answered.
#include "api_client.h"
#include "fixtures.h"

#include "gguf/gguf_model.h"
#include "gguf/specimen.h"
#include "organs/organ_directory.h"

#include <QCryptographicHash>
#include <QDeadlineTimer>
#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <poll.h>
#include <sys/stat.h>
#include <thread>

using namespace organ;
using namespace organ::testing;

namespace {

// Every file under `folder` (links not followed) with its size, time of change and content digest.
std::map<QString, QByteArray> snapshot(const QString& folder) {
    std::map<QString, QByteArray> files;
    QDirIterator it(folder, QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden | QDir::System,
                    QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        struct stat st {};
        ::lstat(QFile::encodeName(path).constData(), &st);
        files[path] = QByteArray::number(qint64(st.st_size)) + " " +
                      QByteArray::number(qint64(st.st_mtim.tv_sec)) + "." +
                      QByteArray::number(qint64(st.st_mtim.tv_nsec)) + " " +
                      QCryptographicHash::hash(readAll(path), QCryptographicHash::Sha256).toHex();
    }
    return files;
}

// Names under `folder` that look like a writer's partial.
QStringList partialsUnder(const QString& folder) {
    QStringList found;
    QDirIterator it(folder, QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden,
                    QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        if (it.fileName().contains(QStringLiteral(".partial"))) {
            found << path;
        }
    }
    return found;
}

// A thread that stops and is joined when it goes, whatever the test returns with.
class Running {
public:
    template <typename F> explicit Running(F body) : m_thread([this, body] { body(m_stop); }) {}
    ~Running() { stop(); }
    void stop() {
        m_stop = true;
        if (m_thread.joinable()) {
            m_thread.join();
        }
    }

private:
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

// A job's state, "" when the answer is not a job (a refusal, no answer).
std::string stateOf(const nlohmann::json& job) {
    return job.is_object() ? job.value("state", "") : "";
}

nlohmann::json replacePlan(const std::string& model) {
    return {{"format", "organ-graft-plan"},
            {"version", 1},
            {"base", model},
            {"donors", {{"d", model}}},
            {"operations", {{{"op", "replace"}, {"donor", "d"}, {"layers", "0"}}}}};
}

} // namespace

class TestApiHostile : public ServedRootTest {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY2(!qgetenv("ORGAN_CLI").isEmpty(), "ORGAN_CLI is not set");
        QVERIFY(makeRoot());
    }

    // root/race (a folder with x.gguf) and root/race_alt (a link to a folder outside with another
    // x.gguf) are swapped by renameat2(RENAME_EXCHANGE) on a thread of their own while requests
    // read race/x.gguf and jobs write into race/: no answer carries the outside model, nothing
    // outside changes, no partial is left, and a job reports done exactly when its output is whole.
    void symlinkSwapsNeverLeadOutside() {
        const QString race = inRoot(QStringLiteral("race"));
        const QString alternate = inRoot(QStringLiteral("race_alt"));
        const QString outside = m_dir.filePath(QStringLiteral("outside"));
        QVERIFY(QDir().mkpath(race));
        QVERIFY(QDir().mkpath(outside));
        SpecimenShape small;
        small.blocks = 2;
        const QString insideModel = race + QStringLiteral("/x.gguf");
        const QString outsideModel = outside + QStringLiteral("/x.gguf");
        QVERIFY(writeSpecimen(insideModel.toStdString(), 1, small).isOk());
        QVERIFY(writeSpecimen(outsideModel.toStdString(), 7).isOk());
        QVERIFY(QFile::link(outside, alternate));
        const auto before = snapshot(outside);
        const std::size_t insideTensors = GgufModel::open(insideModel.toStdString())->tensors().size();

        Server server(m_root, {QStringLiteral("--max-jobs"), QStringLiteral("8")});
        QVERIFY(server.port() != 0);
        const quint16 port = server.port();
        const std::string inspect =
            "GET /v1/inspect?path=race/x.gguf HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        const std::string expected = roundTrip(port, inspect);
        QCOMPARE(statusOf(expected), 200);

        std::atomic<long> swaps{0};
        std::atomic<long> inspected{0};
        std::atomic<long> readInside{0};
        std::atomic<long> refused{0};
        std::atomic<long> escaped{0};
        struct Job {
            QString output;
            nlohmann::json started;
            nlohmann::json ended;
        };
        std::vector<Job> jobs;
        int rejected = 0;
        {
            const std::string from = race.toStdString();
            const std::string to = alternate.toStdString();
            Running swapper([&](const std::atomic<bool>& stop) {
                while (!stop) {
                    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) {
                        ++swaps;
                    }
                }
            });
            Running inspector([&](const std::atomic<bool>& stop) {
                while (!stop) {
                    const std::string answer = roundTrip(port, inspect);
                    ++inspected;
                    if (statusOf(answer) != 200) {
                        ++refused;
                    } else if (bodyOf(answer) == bodyOf(expected)) {
                        ++readInside;
                    } else {
                        ++escaped;
                    }
                }
            });
            // Jobs while the folders swap, each polled to its end before the swapping stops.
            std::vector<std::size_t> running;
            const QDeadlineTimer window(4000);
            const QDeadlineTimer giveUp(120000);
            for (int i = 0; (!window.hasExpired() || !running.empty()) && !giveUp.hasExpired(); ++i) {
                if (!window.hasExpired() && running.size() < 6) {
                    const QString gguf = QStringLiteral("race/a-%1.gguf").arg(i);
                    const QString organs = QStringLiteral("race/e-%1").arg(i);
                    const Answer a =
                        post(port, QStringLiteral("/v1/assemble"),
                             {{"plan", replacePlan("race/x.gguf")}, {"output", gguf.toStdString()}});
                    const Answer e = post(port, QStringLiteral("/v1/extract"),
                                          {{"path", "race/x.gguf"}, {"output", organs.toStdString()}});
                    for (const auto& [output, answer] : {std::pair{gguf, a}, std::pair{organs, e}}) {
                        if (answer.status == 202) {
                            jobs.push_back({output, answer.body, {}});
                            running.push_back(jobs.size() - 1);
                        } else {
                            QVERIFY2(answer.status == 403 || answer.status == 404 || answer.status == 422 ||
                                         answer.status == 429,
                                     answer.raw.constData());
                            ++rejected;
                        }
                    }
                }
                for (auto it = running.begin(); it != running.end();) {
                    const Answer polled = get(port, QString::fromStdString(jobs[*it].started["href"]));
                    const std::string state = stateOf(polled.body);
                    if (state != "queued" && state != "running" && state != "cancelling") {
                        jobs[*it].ended = polled.body;
                        it = running.erase(it);
                    } else {
                        ++it;
                    }
                }
            }
        }
        struct stat st {};
        if (::lstat(race.toUtf8().constData(), &st) == 0 && S_ISLNK(st.st_mode)) {
            QCOMPARE(::renameat2(AT_FDCWD, race.toUtf8().constData(), AT_FDCWD,
                                 alternate.toUtf8().constData(), RENAME_EXCHANGE),
                     0);
        }
        int done = 0;
        int failed = 0;
        QStringList problems; // every one at once: what the race did is easier to read whole
        for (const Job& job : jobs) {
            const QString output = inRoot(job.output);
            const bool organs = !job.output.endsWith(QStringLiteral(".gguf"));
            if (stateOf(job.ended) == "done") {
                ++done;
                std::size_t tensors = 0;
                try {
                    tensors = organs ? OrganDirectory::open(output.toStdString()).tensors().size()
                                     : GgufModel::open(output.toStdString())->tensors().size();
                } catch (const std::exception& error) {
                    problems << job.output + QStringLiteral(": done, but ") + QString::fromUtf8(error.what());
                }
                if (tensors != 0 && tensors != insideTensors) {
                    problems << job.output + QStringLiteral(": holds another model's tensors");
                }
            } else {
                ++failed;
                if (QFileInfo::exists(output)) {
                    problems << job.output + QStringLiteral(": reported ") +
                                    QString::fromStdString(job.ended.dump()) +
                                    QStringLiteral(", but written");
                }
            }
        }
        std::printf("race: %ld swaps; %ld inspects (%ld of the inside model, %ld refused, %ld of the outside "
                    "one); %zu jobs (%d done, %d failed), %d refused\n",
                    swaps.load(), inspected.load(), readInside.load(), refused.load(), escaped.load(),
                    jobs.size(), done, failed, rejected);
        if (escaped.load() != 0) {
            problems << QStringLiteral("%1 inspects answered with the model outside").arg(escaped.load());
        }
        if (readInside.load() == 0) {
            problems << QStringLiteral("no inspect read the model inside");
        }
        const auto after = snapshot(outside);
        for (const auto& [path, state] : after) {
            if (before.count(path) == 0 || before.at(path) != state) {
                problems << path + QStringLiteral(": written outside the root");
            }
        }
        problems << partialsUnder(m_root);
        if (!server.running()) {
            problems << QStringLiteral("the server died");
        }
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(u'\n')));
    }

    // Two jobs for one output: the second is refused while the first writes, and never do both
    // report a written file.
    void oneJobWritesAName() {
        QVERIFY(
            writeSpecimen(inRoot(QStringLiteral("models/slow.gguf")).toStdString(), 9, slowShape()).isOk());
        Server server(m_root, {QStringLiteral("--max-jobs"), QStringLiteral("4")});
        QVERIFY(server.port() != 0);
        for (int trial = 0; trial < 5; ++trial) {
            const std::string output = "out/same-" + std::to_string(trial) + ".gguf";
            const Answer purify = post(server.port(), QStringLiteral("/v1/purify"),
                                       {{"path", "models/slow.gguf"},
                                        {"output", output},
                                        {"method", "fft"},
                                        {"keep", 0.5},
                                        {"system", "organ"}});
            QCOMPARE(purify.status, 202);
            const Answer assemble = post(server.port(), QStringLiteral("/v1/assemble"),
                                         {{"plan", replacePlan("models/a.gguf")}, {"output", output}});
            const nlohmann::json first = waitForJob(server.port(), purify.body);
            const nlohmann::json second =
                assemble.status == 202 ? waitForJob(server.port(), assemble.body) : nlohmann::json();
            const bool bothWritten = stateOf(first) == "done" && stateOf(second) == "done";
            QVERIFY2(!bothWritten, (first.dump() + "\n" + second.dump()).c_str());
            QCOMPARE(assemble.status, 409);
            QVERIFY2(assemble.body["error"]["message"].get<std::string>().find("is writing that output") !=
                         std::string::npos,
                     assemble.raw.constData());
            QVERIFY2(stateOf(first) == "done", first.dump().c_str());
        }
        QFile::remove(inRoot(QStringLiteral("models/slow.gguf")));
    }

    // A cancel answered 202 means the job ends cancelled and leaves nothing; one that comes too
    // late is answered 409, and the job's output stands.
    void cancelAnsweredMeansCancelled() {
        Server server(m_root, {QStringLiteral("--max-jobs"), QStringLiteral("4")});
        QVERIFY(server.port() != 0);
        int cancelled = 0;
        int tooLate = 0;
        for (int trial = 0; trial < 80; ++trial) {
            const bool organs = trial % 2 == 0;
            const std::string output = "out/cancel-" + std::to_string(trial) + (organs ? "" : ".gguf");
            const Answer started = organs
                                       ? post(server.port(), QStringLiteral("/v1/extract"),
                                              {{"path", "models/a.gguf"}, {"output", output}})
                                       : post(server.port(), QStringLiteral("/v1/assemble"),
                                              {{"plan", replacePlan("models/a.gguf")}, {"output", output}});
            QCOMPARE(started.status, 202);
            const Answer cancel = request(server.port(), "DELETE",
                                          QString::fromStdString(started.body["href"].get<std::string>()));
            const nlohmann::json ended = waitForJob(server.port(), started.body);
            const bool exists = QFileInfo::exists(inRoot(QString::fromStdString(output)));
            if (cancel.status == 202) {
                ++cancelled;
                QVERIFY2(stateOf(ended) == "cancelled", (output + ": " + ended.dump()).c_str());
                QVERIFY2(!exists, output.c_str());
            } else {
                ++tooLate;
                QCOMPARE(cancel.status, 409);
                QVERIFY2(stateOf(ended) == "done", (output + ": " + ended.dump()).c_str());
                QVERIFY2(exists, output.c_str());
            }
        }
        std::printf("cancel at once: %d cancelled, %d too late\n", cancelled, tooLate);
        QVERIFY(partialsUnder(m_root).isEmpty());
    }

    // 256 connections from one address, each sending a byte of its headers every second, do not
    // keep another client out: at most 32 are let in, and each is answered 408 once its headers
    // are 10 s late, however steadily the bytes come; the others are answered 503 at once. A
    // client from another address is answered all along.
    void slowClientsCannotStarveOthers() {
        Server server(m_root);
        QVERIFY(server.port() != 0);
        const quint16 port = server.port();
        constexpr int kSlow = 256;
        std::vector<int> statuses(kSlow, 0);
        std::vector<int> probes;
        std::vector<double> probeMs; // each probe's round trip
        std::atomic<bool> connected{false};
        std::atomic<bool> attackOver{false};
        std::mutex mutex;
        std::condition_variable changed;
        {
            Running attacker([&](const std::atomic<bool>& stop) {
                std::vector<pollfd> fds;
                int open = 0;
                for (int i = 0; i < kSlow; ++i) {
                    fds.push_back({connectFrom("127.0.0.2", port), POLLIN, 0});
                    open += fds.back().fd >= 0 ? 1 : 0;
                }
                connected = true;
                changed.notify_all();
                const std::string header = "GET /v1/health HTTP/1.1\r\nX-Slow: " + std::string(64, 'a');
                std::vector<std::string> answers(kSlow);
                const QDeadlineTimer limit(25000);
                QDeadlineTimer nextByte(0);
                for (int sent = 0; open > 0 && !limit.hasExpired() && !stop;) {
                    ::poll(fds.data(), fds.size(), 100);
                    for (int i = 0; i < kSlow; ++i) {
                        if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
                            continue;
                        }
                        char buffer[4096];
                        const ssize_t n = ::recv(fds[i].fd, buffer, sizeof buffer, 0);
                        if (n > 0) {
                            answers[i].append(buffer, std::size_t(n));
                            continue;
                        }
                        statuses[i] = statusOf(answers[i]);
                        ::close(fds[i].fd);
                        fds[i].fd = -1;
                        --open;
                    }
                    if (nextByte.hasExpired() && std::size_t(sent) < header.size()) {
                        for (const pollfd& p : fds) {
                            if (p.fd >= 0) {
                                ::send(p.fd, header.data() + sent, 1, MSG_NOSIGNAL);
                            }
                        }
                        ++sent;
                        nextByte.setRemainingTime(1000);
                    }
                }
                for (const pollfd& p : fds) {
                    if (p.fd >= 0) {
                        ::close(p.fd);
                    }
                }
                attackOver = true;
                changed.notify_all();
            });
            std::unique_lock lock(mutex);
            changed.wait(lock, [&] { return connected.load(); });
            // Health probes from another address, every tenth of a second while the attack lasts.
            while (
                !changed.wait_for(lock, std::chrono::milliseconds(100), [&] { return attackOver.load(); })) {
                lock.unlock();
                QElapsedTimer clock;
                clock.start();
                probes.push_back(statusOf(roundTrip(
                    port, "GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "127.0.0.1")));
                probeMs.push_back(double(clock.nsecsElapsed()) / 1e6);
                lock.lock();
            }
        }
        const auto count = [&](int status) { return std::count(statuses.begin(), statuses.end(), status); };
        std::sort(probeMs.begin(), probeMs.end());
        std::printf(
            "slow clients: %ld answered 503 at once, %ld answered 408, %ld never answered; %zu probes, "
            "%ld answered 200, in %.1f ms (median) and %.1f ms at most\n",
            long(count(503)), long(count(408)), long(count(0)), probes.size(),
            long(std::count(probes.begin(), probes.end(), 200)),
            probeMs.empty() ? 0.0 : probeMs[probeMs.size() / 2], probeMs.empty() ? 0.0 : probeMs.back());
        QVERIFY(!probes.empty());
        QCOMPARE(std::count(probes.begin(), probes.end(), 200), std::ptrdiff_t(probes.size()));
        QCOMPARE(count(408) + count(503), std::ptrdiff_t(kSlow));
        QVERIFY(count(408) >= 1 && count(408) <= 32);
        QCOMPARE(get(port, QStringLiteral("/v1/health")).status, 200);
    }
};

QTEST_GUILESS_MAIN(TestApiHostile)
#include "tst_api_hostile.moc"
