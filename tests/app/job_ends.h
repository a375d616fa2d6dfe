#pragma once

#include "job_tracker.h"

#include <QObject>
#include <QSemaphore>
#include <QString>
#include <QTest>

namespace organ::testing {

// Counts the window's jobs of one kind ("measure", "portrait", "assemble", "vitals", "extract",
// "fleet", "purify-preview") as they end. The tracker says a job ended on the GUI thread after
// the job's own end and every result it posted were delivered: once counted, the window has
// applied them.
class JobEnds {
public:
    JobEnds(app::JobTracker* jobs, const char* kind) : m_kind(QString::fromLatin1(kind)) {
        m_connection = QObject::connect(jobs, &app::JobTracker::ended, jobs,
                                        [this](quint64, const QString& kind, int state) {
                                            if (kind == m_kind) {
                                                ++m_count[state];
                                            }
                                        });
    }
    ~JobEnds() { QObject::disconnect(m_connection); }
    JobEnds(const JobEnds&) = delete;
    JobEnds& operator=(const JobEnds&) = delete;

    int count() const { return m_count[0] + m_count[1] + m_count[2] + m_count[3] + m_count[4] + m_count[5]; }
    int count(JobState state) const { return m_count[int(state)]; }

private:
    QString m_kind;
    int m_count[6] = {};
    QMetaObject::Connection m_connection;
};

// Waits until `count` jobs have ended (of any state); true when exactly that many have.
inline bool waitForJobs(const JobEnds& ends, int count, int timeoutMs = 20000) {
    return QTest::qWaitFor([&] { return ends.count() >= count; }, timeoutMs) && ends.count() == count;
}

// Keeps the engine's worker busy (as a long job would) until released: jobs started meanwhile
// wait in the queue.
class WorkerHold {
public:
    explicit WorkerHold(app::JobTracker* jobs) : m_queue(&jobs->workQueue()) {
        m_id = m_queue->submit("hold", [this](const ProgressFn&, const StopToken&) {
            m_running.release();
            m_hold.acquire();
            return JobResult::ok();
        });
        m_running.acquire(); // the worker has taken it
    }
    ~WorkerHold() { release(); }
    WorkerHold(const WorkerHold&) = delete;
    WorkerHold& operator=(const WorkerHold&) = delete;

    void release() {
        if (!m_released) {
            m_released = true;
            m_hold.release();
            m_queue->wait(m_id);
        }
    }

private:
    JobQueue* m_queue;
    JobId m_id = 0;
    QSemaphore m_hold;
    QSemaphore m_running;
    bool m_released = false;
};

} // namespace organ::testing
