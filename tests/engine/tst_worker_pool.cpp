// The forward pass's worker pool: every item runs exactly once, on several threads, loop after
// loop (helpers that wake late must never take a later loop's items); failures come back to the
// caller; a loop started inside a loop, or beside one, runs on its caller.
#include "support/worker_pool.h"

#include <QTest>
#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

using namespace organ;

class TestWorkerPool : public QObject {
    Q_OBJECT

private slots:
    void everyItemRunsOnce() {
        WorkerPool pool(3);
        QCOMPARE(pool.threads(), 3u);
        // Many short loops back to back, of varying sizes, then one long one.
        for (std::size_t loop = 0; loop < 2000; ++loop) {
            const std::size_t count = loop % 7;
            std::vector<std::atomic<int>> runs(count);
            pool.run(count, [&](std::size_t i, std::vector<std::byte>&) { runs[i].fetch_add(1); });
            for (std::size_t i = 0; i < count; ++i) {
                QCOMPARE(runs[i].load(), 1);
            }
        }
        std::vector<std::atomic<int>> runs(10000);
        pool.run(runs.size(), [&](std::size_t i, std::vector<std::byte>&) { runs[i].fetch_add(1); });
        for (const auto& r : runs) {
            QCOMPARE(r.load(), 1);
        }
    }

    // Items that wait for each other finish only if they run on different threads at once.
    void helpersShareTheWork() {
        WorkerPool pool(2);
        std::atomic<int> arrived{0};
        std::set<std::thread::id> threads;
        std::mutex mutex;
        pool.run(2, [&](std::size_t, std::vector<std::byte>&) {
            arrived.fetch_add(1);
            while (arrived.load() < 2) {
                std::this_thread::yield();
            }
            std::lock_guard lock(mutex);
            threads.insert(std::this_thread::get_id());
        });
        QCOMPARE(threads.size(), std::size_t(2));
    }

    // Each thread's scratch buffer is its own and kept from loop to loop.
    void scratchIsPerThread() {
        WorkerPool pool(2);
        std::atomic<bool> shared{false};
        std::atomic<std::size_t> grown{0};
        for (int loop = 0; loop < 50; ++loop) {
            pool.run(64, [&](std::size_t, std::vector<std::byte>& scratch) {
                const std::size_t before = scratch.size();
                scratch.resize(before + 1);
                grown.fetch_add(1);
                for (std::size_t i = 0; i < 1000; ++i) {
                    if (scratch.size() != before + 1) { // another thread resized it
                        shared.store(true);
                    }
                }
            });
        }
        QVERIFY(!shared.load());
        QCOMPARE(grown.load(), std::size_t(50 * 64));
    }

    void failuresReachTheCaller() {
        WorkerPool pool(2);
        std::atomic<int> ran{0};
        QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                                 pool.run(100, [&](std::size_t i, std::vector<std::byte>&) {
                                     ran.fetch_add(1);
                                     if (i == 37) {
                                         throw std::runtime_error("item 37");
                                     }
                                 }));
        QCOMPARE(ran.load(), 100);
        // The pool still works afterwards.
        std::atomic<int> again{0};
        pool.run(10, [&](std::size_t, std::vector<std::byte>&) { again.fetch_add(1); });
        QCOMPARE(again.load(), 10);
    }

    void loopsInsideLoopsRunOnTheirCaller() {
        WorkerPool pool(2);
        std::atomic<int> inner{0};
        std::atomic<bool> elsewhere{false};
        pool.run(4, [&](std::size_t, std::vector<std::byte>&) {
            const auto caller = std::this_thread::get_id();
            pool.run(3, [&](std::size_t, std::vector<std::byte>&) {
                if (std::this_thread::get_id() != caller) {
                    elsewhere.store(true);
                }
                inner.fetch_add(1);
            });
        });
        QCOMPARE(inner.load(), 12);
        QVERIFY(!elsewhere.load());
    }

    void loopsFromTwoThreads() {
        WorkerPool pool(2);
        std::atomic<int> total{0};
        auto runMany = [&] {
            for (int loop = 0; loop < 200; ++loop) {
                pool.run(8, [&](std::size_t, std::vector<std::byte>&) { total.fetch_add(1); });
            }
        };
        std::thread other(runMany);
        runMany();
        other.join();
        QCOMPARE(total.load(), 2 * 200 * 8);
    }

    void oneThreadRunsOnTheCaller() {
        WorkerPool pool(1);
        QCOMPARE(pool.threads(), 1u);
        const auto caller = std::this_thread::get_id();
        int ran = 0;
        pool.run(5, [&](std::size_t, std::vector<std::byte>&) {
            QCOMPARE(std::this_thread::get_id(), caller);
            ++ran;
        });
        QCOMPARE(ran, 5);
        QCOMPARE(WorkerPool(0).threads(), 1u);
    }
};

QTEST_APPLESS_MAIN(TestWorkerPool)
#include "tst_worker_pool.moc"
