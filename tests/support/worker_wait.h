#pragma once

#include <QCoreApplication>
#include <QSignalSpy>
#include <QTest>

namespace organ::testing {

// Waits until `spy`, on a signal of a background worker (EngineThread's workers), has seen
// `count` emissions, then delivers what those emissions queued for objects of this thread:
// the window has applied the results when it returns true. (The spy counts on the worker's
// thread, before the window's queued slot runs.)
inline bool waitForWorker(QSignalSpy& spy, int count, int timeoutMs = 20000) {
    if (!QTest::qWaitFor([&] { return spy.count() >= count; }, timeoutMs)) {
        return false;
    }
    QCoreApplication::sendPostedEvents();
    return spy.count() == count;
}

} // namespace organ::testing
