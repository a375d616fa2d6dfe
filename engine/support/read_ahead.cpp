#include "support/read_ahead.h"

#include "support/system_memory.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#ifdef __linux__
#include <fcntl.h>
#include <sys/sendfile.h>
#include <unistd.h>
#endif

namespace organ {
namespace {

#ifdef __linux__
// Sends the bytes to /dev/null, which takes them without a copy: the kernel reads them into the
// page cache as it does for read().
ReadAhead::Reader sendfileReader() {
    auto null = std::make_shared<UniqueFd>(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    return [null](const MappedFile&, int fd, std::uint64_t offset, std::uint64_t length) {
        if (!null->valid()) {
            return false;
        }
        auto at = static_cast<off_t>(offset);
        while (length > 0) {
            const ssize_t n = ::sendfile(null->get(), fd, &at, static_cast<std::size_t>(length));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                return false;
            }
            length -= static_cast<std::uint64_t>(n);
        }
        return true;
    };
}
#else
ReadAhead::Reader sendfileReader() {
    return [](const MappedFile&, int, std::uint64_t, std::uint64_t) { return false; };
}
#endif

} // namespace

ReadAhead::ReadAhead(std::vector<std::vector<FileSpan>> steps, std::uint64_t window, Reader reader)
    : m_steps(std::move(steps)), m_window(window), m_reader(reader ? std::move(reader) : sendfileReader()) {
    std::uint64_t total = 0;
    for (const std::vector<FileSpan>& step : m_steps) {
        m_starts.push_back(total);
        for (const FileSpan& span : step) {
            total += span.length;
        }
    }
    m_thread = std::thread([this] { run(); });
}

ReadAhead::~ReadAhead() {
    {
        std::lock_guard lock(m_mutex);
        m_closing = true;
    }
    m_changed.notify_all();
    m_thread.join();
}

void ReadAhead::reached(std::size_t step, std::uint64_t within) {
    {
        std::lock_guard lock(m_mutex);
        if (m_steps.empty()) {
            return;
        }
        step = std::min(step, m_steps.size() - 1);
        const std::uint64_t place = m_starts[step] + within;
        if (step < m_step || place <= m_consumed) {
            return;
        }
        m_step = step;
        m_consumed = place;
        m_waiting = false; // until the thread finds it must wait again
    }
    m_changed.notify_all();
}

std::uint64_t ReadAhead::settle() {
    std::unique_lock lock(m_mutex);
    m_changed.wait(lock, [&] { return m_waiting || m_finished; });
    return m_read;
}

std::uint64_t ReadAhead::defaultWindow() {
    return std::min<std::uint64_t>(std::uint64_t{2} << 30, availableMemory() / 4);
}

bool ReadAhead::waitForRoom(std::size_t step, std::uint64_t end, std::unique_lock<std::mutex>& lock) {
    while (!m_closing && m_step <= step && end > m_consumed && end - m_consumed > m_window) {
        m_waiting = true;
        m_changed.notify_all();
        m_changed.wait(lock);
    }
    m_waiting = false;
    return !m_closing && m_step <= step;
}

void ReadAhead::run() {
    bool reading = true;
    for (std::size_t step = 0; step < m_steps.size() && reading; ++step) {
        {
            std::lock_guard lock(m_mutex);
            if (m_closing) {
                break;
            }
            if (m_step > step) {
                continue; // the consumer is past it
            }
        }
        try {
            reading = readStep(step);
        } catch (const std::exception&) {
            reading = false; // advice only
        }
    }
    m_reader = {}; // what it holds (/dev/null) goes with the thread
    std::lock_guard lock(m_mutex);
    m_finished = true;
    m_changed.notify_all();
}

bool ReadAhead::readStep(std::size_t step) {
    const std::vector<FileSpan>& spans = m_steps[step];
    // Each span's file, open for the step only: an organ directory's tensor files are many.
    std::vector<UniqueFd> fds;
    std::uint64_t longest = 0;
    for (const FileSpan& span : spans) {
        if (span.file->isBuffer()) {
            return false;
        }
        fds.push_back(span.file->openDescriptor());
        longest = std::max(longest, span.length);
    }
    const std::uint64_t slices = std::max<std::uint64_t>(1, (longest + kSlice - 1) / kSlice);
    std::uint64_t end = m_starts[step];
    for (std::uint64_t s = 0; s < slices; ++s) {
        for (std::size_t i = 0; i < spans.size(); ++i) {
            const FileSpan& span = spans[i];
            const std::uint64_t from = span.length * s / slices;
            const std::uint64_t to = span.length * (s + 1) / slices;
            if (to == from) {
                continue;
            }
            end += to - from;
            {
                std::unique_lock lock(m_mutex);
                if (!waitForRoom(step, end, lock)) {
                    return !m_closing;
                }
            }
            if (!m_reader(*span.file, fds[i].get(), span.offset + from, to - from)) {
                return false;
            }
            std::lock_guard lock(m_mutex);
            m_read += to - from;
        }
    }
    return true;
}

} // namespace organ
