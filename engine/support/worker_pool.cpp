#include "support/worker_pool.h"

#include <algorithm>
#include <chrono>
#include <exception>

namespace organ {
namespace {

// How long a thread spins before it sleeps: longer than the gaps between a forward pass's loops
// (a norm, a rotation: a few microseconds), short enough to leave a shared core to others soon.
constexpr std::chrono::microseconds kSpin{200};

void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
}

// Waits until value != old: spins for kSpin, then sleeps in the atomic's wait.
template <class T> T awaitChange(const std::atomic<T>& value, T old) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (unsigned spins = 1;; ++spins) {
        const T now = value.load(std::memory_order_acquire);
        if (now != old) {
            return now;
        }
        if (spins % 64 == 0 && std::chrono::steady_clock::now() > until) {
            value.wait(old, std::memory_order_acquire);
        } else {
            pause();
        }
    }
}

} // namespace

struct WorkerPool::Loop {
    const Work* work = nullptr;
    std::size_t count = 0;
    std::atomic<std::size_t> next{0};
    std::atomic<std::size_t> done{0};
    std::mutex failureMutex;
    std::exception_ptr failure;
};

WorkerPool::WorkerPool(unsigned threads) : m_scratch(std::max(1u, threads)) {
    for (std::size_t i = 1; i < m_scratch.size(); ++i) {
        m_helpers.emplace_back([this, i] { helperLoop(i); });
    }
}

WorkerPool::~WorkerPool() {
    m_stopping.store(true, std::memory_order_release);
    m_generation.fetch_add(1, std::memory_order_release);
    m_generation.notify_all();
    for (auto& helper : m_helpers) {
        helper.join();
    }
}

void WorkerPool::drain(Loop& loop, std::vector<std::byte>& scratch) {
    for (std::size_t i = loop.next.fetch_add(1, std::memory_order_relaxed); i < loop.count;
         i = loop.next.fetch_add(1, std::memory_order_relaxed)) {
        try {
            (*loop.work)(i, scratch);
        } catch (...) {
            std::lock_guard lock(loop.failureMutex);
            if (!loop.failure) {
                loop.failure = std::current_exception();
            }
        }
        if (loop.done.fetch_add(1, std::memory_order_acq_rel) + 1 == loop.count) {
            loop.done.notify_all();
        }
    }
}

void WorkerPool::helperLoop(std::size_t index) {
    std::uint32_t seen = 0;
    for (;;) {
        seen = awaitChange(m_generation, seen);
        if (m_stopping.load(std::memory_order_acquire)) {
            return;
        }
        std::shared_ptr<Loop> loop;
        {
            std::lock_guard lock(m_loopMutex);
            loop = m_loop;
        }
        if (loop) {
            drain(*loop, m_scratch[index]);
        }
    }
}

void WorkerPool::run(std::size_t count, const Work& work) {
    std::unique_lock running(m_running, std::try_to_lock);
    if (!running.owns_lock() || m_helpers.empty() || count <= 1) {
        std::vector<std::byte> local;
        std::vector<std::byte>& scratch = running.owns_lock() ? m_scratch[0] : local;
        for (std::size_t i = 0; i < count; ++i) {
            work(i, scratch);
        }
        return;
    }
    auto loop = std::make_shared<Loop>();
    loop->work = &work;
    loop->count = count;
    {
        std::lock_guard lock(m_loopMutex);
        m_loop = loop;
    }
    m_generation.fetch_add(1, std::memory_order_release);
    m_generation.notify_all();
    drain(*loop, m_scratch[0]);
    for (std::size_t done = loop->done.load(std::memory_order_acquire); done != count;) {
        done = awaitChange(loop->done, done);
    }
    {
        std::lock_guard lock(m_loopMutex);
        m_loop.reset();
    }
    if (loop->failure) {
        std::rethrow_exception(loop->failure);
    }
}

} // namespace organ
