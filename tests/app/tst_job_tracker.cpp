// The window's job tracker without a window: work runs on the engine's worker in the order
// started, interactive work (portraits) never waits behind it, results reach the GUI thread by
// queued calls, and a forgotten job's or a destroyed context's results are dropped.
#include "job_ends.h"
#include "job_tracker.h"

#include <QSemaphore>
#include <QTest>
#include <atomic>

using namespace organ;
using namespace organ::testing;

class TestJobTracker : public QObject {
    Q_OBJECT

    static app::JobTracker::Work posting(int value, std::vector<int>* seen) {
        return
            [value, seen](const ProgressFn& progress, const StopToken&, const app::JobTracker::Post& post) {
                progress(Progress{1, 1, "working"});
                post([value, seen] { seen->push_back(value); });
                return JobResult::ok();
            };
    }

private slots:
    void workRunsInOrderAndResultsArriveOnTheGuiThread() {
        app::JobTracker jobs;
        QObject context;
        std::vector<int> seen;
        std::vector<QString> progress;
        JobEnds ended(&jobs, "measure");
        for (int k = 0; k < 5; ++k) {
            app::JobTracker::Job job;
            job.kind = "measure";
            job.progress = [&progress](const app::JobProgress& p) { progress.push_back(p.stage); };
            job.ended = [&seen, k, thread = QThread::currentThread()](const JobSnapshot& end) {
                QCOMPARE(QThread::currentThread(), thread);
                QCOMPARE(end.state, JobState::Done);
                seen.push_back(100 + k);
            };
            jobs.start(std::move(job), posting(k, &seen), &context);
        }
        QVERIFY(waitForJobs(ended, 5));
        // Each job's posted result comes before its end, the jobs in the order started.
        QCOMPARE(seen, (std::vector<int>{0, 100, 1, 101, 2, 102, 3, 103, 4, 104}));
        QCOMPARE(progress.size(), std::size_t(5));
        QCOMPARE(jobs.liveCount(), 0);
    }

    void interactiveWorkDoesNotWaitBehindWork() {
        app::JobTracker jobs;
        QObject context;
        WorkerHold hold(&jobs); // the engine's worker is busy, as with a long measurement
        std::vector<int> seen;
        JobEnds measured(&jobs, "measure");
        JobEnds drawn(&jobs, "portrait");
        jobs.start({"measure", {}, {}, {}, app::JobTracker::Lane::Work}, posting(1, &seen), &context);
        jobs.start({"portrait", {}, {}, {}, app::JobTracker::Lane::Interactive}, posting(2, &seen), &context);
        QVERIFY(waitForJobs(drawn, 1));
        QCOMPARE(measured.count(), 0);
        QCOMPARE(seen, std::vector<int>{2});
        hold.release();
        QVERIFY(waitForJobs(measured, 1));
        QCOMPARE(seen, (std::vector<int>{2, 1}));
    }

    void cancelledBeforeItStartsNeverRuns() {
        app::JobTracker jobs;
        QObject context;
        WorkerHold hold(&jobs);
        std::atomic<int> ran = 0;
        JobEnds ended(&jobs, "extract");
        std::vector<JobState> states;
        app::JobTracker::Job job;
        job.kind = "extract";
        job.ended = [&states](const JobSnapshot& end) { states.push_back(end.state); };
        const JobId first = jobs.start(
            job,
            [&ran](const ProgressFn&, const StopToken&, const app::JobTracker::Post&) {
                ++ran;
                return JobResult::ok();
            },
            &context);
        jobs.start(
            job,
            [&ran](const ProgressFn&, const StopToken&, const app::JobTracker::Post&) {
                ++ran;
                return JobResult::ok();
            },
            &context);
        QVERIFY(jobs.cancel(first));
        hold.release();
        QVERIFY(waitForJobs(ended, 2));
        QCOMPARE(ran.load(), 1);
        QCOMPARE(states, (std::vector<JobState>{JobState::Cancelled, JobState::Done}));
        QCOMPARE(ended.count(JobState::Cancelled), 1);
    }

    void cancelWhileRunningStopsAtTheNextCheck() {
        app::JobTracker jobs;
        QObject context;
        QSemaphore running;
        JobEnds ended(&jobs, "vitals");
        const JobId id = jobs.start(
            {"vitals", {}, {}, {}, app::JobTracker::Lane::Work},
            [&running](const ProgressFn&, const StopToken& stop, const app::JobTracker::Post&) {
                running.release();
                while (!stop.stopRequested()) {
                    QThread::msleep(1);
                }
                return JobResult::cancelled();
            },
            &context);
        running.acquire();
        QVERIFY(jobs.cancel(id));
        QVERIFY(waitForJobs(ended, 1));
        QCOMPARE(ended.count(JobState::Cancelled), 1);
    }

    // A newer selection's portrait replaces an older one's: the older job is forgotten and its
    // results are dropped, though it runs to its end; so are those of a context destroyed.
    void forgottenAndOrphanedResultsAreDropped() {
        app::JobTracker jobs;
        auto context = std::make_unique<QObject>();
        WorkerHold hold(&jobs);
        std::vector<int> seen;
        int endsSeen = 0;
        JobEnds ended(&jobs, "measure");
        app::JobTracker::Job job;
        job.kind = "measure";
        job.ended = [&endsSeen](const JobSnapshot&) { ++endsSeen; };
        const JobId forgotten = jobs.start(job, posting(1, &seen), context.get());
        jobs.start(job, posting(2, &seen), context.get());
        QObject survivor;
        jobs.start(job, posting(3, &seen), &survivor);
        jobs.forget(forgotten);
        QCOMPARE(jobs.liveCount("measure"), 2);
        hold.release();
        // Nothing is delivered before the event loop runs: the context goes first.
        context.reset();
        QVERIFY(waitForJobs(ended, 3));
        QCOMPARE(seen, std::vector<int>{3});
        QCOMPARE(endsSeen, 1);
    }

    void failuresCarryTheirMessage() {
        app::JobTracker jobs;
        QObject context;
        QString message;
        JobEnds ended(&jobs, "fleet");
        app::JobTracker::Job job;
        job.kind = "fleet";
        job.ended = [&message](const JobSnapshot& end) { message = QString::fromStdString(end.message); };
        jobs.start(
            job,
            [](const ProgressFn&, const StopToken&, const app::JobTracker::Post&) -> JobResult {
                throw std::runtime_error("broken.gguf: not a GGUF file");
            },
            &context);
        QVERIFY(waitForJobs(ended, 1));
        QCOMPARE(ended.count(JobState::Failed), 1);
        QCOMPARE(message, QStringLiteral("broken.gguf: not a GGUF file"));
    }
};

QTEST_GUILESS_MAIN(TestJobTracker)
#include "tst_job_tracker.moc"
