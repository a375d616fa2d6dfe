#include "support/write_behind.h"

#include <utility>

namespace organ {

WriteBehind::WriteBehind(std::size_t inFlight)
    : m_inFlight(inFlight == 0 ? 1 : inFlight), m_thread([this] { run(); }) {}

WriteBehind::~WriteBehind() {
    {
        std::lock_guard lock(m_mutex);
        m_closing = true;
        m_queue.clear();
    }
    m_changed.notify_all();
    m_thread.join();
}

void WriteBehind::rethrowLocked() {
    if (m_failure) {
        std::rethrow_exception(m_failure);
    }
}

std::vector<std::byte> WriteBehind::buffer() {
    std::lock_guard lock(m_mutex);
    rethrowLocked();
    if (m_free.empty()) {
        return {};
    }
    std::vector<std::byte> free = std::move(m_free.back());
    m_free.pop_back();
    return free;
}

void WriteBehind::post(Task task, std::vector<std::byte> buffer) {
    std::unique_lock lock(m_mutex);
    m_changed.wait(lock, [&] { return m_failure || m_queue.size() + (m_running ? 1 : 0) < m_inFlight; });
    rethrowLocked();
    m_queue.push_back({std::move(task), std::move(buffer)});
    lock.unlock();
    m_changed.notify_all();
}

void WriteBehind::drain() {
    std::unique_lock lock(m_mutex);
    m_changed.wait(lock, [&] { return m_failure || (m_queue.empty() && !m_running); });
    rethrowLocked();
}

void WriteBehind::run() {
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_changed.wait(lock, [&] { return m_closing || !m_queue.empty(); });
        if (m_closing) {
            return;
        }
        Entry entry = std::move(m_queue.front());
        m_queue.pop_front();
        m_running = true;
        lock.unlock();
        std::exception_ptr failure;
        try {
            entry.task();
        } catch (...) {
            failure = std::current_exception();
        }
        entry.task = nullptr; // what it held goes before the caller is told
        lock.lock();
        m_running = false;
        if (failure) {
            m_failure = failure;
            m_queue.clear();
        }
        if (entry.buffer.capacity() != 0 && m_free.size() <= m_inFlight) {
            m_free.push_back(std::move(entry.buffer));
        }
        m_changed.notify_all();
    }
}

} // namespace organ
