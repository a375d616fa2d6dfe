#include "support/job_queue.h"

#include <algorithm>
#include <exception>

namespace organ {

struct JobQueue::Entry {
    JobSnapshot snapshot;
    JobWork work;
    JobEnded ended;
    ProgressFn progress;
    StopToken stop;
    bool finishing = false; // its end is decided: it can no longer be cancelled
};

std::string_view jobStateName(JobState state) {
    switch (state) {
    case JobState::Queued:
        return "queued";
    case JobState::Running:
        return "running";
    case JobState::Cancelling:
        return "cancelling";
    case JobState::Done:
        return "done";
    case JobState::Failed:
        return "failed";
    case JobState::Cancelled:
        return "cancelled";
    }
    return "failed";
}

bool hasEnded(JobState state) {
    return state == JobState::Done || state == JobState::Failed || state == JobState::Cancelled;
}

JobQueue::JobQueue(std::size_t workers, std::size_t keepEnded) : m_keepEnded(keepEnded) {
    for (std::size_t k = 0; k < std::max<std::size_t>(1, workers); ++k) {
        m_workers.emplace_back([this] { work(); });
    }
}

JobQueue::~JobQueue() {
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    cancelAll();
    m_wake.notify_all();
    for (std::thread& worker : m_workers) {
        worker.join();
    }
}

JobId JobQueue::submit(std::string kind, JobWork work, JobEnded ended, ProgressFn progress) {
    auto entry = std::make_shared<Entry>();
    entry->snapshot.kind = std::move(kind);
    entry->work = std::move(work);
    entry->ended = std::move(ended);
    entry->progress = std::move(progress);
    JobId id = 0;
    {
        std::lock_guard lock(m_mutex);
        id = m_next++;
        entry->snapshot.id = id;
        m_entries[id] = entry;
        m_queued.push_back(entry);
    }
    m_wake.notify_one();
    return id;
}

void JobQueue::work() {
    for (;;) {
        std::shared_ptr<Entry> entry;
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait(lock, [this] { return m_stopping || !m_queued.empty(); });
            if (m_stopping) {
                return; // no job starts once the queue is stopping: the destructor cancels them
            }
            entry = m_queued.front();
            m_queued.pop_front();
            entry->snapshot.state = JobState::Running;
        }
        const ProgressFn progress = [this, entry](const Progress& p) {
            {
                std::lock_guard lock(m_mutex);
                entry->snapshot.done = p.done;
                entry->snapshot.total = p.total;
                entry->snapshot.stage.assign(p.stage);
            }
            if (entry->progress) {
                entry->progress(p);
            }
        };
        JobResult result;
        try {
            result = entry->work(progress, entry->stop);
        } catch (const std::exception& e) {
            result = JobResult::failed(e.what());
        }
        finish(entry, std::move(result));
    }
}

// A stop that was granted means the job never passed its point of no return: whatever its work
// returned, it ends cancelled (its result is not wanted, its output not in place). The job's
// `ended` runs before the end is published: whoever sees the job ended (a snapshot, wait()) sees
// what `ended` did (the HTTP API lets go of the output's name there).
void JobQueue::finish(const std::shared_ptr<Entry>& entry, JobResult result) {
    JobSnapshot ended;
    {
        std::lock_guard lock(m_mutex);
        entry->finishing = true;
        ended = entry->snapshot;
        ended.warnings = std::move(result.warnings);
        if (entry->stop.stopRequested() || result.status == JobResult::Status::Cancelled) {
            ended.state = JobState::Cancelled;
        } else if (result.isOk()) {
            ended.state = JobState::Done;
        } else {
            ended.state = JobState::Failed;
            ended.message = std::move(result.message);
        }
    }
    if (entry->ended) {
        entry->ended(ended);
    }
    {
        std::lock_guard lock(m_mutex);
        entry->snapshot = ended;
        m_endedOrder.push_back(ended.id);
        while (m_endedOrder.size() > m_keepEnded) {
            m_entries.erase(m_endedOrder.front());
            m_endedOrder.pop_front();
        }
    }
    m_ended.notify_all();
}

bool JobQueue::cancel(JobId id) {
    std::shared_ptr<Entry> queued;
    {
        std::lock_guard lock(m_mutex);
        const auto it = m_entries.find(id);
        if (it == m_entries.end() || it->second->finishing) {
            return false; // unknown, ended, or its end decided
        }
        const std::shared_ptr<Entry>& entry = it->second;
        if (!entry->stop.requestStop()) {
            return false; // past its point of no return: it ends as it would have
        }
        if (entry->snapshot.state == JobState::Queued) {
            m_queued.erase(std::find(m_queued.begin(), m_queued.end(), entry));
            queued = entry;
        } else {
            entry->snapshot.state = JobState::Cancelling;
        }
    }
    if (queued) {
        finish(queued, JobResult::cancelled()); // it never ran: it ends now, on this thread
    }
    return true;
}

void JobQueue::cancelAll() {
    std::vector<JobId> ids;
    {
        std::lock_guard lock(m_mutex);
        for (const auto& [id, entry] : m_entries) {
            if (!hasEnded(entry->snapshot.state)) {
                ids.push_back(id);
            }
        }
    }
    for (JobId id : ids) {
        cancel(id);
    }
}

std::optional<JobSnapshot> JobQueue::snapshot(JobId id) const {
    std::lock_guard lock(m_mutex);
    const auto it = m_entries.find(id);
    return it == m_entries.end() ? std::nullopt : std::optional(it->second->snapshot);
}

std::vector<JobSnapshot> JobQueue::snapshots() const {
    std::lock_guard lock(m_mutex);
    std::vector<JobSnapshot> out;
    out.reserve(m_entries.size());
    for (const auto& [id, entry] : m_entries) {
        out.push_back(entry->snapshot);
    }
    return out;
}

std::size_t JobQueue::active() const {
    std::lock_guard lock(m_mutex);
    return std::size_t(std::count_if(m_entries.begin(), m_entries.end(),
                                     [](const auto& e) { return !hasEnded(e.second->snapshot.state); }));
}

void JobQueue::forget(JobId id) {
    std::lock_guard lock(m_mutex);
    const auto it = m_entries.find(id);
    if (it != m_entries.end() && hasEnded(it->second->snapshot.state)) {
        m_entries.erase(it);
        m_endedOrder.erase(std::remove(m_endedOrder.begin(), m_endedOrder.end(), id), m_endedOrder.end());
    }
}

void JobQueue::wait(JobId id) {
    std::unique_lock lock(m_mutex);
    m_ended.wait(lock, [&] {
        const auto it = m_entries.find(id);
        return it == m_entries.end() || hasEnded(it->second->snapshot.state);
    });
}

} // namespace organ
