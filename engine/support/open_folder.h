#pragma once

#include "support/file_descriptor.h"
#include "support/mapped_file.h"

#include <memory>
#include <string>

namespace organ {

// A folder held open whose files are opened beneath it (an organ directory): each component of
// a relative path is opened from the one before, never through a link, so neither a linked file
// nor a linked sub-folder leads outside it, whatever is renamed meanwhile (no name is checked and
// then opened again). While it is open the folder is an input: checkOutputTarget refuses to
// write anything inside it.
class OpenFolder {
public:
    // Opens the folder at `path` (a link given here is followed: the user named it). Throws
    // IoError naming it when it is not a folder or cannot be opened.
    static std::shared_ptr<const OpenFolder> open(const std::string& path);
    ~OpenFolder();
    OpenFolder(const OpenFolder&) = delete;
    OpenFolder& operator=(const OpenFolder&) = delete;

    const std::string& path() const { return m_path; }
    // "organs-dir/organs/blk_0.bin": how messages name a file beneath it.
    std::string label(const std::string& relative) const;

    // The regular file at `relative` ("organs/blk_0_ffn_up.bin": no "..", no absolute path),
    // opened for reading without following a link at any step and without blocking. Throws
    // IoError naming it: missing, a link (of the file or a folder on its way), not a regular file.
    FileDescriptor openFile(const std::string& relative) const;

private:
    OpenFolder() = default;
    std::string m_path;
    FileDescriptor m_fd;
    FileIdentity m_identity;
};

} // namespace organ
