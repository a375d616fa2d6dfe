#pragma once

#include "support/job.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace organ {

using JobId = std::uint64_t;

// Where a job is: waiting for a worker, running, asked to stop and still running, or ended.
enum class JobState { Queued, Running, Cancelling, Done, Failed, Cancelled };
std::string_view jobStateName(JobState state); // "queued", "running", … as the HTTP API says them
bool hasEnded(JobState state);

// A job as it stands, copied out of the queue: safe to keep and read on any thread.
struct JobSnapshot {
    JobId id = 0;
    std::string kind;
    JobState state = JobState::Queued;
    std::uint64_t done = 0;
    std::uint64_t total = 0;
    std::string stage;
    std::string message;               // the failure's reason, once failed
    std::vector<std::string> warnings; // said along the way
};

// The work of a job: it reports progress (throttled by the queue's callers as they like) and
// checks the stop token per tensor or per few MiB. It returns how it ended; an exception it
// throws ends it as failed with the exception's message.
using JobWork = std::function<JobResult(const ProgressFn& progress, const StopToken& stop)>;

// Called as the job ends, on its worker (or, for a job cancelled before it ran, on the cancelling
// thread), with its final snapshot, before the end is published: once a snapshot or wait() shows
// the job ended, its `ended` has run.
using JobEnded = std::function<void(const JobSnapshot& ended)>;

// Runs jobs on a bounded number of worker threads, in the order they were submitted. A job is
// cancelled by id through its stop token: queued, it never runs; running, it stops at its next
// check (or, past its point of no return, ends as if not asked: cancel() says so). The queue
// keeps ended jobs for their snapshots until forget() or until more than `keepEnded` have
// ended (oldest first). Destroying the queue cancels every job and waits for the workers.
class JobQueue {
public:
    explicit JobQueue(std::size_t workers, std::size_t keepEnded = 256);
    ~JobQueue();
    JobQueue(const JobQueue&) = delete;
    JobQueue& operator=(const JobQueue&) = delete;

    JobId submit(std::string kind, JobWork work, JobEnded ended = {}, ProgressFn progress = {});

    // True when the job will end cancelled (it was queued or running and is now stopping);
    // false when it is unknown, has ended, or is past its point of no return.
    bool cancel(JobId id);
    // Cancels every job that has not ended.
    void cancelAll();

    std::optional<JobSnapshot> snapshot(JobId id) const;
    std::vector<JobSnapshot> snapshots() const; // in id order
    std::size_t active() const;                 // queued or running
    void forget(JobId id);                      // an ended job's record goes

    // Blocks until the job has ended (or is unknown).
    void wait(JobId id);

private:
    struct Entry;
    void work();
    void finish(const std::shared_ptr<Entry>& entry, JobResult result);

    const std::size_t m_keepEnded;
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;  // work to do, or stopping
    std::condition_variable m_ended; // some job ended
    std::map<JobId, std::shared_ptr<Entry>> m_entries;
    std::deque<std::shared_ptr<Entry>> m_queued;
    std::deque<JobId> m_endedOrder;
    JobId m_next = 1;
    bool m_stopping = false;
    std::vector<std::thread> m_workers;
};

} // namespace organ
