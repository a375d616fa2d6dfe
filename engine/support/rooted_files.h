#pragma once

#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>

namespace organ {

// A file descriptor, closed when it goes.
class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : m_fd(fd) {}
    ~UniqueFd();
    UniqueFd(UniqueFd&& other) noexcept : m_fd(other.release()) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept;
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;

    int get() const { return m_fd; }
    bool valid() const { return m_fd >= 0; }
    // Hands the descriptor over: it is no longer closed here.
    int release() {
        const int fd = m_fd;
        m_fd = -1;
        return fd;
    }

private:
    int m_fd = -1;
};

// Opens `path` relative to the folder descriptor `folder` without following a symbolic link at
// any component (the last included) and without leaving the folder: openat2 with RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS, or walkBeneath() where the kernel has no openat2 (before 5.6). Returns the
// descriptor (O_CLOEXEC), or -1 with errno set: ELOOP when a link is on the way, EXDEV when the
// path is absolute or climbs out by "..". Checking a path and then opening it by name leaves a gap
// in which a folder on the way can be swapped for a link; a path followed this way has none.
int openBeneath(int folder, const std::string& path, int flags, mode_t mode = 0);
// The same, one component at a time: each folder opened with O_NOFOLLOW and checked through its
// descriptor before the next component is looked up in it; ".." taken lexically first.
int walkBeneath(int folder, const std::string& path, int flags, mode_t mode = 0);

struct RootedPath;

// A folder that paths from outside (an HTTP request, a plan) are followed beneath, held by its
// descriptor: every path is opened with openBeneath(), so swapping folders under it for links
// while a path is followed makes the path fail, never lead elsewhere. Files written beneath a
// root never replace a name that exists (writers fail instead): several writers may share it.
class FileRoot : public std::enable_shared_from_this<FileRoot> {
public:
    // `folder` itself is opened as named, links included (whoever names it chose it). Throws IoError.
    static std::shared_ptr<const FileRoot> open(const std::string& folder);
    // A folder beneath this one, as a root of its own (the writers' and organ directories' folder).
    // Throws IoError.
    std::shared_ptr<const FileRoot> folder(const std::string& path) const;

    // Where the root was when it was opened, absolute and without "." or "..": for messages, and
    // for absolute paths, which are followed beneath the root when they lie inside this one.
    const std::string& path() const { return m_path; }
    int descriptor() const { return m_fd.get(); }
    // `path` relative to the root ("." for the root itself), or nothing when it is absolute and
    // not inside path().
    std::optional<std::string> beneath(const std::string& path) const;
    // openBeneath() of `path` (relative, or absolute inside path()).
    int openFile(const std::string& path, int flags, mode_t mode = 0) const;
    // `name` (relative) beneath this root, named by its absolute path for messages.
    RootedPath file(const std::string& name) const;

private:
    FileRoot(std::string path, UniqueFd fd) : m_path(std::move(path)), m_fd(std::move(fd)) {}
    std::string m_path;
    UniqueFd m_fd;
};

// A path and the root it is followed beneath; without a root, as the process follows it (links
// included): the paths a user types. Made from a string where a function takes one, so that the
// command line passes its paths as before.
struct RootedPath {
    RootedPath(std::string p) : path(std::move(p)) {}
    RootedPath(const char* p) : path(p) {}
    RootedPath(std::shared_ptr<const FileRoot> r, std::string p) : path(std::move(p)), root(std::move(r)) {}

    std::string path;
    std::shared_ptr<const FileRoot> root;

    // Another path under the same root: a part of the same split set, a file in the same folder.
    RootedPath at(std::string other) const { return {root, std::move(other)}; }
    // Opened with `flags` | O_CLOEXEC; -1 with errno set when it cannot be.
    int tryOpen(int flags, mode_t mode = 0) const;
    // As tryOpen(); throws IoError naming the file and why (openFailure).
    UniqueFd open(int flags, mode_t mode = 0) const;
    // The folder the path names, as a root: beneath this path's root when it has one. Throws IoError.
    std::shared_ptr<const FileRoot> openFolder() const;
};

// Why a path could not be opened, for a message: what ELOOP and EXDEV mean beneath `root` (when
// there is one), else the system's words for `error`.
std::string openFailure(const FileRoot* root, int error);

// The folder part of a path: "." when it has none, "/" for a file in /. (Its last component is
// fileLabel(), support/text_format.h.)
std::string folderOf(const std::string& path);

} // namespace organ
