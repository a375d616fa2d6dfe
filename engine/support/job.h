#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace organ {

struct Progress {
    std::uint64_t done = 0;
    std::uint64_t total = 0;
    std::string_view stage;
};

// Called on the worker thread, at most about ten times a second.
using ProgressFn = std::function<void(const Progress&)>;

// Set from any thread; long jobs check it per tensor or per few MiB. A job that writes has a
// point of no return, the rename of its output into place: it passes it by beginCommit(), and
// from then on a stop is refused, so that whoever asked learns that the job will end as if not
// asked (a cancel answered "cancelled" then leaves nothing behind, ever). One token serves one
// job, which writes one output.
class StopToken {
public:
    bool stopRequested() const noexcept { return m_state.load(std::memory_order_acquire) == kStopped; }
    // False when the job is past its point of no return (it ends as if not asked).
    bool requestStop() noexcept {
        int expected = kRunning;
        return m_state.compare_exchange_strong(expected, kStopped, std::memory_order_acq_rel) ||
               expected == kStopped;
    }
    // False when a stop came first (the job then cancels instead of committing). Const: jobs see
    // their token as const (they never stop themselves), and passing the point is theirs to say.
    bool beginCommit() const noexcept {
        int expected = kRunning;
        return m_state.compare_exchange_strong(expected, kCommitted, std::memory_order_acq_rel) ||
               expected == kCommitted;
    }

private:
    static constexpr int kRunning = 0;
    static constexpr int kStopped = 1;
    static constexpr int kCommitted = 2;
    mutable std::atomic<int> m_state{kRunning};
};

// The outcome of a long job: no exceptions cross the job boundary.
struct JobResult {
    enum class Status { Ok, Cancelled, Failed };
    Status status = Status::Ok;
    std::string message;
    std::vector<std::string> warnings; // said along the way, whatever the outcome

    static JobResult ok() { return {}; }
    static JobResult cancelled() { return {Status::Cancelled, "cancelled", {}}; }
    static JobResult failed(std::string message) { return {Status::Failed, std::move(message), {}}; }
    bool isOk() const { return status == Status::Ok; }
};

// Calls a ProgressFn no more often than every 100 ms, plus at each new stage and at the end.
class ProgressThrottle {
public:
    explicit ProgressThrottle(const ProgressFn& fn) : m_fn(fn) {}
    void report(std::uint64_t done, std::uint64_t total, std::string_view stage, bool force = false) {
        if (!m_fn) {
            return;
        }
        const auto now = std::chrono::steady_clock::now();
        // A new stage is always reported, so that a short stage is never skipped.
        if (force || stage != m_stage || now - m_last >= std::chrono::milliseconds(100)) {
            m_last = now;
            m_stage = std::string(stage);
            m_fn(Progress{done, total, stage});
        }
    }

private:
    const ProgressFn& m_fn;
    std::chrono::steady_clock::time_point m_last{};
    std::string m_stage;
};

} // namespace organ
