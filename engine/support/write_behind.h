#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace organ {

// Runs tasks in the order they are posted on a thread of its own, so that writing one chunk of a
// file overlaps making the next. A task may come with a buffer: it is kept alive until the task
// has run, then handed back by buffer() for the caller to fill again (at most `inFlight` + 1 are
// kept for that). At most `inFlight` tasks wait or run; post() blocks while that many do. After a
// task fails, the rest are skipped and the failure is rethrown by the next post(), buffer() or
// drain(). Destroying it skips what has not started and waits for the task running.
class WriteBehind {
public:
    using Task = std::function<void()>;

    explicit WriteBehind(std::size_t inFlight = 2);
    ~WriteBehind();
    WriteBehind(const WriteBehind&) = delete;
    WriteBehind& operator=(const WriteBehind&) = delete;

    // A buffer to fill: one a task is done with, or a new one. Its contents are left over.
    std::vector<std::byte> buffer();
    void post(Task task, std::vector<std::byte> buffer = {});
    // Returns once every task posted has run.
    void drain();

private:
    struct Entry {
        Task task;
        std::vector<std::byte> buffer;
    };
    void run();
    void rethrowLocked();

    const std::size_t m_inFlight;
    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::deque<Entry> m_queue;
    std::vector<std::vector<std::byte>> m_free;
    bool m_running = false; // a task taken from the queue has not ended
    bool m_closing = false;
    std::exception_ptr m_failure;
    std::thread m_thread; // last: started once the rest is made
};

} // namespace organ
