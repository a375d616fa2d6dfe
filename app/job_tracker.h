#pragma once

#include "support/job_queue.h"

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QString>
#include <functional>
#include <memory>
#include <optional>

namespace organ::app {

// A job's progress as the window shows it (on the GUI thread).
struct JobProgress {
    std::uint64_t done = 0;
    std::uint64_t total = 0;
    QString stage;
};

// The window's side of the engine's job queue (the job-tracker pattern of KDE's hotspot). Work
// started here runs on the engine's worker, one job at a time in the order asked (measurements,
// assemblies, vital signs, extractions, fleets), or — for what the user looks at right now, a
// tensor's portrait — on a worker of its own. Progress, results posted along the way and the end
// come back to the GUI thread by queued calls to the job's context object; once the context is
// gone or the job was forgotten, they are dropped. The one progress UI (widgets::JobStatus)
// follows the tracker's signals.
class JobTracker : public QObject {
    Q_OBJECT
public:
    enum class Lane { Work, Interactive };
    struct Job {
        std::string kind;                                    // "measure", "assemble", …
        QString title;                                       // "Assembling healed.gguf"
        std::function<void(const JobProgress&)> progress;    // GUI thread
        std::function<void(const JobSnapshot& ended)> ended; // GUI thread
        Lane lane = Lane::Work;
    };

    // What the work is given besides its progress and stop token: a way to run code on the GUI
    // thread (results as they come, e.g. each tensor's θ), dropped once the job is forgotten.
    using Post = std::function<void(std::function<void()>)>;
    using Work =
        std::function<JobResult(const ProgressFn& progress, const StopToken& stop, const Post& post)>;

    explicit JobTracker(QObject* parent = nullptr);
    ~JobTracker() override; // cancels every job and waits for the workers

    JobId start(Job job, Work work, QObject* context);
    bool cancel(JobId id);
    void cancelKind(const std::string& kind);
    // Its callbacks are dropped from now on (a newer job replaces it, its view closed); the job
    // runs to its end, which the tracker's signals still report.
    void forget(JobId id);

    bool isLive(JobId id) const { return m_live.contains(id); }
    int liveCount(const std::string& kind = {}) const;
    // The status a job shows besides its stage ("12 MB/s · 3 s left"), set by its owner.
    void setDetail(JobId id, const QString& detail);
    // The engine's worker queue (tests hold it busy with a job of their own).
    JobQueue& workQueue() { return *m_work; }

signals:
    void started(quint64 id, const QString& kind, const QString& title);
    void progressed(quint64 id, quint64 done, quint64 total, const QString& text);
    void ended(quint64 id, const QString& kind, int state);

private:
    struct Live {
        std::string kind;
        QString title;
        Lane lane = Lane::Work;
        JobId queued = 0; // its id in its lane's queue
        QPointer<QObject> context;
        std::function<void(const JobProgress&)> progress;
        std::function<void(const JobSnapshot&)> ended;
        QString detail;
        bool wanted = true;
    };
    // Runs on the GUI thread: the job's callbacks, if it is still wanted.
    void deliverProgress(JobId id, const JobProgress& progress);
    void deliverEnd(const JobSnapshot& ended);

    JobQueue& queueOf(Lane lane) { return lane == Lane::Work ? *m_work : *m_interactive; }

    QHash<JobId, Live> m_live;
    JobId m_next = 1;
    // Declared last: destroyed first, so that workers stop before what they post to goes.
    std::unique_ptr<JobQueue> m_interactive;
    std::unique_ptr<JobQueue> m_work;
};

// Jobs that objects wait for, one each (a view's diff, an inspector's portrait): once `key` is
// destroyed, its job is cancelled and forgotten and its entry dropped.
template <typename Key>
void dropWhenDestroyed(JobTracker* jobs, QObject* owner, QHash<Key*, quint64>& waiting, Key* key) {
    QObject::connect(key, &QObject::destroyed, owner, [jobs, &waiting, key] {
        if (const auto it = waiting.find(key); it != waiting.end()) {
            jobs->cancel(*it);
            jobs->forget(*it);
            waiting.erase(it);
        }
    });
}

// Before a new job for `key`: its older job is cancelled and forgotten (the first time, its entry
// is set to go with it).
template <typename Key>
void replaceWaiting(JobTracker* jobs, QObject* owner, QHash<Key*, quint64>& waiting, Key* key) {
    if (const auto it = waiting.find(key); it != waiting.end()) {
        jobs->cancel(*it);
        jobs->forget(*it);
    } else {
        dropWhenDestroyed(jobs, owner, waiting, key);
    }
}

// The end of a job that computes one value for one object: cancelled without a value (the stop
// token ended it); else the value, shared, is handed to `apply(target, value)` on the GUI thread
// if the target still exists.
template <typename T, typename Target, typename Apply>
JobResult deliverTo(const JobTracker::Post& post, std::optional<T> value, QPointer<Target> target,
                    Apply apply) {
    if (!value) {
        return JobResult::cancelled();
    }
    auto shared = std::make_shared<const T>(std::move(*value));
    post([target, shared, apply] {
        if (target) {
            apply(*target, shared);
        }
    });
    return JobResult::ok();
}

} // namespace organ::app
