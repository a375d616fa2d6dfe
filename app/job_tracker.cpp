#include "job_tracker.h"

namespace organ::app {

JobTracker::JobTracker(QObject* parent)
    : QObject(parent), m_interactive(std::make_unique<JobQueue>(1)), m_work(std::make_unique<JobQueue>(1)) {}

JobTracker::~JobTracker() {
    m_live.clear(); // nothing more is delivered
    m_work.reset();
    m_interactive.reset();
}

JobId JobTracker::start(Job job, Work work, QObject* context) {
    const JobId id = m_next++;
    Live live;
    live.kind = job.kind;
    live.title = job.title;
    live.lane = job.lane;
    live.context = context;
    live.progress = std::move(job.progress);
    live.ended = std::move(job.ended);
    m_live.insert(id, std::move(live));
    // The queue's callbacks run on its worker (or, for a job cancelled while queued, on the
    // cancelling thread): each hands over to the GUI thread.
    const Post post = [this, id](std::function<void()> fn) {
        QMetaObject::invokeMethod(
            this,
            [this, id, fn = std::move(fn)] {
                if (const auto it = m_live.constFind(id); it != m_live.cend() && it->wanted && it->context) {
                    fn();
                }
            },
            Qt::QueuedConnection);
    };
    // At most ten reports a second reach the GUI thread, besides each new stage and the last step.
    struct Throttled {
        ProgressFn post;
        ProgressThrottle throttle{post};
    };
    auto throttled = std::make_shared<Throttled>();
    throttled->post = [this, id](const Progress& p) {
        JobProgress shown{p.done, p.total, QString::fromUtf8(p.stage.data(), qsizetype(p.stage.size()))};
        QMetaObject::invokeMethod(
            this, [this, id, shown = std::move(shown)] { deliverProgress(id, shown); }, Qt::QueuedConnection);
    };
    const ProgressFn progress = [throttled](const Progress& p) {
        throttled->throttle.report(p.done, p.total, p.stage, p.total != 0 && p.done >= p.total);
    };
    const JobEnded ended = [this, id](const JobSnapshot& snapshot) {
        JobSnapshot end = snapshot;
        end.id = id;
        QMetaObject::invokeMethod(
            this, [this, end = std::move(end)] { deliverEnd(end); }, Qt::QueuedConnection);
    };
    m_live[id].queued = queueOf(job.lane).submit(
        job.kind,
        [work = std::move(work), post](const ProgressFn& p, const StopToken& stop) {
            return work(p, stop, post);
        },
        ended, progress);
    emit started(id, QString::fromStdString(job.kind), job.title);
    return id;
}

bool JobTracker::cancel(JobId id) {
    const auto it = m_live.constFind(id);
    return it != m_live.cend() && queueOf(it->lane).cancel(it->queued);
}

void JobTracker::cancelKind(const std::string& kind) {
    for (auto it = m_live.cbegin(); it != m_live.cend(); ++it) {
        if (it->kind == kind) {
            queueOf(it->lane).cancel(it->queued);
        }
    }
}

void JobTracker::forget(JobId id) {
    if (const auto it = m_live.find(id); it != m_live.end()) {
        it->wanted = false;
    }
}

int JobTracker::liveCount(const std::string& kind) const {
    int count = 0;
    for (const Live& live : m_live) {
        count += live.wanted && (kind.empty() || live.kind == kind) ? 1 : 0;
    }
    return count;
}

void JobTracker::setDetail(JobId id, const QString& detail) {
    if (const auto it = m_live.find(id); it != m_live.end()) {
        it->detail = detail;
    }
}

void JobTracker::deliverProgress(JobId id, const JobProgress& progress) {
    const auto it = m_live.find(id);
    if (it == m_live.end()) {
        return;
    }
    if (it->wanted && it->context && it->progress) {
        it->progress(progress);
    }
    // The owner's callback may have set a detail for this step.
    const auto now = m_live.constFind(id);
    if (now != m_live.cend()) {
        const QString text =
            now->detail.isEmpty() ? progress.stage : progress.stage + QStringLiteral(" · ") + now->detail;
        emit progressed(id, progress.done, progress.total, text);
    }
}

void JobTracker::deliverEnd(const JobSnapshot& ended) {
    const auto it = m_live.find(ended.id);
    if (it == m_live.end()) {
        return;
    }
    const Live live = *it;
    m_live.erase(it);
    if (live.wanted && live.context && live.ended) {
        live.ended(ended);
    }
    emit this->ended(ended.id, QString::fromStdString(live.kind), int(ended.state));
}

} // namespace organ::app
