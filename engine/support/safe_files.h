#pragma once

#include "support/file_descriptor.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace organ {

// Every file organ writes (models, plans, reports, cache entries, the window's exports) goes
// through SafeOutput. The target is refused, naming it and the reason, when it is not a
// regular file (a device, a FIFO, a folder), when it is an input (an open model, whatever
// path or link names it, or a file in `inputs`), when it lies inside an input folder (an open
// organ directory, or a folder in `inputs`, at any depth), or when its folder is missing. Bytes go to a
// partial file of this process in the same folder, created exclusively and never through a
// link; commit() fsyncs it, renames it over the target and fsyncs the folder. Until then the
// target is untouched (a good file stays good whatever happens to this writer), and a
// writer destroyed before commit() removes its partial. Partial files of earlier runs that
// were killed are removed, each named in warnings().
class SafeOutput {
public:
    explicit SafeOutput(std::string target, const std::vector<std::string>& inputs = {});
    ~SafeOutput();
    SafeOutput(const SafeOutput&) = delete;
    SafeOutput& operator=(const SafeOutput&) = delete;

    void write(std::span<const std::byte> bytes);
    void write(std::string_view text);
    // Flushes to the disk and closes the partial (so that it can be re-opened and checked).
    void finish();
    // finish(), then the rename into place and the folder's fsync.
    void commit();

    const std::string& target() const { return m_target; }
    const std::string& partialPath() const { return m_partial; }
    const std::vector<std::string>& warnings() const { return m_warnings; }

private:
    std::string m_target;
    std::string m_partial;
    std::vector<std::string> m_warnings;
    int m_fd = -1;
    bool m_finished = false;
    bool m_committed = false;
};

// The checks of SafeOutput, without creating anything: for refusing a bad target before a
// long job starts. Throws IoError.
void checkOutputTarget(const std::string& target, const std::vector<std::string>& inputs = {});

// A whole small file through SafeOutput. Throws IoError; appends SafeOutput's warnings.
void writeFileSafely(const std::string& target, std::string_view content,
                     const std::vector<std::string>& inputs = {},
                     std::vector<std::string>* warnings = nullptr);

// Removes the partials of `target` (SafeOutput's files, an organ directory writer's folders)
// that processes which no longer run left beside it: runs that were killed. Returns a warning
// naming each one removed. A live process's partials are left alone.
std::vector<std::string> removeStalePartials(const std::string& target);

// fsyncs a folder, so that the names created or renamed in it last; false when it cannot.
bool syncFolder(const std::string& folder);

// Reads a whole file of at most maxBytes: opened without blocking (a FIFO or a device never
// hangs the reader) and refused unless it is a regular file. Throws IoError naming the file.
std::string readSmallFile(const std::string& path, std::uint64_t maxBytes);
// The same of a file already open (OpenFolder::openFile), named `label` in messages.
std::string readSmallFile(const FileDescriptor& fd, const std::string& label, std::uint64_t maxBytes);

} // namespace organ
