// The job queue that the window and the HTTP API share: order, cancel before and while
// running, past the point of no return, failures, many jobs on bounded workers, shutdown.
#include "support/job_queue.h"

#include <QTest>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

using namespace organ;

namespace {

// A gate a job waits at until the test opens it.
class Gate {
public:
    void open() { m_promise.set_value(); }
    void pass() const { m_future.wait(); }

private:
    std::promise<void> m_promise;
    std::shared_future<void> m_future = m_promise.get_future().share();
};

// The job's ends, as the queue reports them (on its threads).
struct Ends {
    std::mutex mutex;
    std::vector<JobSnapshot> seen;
    JobEnded record() {
        return [this](const JobSnapshot& s) {
            std::lock_guard lock(mutex);
            seen.push_back(s);
        };
    }
    std::optional<JobSnapshot> of(JobId id) {
        std::lock_guard lock(mutex);
        for (const JobSnapshot& s : seen) {
            if (s.id == id) {
                return s;
            }
        }
        return std::nullopt;
    }
};

// Runs until stopped, checking its token as a long job does.
JobResult untilStopped(const StopToken& stop, Gate* started) {
    if (started != nullptr) {
        started->open();
    }
    while (!stop.stopRequested()) {
        std::this_thread::yield();
    }
    return JobResult::cancelled();
}

} // namespace

class TestJobQueue : public QObject {
    Q_OBJECT

private slots:
    void runsInOrder() {
        JobQueue queue(1);
        std::vector<int> order;
        std::vector<JobId> ids;
        for (int k = 0; k < 5; ++k) {
            ids.push_back(queue.submit("step", [&order, k](const ProgressFn&, const StopToken&) {
                order.push_back(k);
                return JobResult::ok();
            }));
        }
        queue.wait(ids.back());
        QCOMPARE(order, (std::vector<int>{0, 1, 2, 3, 4}));
        for (JobId id : ids) {
            QCOMPARE(queue.snapshot(id)->state, JobState::Done);
        }
        QCOMPARE(queue.active(), std::size_t(0));
    }

    void cancelledWhileQueuedNeverRuns() {
        JobQueue queue(1);
        Ends ends;
        Gate release;
        Gate started;
        const JobId first = queue.submit(
            "blocker",
            [&](const ProgressFn&, const StopToken&) {
                started.open();
                release.pass();
                return JobResult::ok();
            },
            ends.record());
        std::atomic<bool> ran{false};
        const JobId second = queue.submit(
            "never",
            [&](const ProgressFn&, const StopToken&) {
                ran = true;
                return JobResult::ok();
            },
            ends.record());
        started.pass();
        QCOMPARE(queue.snapshot(second)->state, JobState::Queued);
        QVERIFY(queue.cancel(second));
        // Ended at once, on this thread: it never ran.
        QCOMPARE(ends.of(second)->state, JobState::Cancelled);
        QVERIFY(!queue.cancel(second)); // ended already
        release.open();
        queue.wait(first);
        QCOMPARE(queue.snapshot(first)->state, JobState::Done);
        QVERIFY(!ran);
    }

    void cancelledWhileRunningStops() {
        JobQueue queue(1);
        Gate started;
        const JobId id = queue.submit(
            "long", [&](const ProgressFn&, const StopToken& stop) { return untilStopped(stop, &started); });
        started.pass();
        QVERIFY(queue.cancel(id));
        const auto state = queue.snapshot(id)->state;
        QVERIFY(state == JobState::Cancelling || state == JobState::Cancelled);
        queue.wait(id);
        QCOMPARE(queue.snapshot(id)->state, JobState::Cancelled);
        QVERIFY(!queue.cancel(404)); // unknown
    }

    // A job that ignores its token but was granted the stop is still reported cancelled: its
    // result is not wanted.
    void grantedStopMeansCancelled() {
        JobQueue queue(1);
        Gate started;
        Gate release;
        const JobId id = queue.submit("deaf", [&](const ProgressFn&, const StopToken&) {
            started.open();
            release.pass();
            return JobResult::ok();
        });
        started.pass();
        QVERIFY(queue.cancel(id));
        release.open();
        queue.wait(id);
        QCOMPARE(queue.snapshot(id)->state, JobState::Cancelled);
    }

    // Past its point of no return a job is not stopped: cancel() says so and it ends done.
    void pastCommitEndsDone() {
        JobQueue queue(1);
        Gate committed;
        Gate release;
        const JobId id = queue.submit("writer", [&](const ProgressFn&, const StopToken& stop) {
            if (!stop.beginCommit()) {
                return JobResult::cancelled();
            }
            committed.open();
            release.pass();
            return JobResult::ok();
        });
        committed.pass();
        QVERIFY(!queue.cancel(id));
        release.open();
        queue.wait(id);
        QCOMPARE(queue.snapshot(id)->state, JobState::Done);
    }

    void failuresSayWhy() {
        JobQueue queue(2);
        const JobId failed = queue.submit("fails", [](const ProgressFn&, const StopToken&) {
            JobResult r = JobResult::failed("model.gguf: truncated");
            r.warnings.push_back("read 3 of 5 tensors");
            return r;
        });
        const JobId threw = queue.submit("throws", [](const ProgressFn&, const StopToken&) -> JobResult {
            throw std::runtime_error("plan.json: no base");
        });
        queue.wait(failed);
        queue.wait(threw);
        QCOMPARE(queue.snapshot(failed)->state, JobState::Failed);
        QCOMPARE(queue.snapshot(failed)->message, std::string("model.gguf: truncated"));
        QCOMPARE(queue.snapshot(failed)->warnings, (std::vector<std::string>{"read 3 of 5 tensors"}));
        QCOMPARE(queue.snapshot(threw)->state, JobState::Failed);
        QCOMPARE(queue.snapshot(threw)->message, std::string("plan.json: no base"));
    }

