#pragma once

#include "support/mapped_file.h"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace organ {

// Brings files' bytes into the page cache on a thread of its own, ahead of a consumer that reads
// them through their mappings in a known order, so that the disk reads the next ones while the
// consumer computes (a merger reads a tensor's inputs twice: the second pass, from the cache, left
// the disk idle). The consumer goes through `steps` in order and says where it is; the spans of a
// step are read side by side, a slice of each in turn, as a merger reads its inputs. The thread
// reads no byte more than `window` bytes past the consumer's place, counted over the steps' spans
// as one sequence, and waits for the consumer there.
//
// The default reader sends the bytes to /dev/null (sendfile): the kernel reads them into the page
// cache as for read(), in large folios, and copies nothing, so bytes already there cost almost
// nothing. It is advice only: where a span cannot be read (a buffer, a file gone or replaced, not
// Linux), the thread stops and the consumer reads the bytes itself.
class ReadAhead {
public:
    // Reads `length` bytes at `offset` of `file`, open as `fd` (held for the step), into the page
    // cache; false: stop reading ahead. Called on the read-ahead thread; must not throw.
    using Reader =
        std::function<bool(const MappedFile& file, int fd, std::uint64_t offset, std::uint64_t length)>;
    // The longest span of a step is read this many bytes at a time, the others in as many slices.
    static constexpr std::uint64_t kSlice = 4u << 20;

    ReadAhead(std::vector<std::vector<FileSpan>> steps, std::uint64_t window, Reader reader = {});
    ~ReadAhead();
    ReadAhead(const ReadAhead&) = delete;
    ReadAhead& operator=(const ReadAhead&) = delete;

    // From the consumer's thread: it is on `step`, past `within` bytes of its spans (counted
    // together). It only goes forward: an earlier place is ignored, a step past the last is the last.
    void reached(std::size_t step, std::uint64_t within = 0);
    // For tests: waits until the thread waits for the consumer or has ended, and returns the bytes
    // it has read.
    std::uint64_t settle();

    // The window for a consumer on this machine: 2 GiB, or a quarter of the memory available if
    // less (0 where that is unknown or nothing is available).
    static std::uint64_t defaultWindow();

private:
    void run();
    // Reads the step's spans a slice of each at a time; false: stop reading ahead.
    bool readStep(std::size_t step);
    // Waits while the bytes of the sequence up to `end` lie more than the window past the
    // consumer; false: closing, or the consumer is past `step`.
    bool waitForRoom(std::size_t step, std::uint64_t end, std::unique_lock<std::mutex>& lock);

    std::vector<std::vector<FileSpan>> m_steps;
    std::vector<std::uint64_t> m_starts; // where each step's bytes start in the sequence
    const std::uint64_t m_window;
    Reader m_reader;
    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::size_t m_step = 0;       // the consumer's step
    std::uint64_t m_consumed = 0; // the consumer's place in the sequence
    std::uint64_t m_read = 0;
    bool m_waiting = false; // the thread waits for the consumer
    bool m_finished = false;
    bool m_closing = false;
    std::thread m_thread;
};

} // namespace organ
