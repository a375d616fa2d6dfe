#include "support/rooted_files.h"

#include "support/errors.h"
#include "support/text_format.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

namespace organ {
namespace {

// The components of a relative path with "." dropped and ".." taken back lexically (no link is
// followed, so the lexical reading is the one the file system gives); false when it climbs out.
bool components(const std::string& path, std::vector<std::string>& out) {
    std::size_t start = 0;
    while (start <= path.size()) {
        const std::size_t end = std::min(path.find('/', start), path.size());
        const std::string part = path.substr(start, end - start);
        if (part == "..") {
            if (out.empty()) {
                return false;
            }
            out.pop_back();
        } else if (!part.empty() && part != ".") {
            out.push_back(part);
        }
        start = end + 1;
    }
    return true;
}

// A descriptor opened without following a link at its last component: a link is ELOOP.
int openNoFollow(int folder, const std::string& name, int flags, mode_t mode) {
    const int fd = ::openat(folder, name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 || (flags & O_PATH) == 0) {
        return fd;
    }
    // O_PATH | O_NOFOLLOW opens a link itself: refused here as openat2 refuses it.
    struct stat st {};
    if (::fstat(fd, &st) != 0 || S_ISLNK(st.st_mode)) {
        ::close(fd);
        errno = ELOOP;
        return -1;
    }
    return fd;
}

// An absolute path without "." and ".." components or doubled slashes.
std::string normalAbsolute(const std::string& absolute) {
    std::vector<std::string> parts;
    components(absolute.substr(1), parts);
    std::string normal;
    for (const std::string& part : parts) {
        normal += "/" + part;
    }
    return normal.empty() ? "/" : normal;
}

std::atomic<bool> g_noOpenat2{false};

} // namespace

UniqueFd::~UniqueFd() {
    if (m_fd >= 0) {
        ::close(m_fd);
    }
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
        m_fd = other.release();
    }
    return *this;
}

int walkBeneath(int folder, const std::string& path, int flags, mode_t mode) {
    std::vector<std::string> parts;
    if (path.empty() || path.front() == '/' || !components(path, parts)) {
        errno = path.empty() ? ENOENT : EXDEV;
        return -1;
    }
    if (parts.empty()) {
        parts.push_back(".");
    }
    UniqueFd current;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        const int at = current.valid() ? current.get() : folder;
        UniqueFd next(openNoFollow(at, parts[i], O_PATH, 0));
        if (!next.valid()) {
            return -1;
        }
        struct stat st {};
        if (::fstat(next.get(), &st) != 0) {
            return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            return -1;
        }
        current = std::move(next);
    }
    return openNoFollow(current.valid() ? current.get() : folder, parts.back(), flags, mode);
}

int openBeneath(int folder, const std::string& path, int flags, mode_t mode) {
    if (path.empty()) {
        errno = ENOENT;
        return -1;
    }
    if (!g_noOpenat2.load(std::memory_order_relaxed)) {
        open_how how{};
        how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
        // openat2 refuses a mode unless a file is made.
        how.mode = (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE ? mode : 0;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
        // EAGAIN: a rename somewhere raced a ".." on the way; the kernel asks for another try.
        for (int attempt = 0; attempt < 16; ++attempt) {
            const long fd = ::syscall(SYS_openat2, folder, path.c_str(), &how, sizeof how);
            if (fd >= 0 || (errno != EAGAIN && errno != ENOSYS)) {
                return static_cast<int>(fd);
            }
            if (errno == ENOSYS) {
                g_noOpenat2.store(true, std::memory_order_relaxed);
                break;
            }
        }
    }
    return walkBeneath(folder, path, flags, mode);
}

std::shared_ptr<const FileRoot> FileRoot::open(const std::string& folder) {
    UniqueFd fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) {
        throw IoError(fileLabel(folder) + ": cannot open the folder: " + std::strerror(errno));
    }
    std::string absolute = folder;
    if (absolute.empty() || absolute.front() != '/') {
        char* cwd = ::getcwd(nullptr, 0);
        absolute = std::string(cwd != nullptr ? cwd : ".") + "/" + folder;
        std::free(cwd);
    }
    return std::shared_ptr<const FileRoot>(new FileRoot(normalAbsolute(absolute), std::move(fd)));
}

std::shared_ptr<const FileRoot> FileRoot::folder(const std::string& path) const {
    const auto relative = beneath(path);
    UniqueFd fd(relative ? openFile(*relative, O_RDONLY | O_DIRECTORY) : -1);
    if (!fd.valid()) {
        throw IoError(fileLabel(path) +
                      ": cannot open the folder: " + openFailure(this, relative ? errno : EXDEV));
    }
    return std::shared_ptr<const FileRoot>(
        new FileRoot(normalAbsolute(m_path + "/" + *relative), std::move(fd)));
}

std::optional<std::string> FileRoot::beneath(const std::string& path) const {
    if (path.empty() || path.front() != '/') {
        return path.empty() ? std::string(".") : path;
    }
    const std::string normal = normalAbsolute(path);
    if (normal == m_path) {
        return std::string(".");
    }
    const std::string prefix = m_path == "/" ? "/" : m_path + "/";
    if (normal.compare(0, prefix.size(), prefix) != 0) {
        return std::nullopt;
    }
    return normal.substr(prefix.size());
}

int FileRoot::openFile(const std::string& path, int flags, mode_t mode) const {
    const auto relative = beneath(path);
    if (!relative) {
        errno = EXDEV;
        return -1;
    }
    return openBeneath(m_fd.get(), *relative, flags, mode);
}

RootedPath FileRoot::file(const std::string& name) const {
    return {shared_from_this(), (m_path == "/" ? "" : m_path) + "/" + name};
}

int RootedPath::tryOpen(int flags, mode_t mode) const {
    if (root) {
        return root->openFile(path, flags, mode);
    }
    return ::open(path.c_str(), flags | O_CLOEXEC, mode);
}

UniqueFd RootedPath::open(int flags, mode_t mode) const {
    UniqueFd fd(tryOpen(flags, mode));
    if (!fd.valid()) {
        const int error = errno;
        // A socket cannot be opened at all ("No such device or address"): say what it is.
        if (error == ENXIO) {
            const UniqueFd where(tryOpen(O_PATH));
            struct stat st {};
            if (where.valid() && ::fstat(where.get(), &st) == 0 && !S_ISREG(st.st_mode)) {
                throw IoError(notRegularFile(path, st.st_mode));
            }
        }
        throw IoError(fileLabel(path) + ": cannot open: " + openFailure(root.get(), error));
    }
    return fd;
}

std::shared_ptr<const FileRoot> RootedPath::openFolder() const {
    return root ? root->folder(path) : FileRoot::open(path);
}

std::string openFailure(const FileRoot* root, int error) {
    if (root != nullptr && error == ELOOP) {
        return "it leads through a symbolic link, and none is followed beneath " + root->path();
    }
    if (root != nullptr && error == EXDEV) {
        return "it lies outside " + root->path();
    }
    return std::strerror(error);
}

std::string folderOf(const std::string& path) {
    const auto slash = path.find_last_of('/');
    if (slash == std::string::npos) {
        return ".";
    }
    return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace organ
