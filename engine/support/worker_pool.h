#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace organ {

// Threads started once and kept for many parallel loops: the forward pass runs ~130 loops per
// generated token, each a fraction of a millisecond, and starting a thread per loop cost about as
// much as the loop. Between loops the helpers spin for a little while, so that the next loop finds
// them awake, then sleep on a futex.
class WorkerPool {
public:
    // Work item i, with a scratch buffer that belongs to the thread running it.
    using Work = std::function<void(std::size_t i, std::vector<std::byte>& scratch)>;

    // `threads` counts the caller's: threads − 1 helpers.
    explicit WorkerPool(unsigned threads);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    unsigned threads() const { return static_cast<unsigned>(m_helpers.size()) + 1; }

    // Runs work(i, scratch) for every i < count on the helpers and the calling thread, items dealt
    // one at a time as threads come free; returns when all are done, rethrowing the first failure.
    // A loop started while another runs (from another thread, or from inside a work item) runs on
    // its caller alone.
    void run(std::size_t count, const Work& work);

private:
    struct Loop;
    void helperLoop(std::size_t index);
    static void drain(Loop& loop, std::vector<std::byte>& scratch);

    std::mutex m_running;
    // Bumped for each loop (and to stop): what the helpers wait on.
    std::atomic<std::uint32_t> m_generation{0};
    std::atomic<bool> m_stopping{false};
    std::mutex m_loopMutex;
    // The loop running now: a helper that wakes late holds it alive and finds no item left.
    std::shared_ptr<Loop> m_loop;
    std::vector<std::vector<std::byte>> m_scratch; // one per thread, the caller's first
    std::vector<std::thread> m_helpers;
};

} // namespace organ
