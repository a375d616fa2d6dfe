#pragma once

#include "support/rooted_files.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace organ {

class MappedFile;

// Every file organ writes (models, plans, reports, cache entries, the window's exports) goes
// through SafeOutput. The target is refused, naming it and the reason, when it is not a
// regular file (a device, a FIFO, a folder), when it is an input (an open model, whatever
// path or link names it, or a file in `inputs`), when it lies inside an input folder (an open
// organ directory, or a folder in `inputs`, at any depth), or when its folder is missing. The folder is
// opened once (beneath the target's root when it has one) and everything after goes through its
// descriptor: a folder swapped for a link meanwhile changes nothing. Bytes go to a partial file
// of this process in that folder, created exclusively and never through a link; commit() fsyncs
// it, renames it over the target (beneath a root: only where no name is, see FileRoot) and fsyncs
// the folder. Until then the target is untouched (a good file stays good whatever happens to this
// writer), and a writer destroyed before commit() removes its partial. Partial files of earlier
// runs that were killed are removed, each named in warnings().
class SafeOutput {
public:
    explicit SafeOutput(const RootedPath& target, const std::vector<std::string>& inputs = {});
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
    // The partial file, reached through the folder's descriptor (for re-opening and checking it).
    const RootedPath& partial() const { return m_partial; }
    const std::vector<std::string>& warnings() const { return m_warnings; }

private:
    std::string m_target;
    std::shared_ptr<const FileRoot> m_folder;
    bool m_replace = true;
    std::string m_partialName;
    RootedPath m_partial;
    std::vector<std::string> m_warnings;
    int m_fd = -1;
    bool m_finished = false;
    bool m_committed = false;
};

// The folder counterpart of SafeOutput, for a new folder of files (an organ directory): the
// target must not exist nor lie inside an input folder. Its files go into a partial folder of
// this process beside it, reached only through descriptors; commit() fsyncs every folder made and
// renames the partial folder into place, never over a name that appeared meanwhile. Destroyed
// before commit(), it removes the partial folder and everything in it. Partial folders (and files)
// that killed runs left for the same target are removed first, each named in warnings().
class SafeFolderOutput {
public:
    // Throws IoError naming the target: it exists, lies inside an input folder, or its folder
    // does not exist. "DIR/" names DIR.
    explicit SafeFolderOutput(const RootedPath& target);
    ~SafeFolderOutput();
    SafeFolderOutput(const SafeFolderOutput&) = delete;
    SafeFolderOutput& operator=(const SafeFolderOutput&) = delete;

    // A new file at `relative` ("organs/blk_0_ffn_up.bin"), its folders made as needed, open for
    // reading too (so that what was written can be read back).
    UniqueFd create(const std::string& relative);
    // `relative` as a new name for the file `from` (reached through its descriptor, never by
    // name): a hard link, else a reflink (a copy sharing its blocks); false when the file system
    // offers neither and the bytes must be copied.
    bool link(const MappedFile& from, const std::string& relative);
    // fsyncs the folders, renames the partial folder into place and fsyncs its folder.
    void commit();
    const std::vector<std::string>& warnings() const { return m_warnings; }

private:
    int folderFor(const std::string& relative, std::string& name); // made as needed
    std::string m_target;
    std::shared_ptr<const FileRoot> m_parent;
    std::string m_partialName;
    std::vector<std::pair<std::string, UniqueFd>> m_folders; // "" (the partial folder) first
    std::vector<std::string> m_warnings;
    bool m_committed = false;
};

// The checks of SafeOutput, without creating anything: for refusing a bad target before a
// long job starts. Throws IoError.
void checkOutputTarget(const RootedPath& target, const std::vector<std::string>& inputs = {});

// A whole small file through SafeOutput. Throws IoError; appends SafeOutput's warnings.
void writeFileSafely(const RootedPath& target, std::string_view content,
                     const std::vector<std::string>& inputs = {},
                     std::vector<std::string>* warnings = nullptr);

// Reads a whole file of at most maxBytes: opened without blocking (a FIFO or a device never
// hangs the reader) and refused unless it is a regular file. Throws IoError naming the file.
std::string readSmallFile(const RootedPath& path, std::uint64_t maxBytes);

} // namespace organ
