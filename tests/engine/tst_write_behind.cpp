// The writer's own thread (WriteBehind): it runs its tasks in order, one at a time, hands buffers
// back, holds at most its count in flight and stops at the first failure, which the caller sees.
#include "support/write_behind.h"

#include <QTest>
#include <atomic>
#include <future>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>

using namespace organ;

class TestWriteBehind : public QObject {
    Q_OBJECT

private slots:
    void tasksRunInOrderOnTheirThread() {
        std::vector<int> ran;
        std::set<std::thread::id> threads;
        {
            WriteBehind behind(3);
            for (int i = 0; i < 2000; ++i) {
                behind.post([&, i] {
                    ran.push_back(i);
                    threads.insert(std::this_thread::get_id());
                });
            }
            behind.drain();
            QCOMPARE(ran.size(), std::size_t{2000});
        }
        for (int i = 0; i < 2000; ++i) {
            QCOMPARE(ran[static_cast<std::size_t>(i)], i);
        }
        QCOMPARE(threads.size(), std::size_t{1});
        QVERIFY(!threads.contains(std::this_thread::get_id()));
    }

    // A buffer posted with a task comes back, the same memory, once the task has run, and not
    // before; a task sees the bytes its buffer held when posted.
    void buffersComeBack() {
        WriteBehind behind;
        QCOMPARE(behind.buffer().capacity(), std::size_t{0});
        std::vector<std::byte> bytes(4096, std::byte{7});
        const std::byte* memory = bytes.data();
        const std::span<const std::byte> view = bytes;
        std::promise<void> open;
        std::shared_future<void> opened = open.get_future().share();
        std::byte seen{};
        behind.post(
            [&, view, opened] {
                opened.wait();
                seen = view[4095];
            },
            std::move(bytes));
        const std::size_t whileRunning = behind.buffer().capacity();
        open.set_value();
        behind.drain();
        QCOMPARE(whileRunning, std::size_t{0});
        QCOMPARE(seen, std::byte{7});
        std::vector<std::byte> again = behind.buffer();
        QCOMPARE(static_cast<const std::byte*>(again.data()), memory);
        QCOMPARE(behind.buffer().capacity(), std::size_t{0});
    }

    // With two in flight, a third post waits for the first task to end.
    void postWaitsWhileTheQueueIsFull() {
        WriteBehind behind(2);
        std::promise<void> open;
        std::shared_future<void> opened = open.get_future().share();
        behind.post([opened] { opened.wait(); });
        behind.post([] {});
        std::atomic<bool> posting{false};
        std::atomic<bool> posted{false};
        std::thread third([&] {
            posting = true;
            behind.post([] {});
            posted = true;
        });
        // Once the third thread is in post, a post that did not wait would return at once.
        while (!posting.load()) {
            std::this_thread::yield();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        const bool postedEarly = posted.load();
        open.set_value();
        third.join();
        QVERIFY(!postedEarly);
        QVERIFY(posted.load());
        behind.drain();
    }

    // A post waiting for room is woken by a failure, and throws it.
    void failureWakesAWaitingPost() {
        WriteBehind behind(1);
        std::promise<void> open;
        std::shared_future<void> opened = open.get_future().share();
        behind.post([opened] {
            opened.wait();
            throw std::runtime_error("out.gguf: write failed: File too large");
        });
        std::atomic<bool> ran{false};
        std::string message;
        std::thread second([&] {
            try {
                behind.post([&] { ran = true; });
            } catch (const std::runtime_error& error) {
                message = error.what();
            }
        });
        open.set_value();
        second.join();
        QCOMPARE(QString::fromStdString(message), QStringLiteral("out.gguf: write failed: File too large"));
        QVERIFY(!ran.load());
    }

    // Destroyed while a task runs: it waits for that task and skips those not started.
    void destructionSkipsWhatWaits() {
        auto behind = std::make_unique<WriteBehind>(3);
        std::promise<void> open;
        std::shared_future<void> opened = open.get_future().share();
        std::promise<void> started;
        std::atomic<bool> first{false};
        std::atomic<bool> second{false};
        behind->post([opened, &started, &first] {
            started.set_value();
            opened.wait();
            first = true;
        });
        behind->post([&] { second = true; });
        started.get_future().wait();
        std::thread destroying([&] { behind.reset(); });
        // Time for the destructor to drop what waits; it then waits for the running task.
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        open.set_value();
        destroying.join();
        QVERIFY(first.load());
        QVERIFY(!second.load());
    }

    // A task that throws: the tasks after it are skipped and every later call rethrows.
    void firstFailureStopsTheRest() {
        WriteBehind behind(4);
        std::atomic<int> after{0};
        std::promise<void> open;
        std::shared_future<void> opened = open.get_future().share();
        behind.post([opened] { opened.wait(); });
        behind.post([] { throw std::runtime_error("out.gguf: write failed: No space left on device"); });
        behind.post([&] { ++after; });
        open.set_value();
        try {
            behind.drain();
            QFAIL("drain() returned after a failed task");
        } catch (const std::runtime_error& error) {
            QCOMPARE(QString::fromUtf8(error.what()),
                     QStringLiteral("out.gguf: write failed: No space left on device"));
        }
        // Time for a task that was not skipped to run.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        QCOMPARE(after.load(), 0);
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, behind.post([&] { ++after; }));
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, behind.buffer());
        QCOMPARE(after.load(), 0);
    }
};

QTEST_GUILESS_MAIN(TestWriteBehind)
#include "tst_write_behind.moc"