    void progressShowsInTheSnapshot() {
        JobQueue queue(1);
        Gate reported;
        Gate release;
        std::atomic<int> calls{0};
        const JobId id = queue.submit(
            "measure",
            [&](const ProgressFn& progress, const StopToken&) {
                progress(Progress{3, 8, "measuring"});
                reported.open();
                release.pass();
                return JobResult::ok();
            },
            {}, [&](const Progress&) { ++calls; });
        reported.pass();
        const JobSnapshot s = *queue.snapshot(id);
        QCOMPARE(s.state, JobState::Running);
        QCOMPARE(s.done, std::uint64_t(3));
        QCOMPARE(s.total, std::uint64_t(8));
        QCOMPARE(s.stage, std::string("measuring"));
        QCOMPARE(s.kind, std::string("measure"));
        QCOMPARE(calls.load(), 1);
        release.open();
        queue.wait(id);
    }

    // Many jobs, a bounded number at a time; every one ends, each once.
    void manyJobsOnBoundedWorkers() {
        JobQueue queue(3, 1000);
        Ends ends;
        std::atomic<int> running{0};
        std::atomic<int> most{0};
        std::vector<JobId> ids;
        for (int k = 0; k < 400; ++k) {
            ids.push_back(queue.submit(
                "small",
                [&](const ProgressFn&, const StopToken&) {
                    const int now = ++running;
                    int seen = most.load();
                    while (now > seen && !most.compare_exchange_weak(seen, now)) {
                    }
                    std::this_thread::yield();
                    --running;
                    return JobResult::ok();
                },
                ends.record()));
        }
        for (JobId id : ids) {
            queue.wait(id);
        }
        QVERIFY(most.load() >= 1 && most.load() <= 3);
        QCOMPARE(ends.seen.size(), std::size_t(400));
        QCOMPARE(queue.snapshots().size(), std::size_t(400));
    }

    // Whoever sees a job ended sees what its `ended` did, and cannot cancel it meanwhile.
    void endedRunsBeforeTheEndIsSeen() {
        JobQueue queue(1);
        std::atomic<bool> released{false};
        Gate inEnded;
        Gate leaveEnded;
        const JobId id = queue.submit(
            "assemble", [](const ProgressFn&, const StopToken&) { return JobResult::ok(); },
            [&](const JobSnapshot& s) {
                QCOMPARE(s.state, JobState::Done);
                inEnded.open();
                leaveEnded.pass();
                released = true;
            });
        inEnded.pass();
        QVERIFY(!hasEnded(queue.snapshot(id)->state));
        QVERIFY(!queue.cancel(id)); // its end is decided
        leaveEnded.open();
        queue.wait(id);
        QVERIFY(released.load());
        QCOMPARE(queue.snapshot(id)->state, JobState::Done);
    }

    // Ended jobs are kept for their snapshots, the oldest dropped beyond the limit, or forgotten.
    void endedJobsAreKeptBounded() {
        JobQueue queue(1, 2);
        JobId last = 0;
        for (int k = 0; k < 5; ++k) {
            last = queue.submit("x", [](const ProgressFn&, const StopToken&) { return JobResult::ok(); });
            queue.wait(last);
        }
        QCOMPARE(queue.snapshots().size(), std::size_t(2));
        QVERIFY(!queue.snapshot(1));
        queue.forget(last);
        QVERIFY(!queue.snapshot(last));
        QCOMPARE(queue.snapshots().size(), std::size_t(1));
    }

    // Destroyed with a job running and others queued: each ends cancelled, and it returns.
    void shutdownCancelsAndJoins() {
        Ends ends;
        Gate started;
        JobId running = 0;
        std::vector<JobId> queued;
        {
            JobQueue queue(1);
            running = queue.submit(
                "long",
                [&](const ProgressFn&, const StopToken& stop) { return untilStopped(stop, &started); },
                ends.record());
            for (int k = 0; k < 3; ++k) {
                queued.push_back(queue.submit(
                    "later", [](const ProgressFn&, const StopToken&) { return JobResult::ok(); },
                    [&, k](const JobSnapshot& s) {
                        ends.record()(s);
                        if (k == 0) {
                            // The first queued job ends on the destructor's thread, which dwells
                            // here while the worker finishes the long job: a worker that took
                            // the next queued job then ran it to its end (done, not cancelled).
                            std::this_thread::sleep_for(std::chrono::milliseconds(200));
                        }
                    }));
            }
            started.pass();
        }
        QCOMPARE(ends.of(running)->state, JobState::Cancelled);
        for (JobId id : queued) {
            QCOMPARE(ends.of(id)->state, JobState::Cancelled);
        }
    }

    void stateNames() {
        QCOMPARE(jobStateName(JobState::Queued), std::string_view("queued"));
        QCOMPARE(jobStateName(JobState::Cancelling), std::string_view("cancelling"));
        QCOMPARE(jobStateName(JobState::Done), std::string_view("done"));
        QVERIFY(hasEnded(JobState::Failed) && !hasEnded(JobState::Running));
    }
};

QTEST_APPLESS_MAIN(TestJobQueue)
#include "tst_job_queue.moc"
