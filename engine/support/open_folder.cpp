#include "support/open_folder.h"

#include "support/errors.h"
#include "support/text_format.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>

namespace organ {

std::shared_ptr<const OpenFolder> OpenFolder::open(const std::string& path) {
    FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.isOpen()) {
        const int err = errno;
        throw IoError(fileLabel(path) + (err == ENOTDIR
                                             ? std::string(": not a directory")
                                             : ": cannot open: " + std::string(std::strerror(err))));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        throw IoError(fileLabel(path) + ": cannot read it: " + std::strerror(errno));
    }
    std::shared_ptr<OpenFolder> folder(new OpenFolder);
    folder->m_path = path;
    folder->m_fd = std::move(fd);
    folder->m_identity = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
    registerInput(folder->m_identity);
    return folder;
}

OpenFolder::~OpenFolder() {
    unregisterInput(m_identity);
}

std::string OpenFolder::label(const std::string& relative) const {
    return fileLabel(m_path) + "/" + relative;
}

FileDescriptor OpenFolder::openFile(const std::string& relative) const {
    FileDescriptor folder;
    int at = m_fd.get();
    std::size_t start = 0;
    for (std::size_t slash; (slash = relative.find('/', start)) != std::string::npos; start = slash + 1) {
        const std::string part = relative.substr(start, slash - start);
        FileDescriptor next(::openat(at, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!next.isOpen()) {
            const int err = errno;
            const std::string where = label(relative.substr(0, slash));
            throw err == ENOENT ? FormatError(label(relative) + " is missing")
            : err == ELOOP || err == ENOTDIR
                ? FormatError(where + " is not a folder inside " + fileLabel(m_path) +
                              " (a link is never followed out of it)")
                : FormatError(where + ": cannot open: " + std::strerror(err));
        }
        folder = std::move(next);
        at = folder.get();
    }
    const std::string name = relative.substr(start);
    // Without blocking: a FIFO planted in place of a file would otherwise wait for a writer.
    FileDescriptor file(::openat(at, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!file.isOpen()) {
        const int err = errno;
        throw err == ENOENT ? FormatError(label(relative) + " is missing")
        : err == ELOOP      ? FormatError(label(relative) + " is not a regular file (a link)")
                            : FormatError(label(relative) + ": cannot open: " + std::strerror(err));
    }
    struct stat st {};
    if (::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        throw FormatError(label(relative) + " is not a regular file");
    }
    ::fcntl(file.get(), F_SETFL, ::fcntl(file.get(), F_GETFL) & ~O_NONBLOCK);
    return file;
}

} // namespace organ
