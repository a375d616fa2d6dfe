#include "support/parallel_items.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace organ {

bool forEachItem(std::size_t count, unsigned threads, const StopToken* stop,
                 const std::function<void(std::size_t)>& work) {
    std::atomic<std::size_t> next{0};
    std::atomic<std::size_t> done{0};
    std::mutex failureMutex;
    std::exception_ptr failure;
    auto worker = [&] {
        for (std::size_t i = next++; i < count; i = next++) {
            if (stop != nullptr && stop->stopRequested()) {
                return;
            }
            try {
                work(i);
                ++done;
            } catch (...) {
                std::lock_guard lock(failureMutex);
                if (!failure) {
                    failure = std::current_exception();
                }
                next = count;
                return;
            }
        }
    };
    const unsigned cores = threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
    {
        std::vector<std::jthread> pool;
        for (unsigned t = 1; t < std::min<std::size_t>(cores, count); ++t) {
            pool.emplace_back(worker);
        }
        worker();
    }
    if (failure) {
        std::rethrow_exception(failure);
    }
    return done == count;
}

} // namespace organ
