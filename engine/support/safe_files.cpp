#include "support/safe_files.h"

#include "support/errors.h"
#include "support/mapped_file.h"
#include "support/text_format.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <linux/fs.h>
#include <optional>
#include <random>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace organ {
namespace {

// The start of a partial's name: the target's name, cut at a character's start where it is long, so
// that the partial's name ("….partial.<pid>.<random>") stays within a file system's 255 bytes.
std::string partialStem(const std::string& target) {
    constexpr std::size_t kLongest = 200;
    std::string label = fileLabel(target);
    if (label.size() > kLongest) {
        std::size_t cut = kLongest;
        while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0u) == 0x80u) {
            --cut;
        }
        label.resize(cut);
    }
    return label;
}

// A partial file of `target` is "<stem>.partial.<pid>.<random>".
std::string partialPrefix(const std::string& target) {
    return partialStem(target) + ".partial.";
}

// The process that made `name`, a partial of `target` left beside it: "<target>.partial.<pid>.
// <random>" (SafeOutput's file), "<target>.partial-<pid>.<random>" (SafeFolderOutput's folder) or
// "<target>.partial-<pid>-<n>" (an organ directory of an earlier version); 0 when it is none.
long partialOwner(const std::string& name, const std::string& target) {
    const std::string prefix = partialStem(target) + ".partial";
    const std::size_t digits = prefix.size() + 1;
    if (!name.starts_with(prefix) || name.size() <= digits ||
        (name[prefix.size()] != '.' && name[prefix.size()] != '-')) {
        return 0;
    }
    const std::size_t end = name.find_first_not_of("0123456789", digits);
    if (end == std::string::npos || end == digits || end - digits > 9 ||
        (name[end] != '.' && name[end] != '-') || end + 1 == name.size()) {
        return 0;
    }
    return std::strtol(name.substr(digits, end - digits).c_str(), nullptr, 10);
}

// Removes what `folder` holds, links never followed (the partial folder of a writer).
void removeContents(int folder) {
    const int listed = ::openat(folder, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* dir = listed >= 0 ? ::fdopendir(listed) : nullptr;
    if (dir == nullptr) {
        if (listed >= 0) {
            ::close(listed);
        }
        return;
    }
    std::vector<std::string> names;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string name = entry->d_name;
        if (name != "." && name != "..") {
            names.push_back(name);
        }
    }
    ::closedir(dir);
    for (const std::string& name : names) {
        if (::unlinkat(folder, name.c_str(), 0) == 0 || (errno != EISDIR && errno != EPERM)) {
            continue;
        }
        const UniqueFd inner(::openat(folder, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (inner.valid()) {
            removeContents(inner.get());
        }
        ::unlinkat(folder, name.c_str(), AT_REMOVEDIR);
    }
}

// Partials whose process is gone: a run that was killed. A live process's partials, and
// anything that does not look like ours, are left alone; a folder goes with what it holds, a link
// is removed, never followed.
std::vector<std::string> removeStalePartials(const FileRoot& folder, const std::string& target) {
    std::vector<std::string> warnings;
    const int listed = folder.openFile(".", O_RDONLY | O_DIRECTORY);
    DIR* dir = listed >= 0 ? ::fdopendir(listed) : nullptr;
    if (dir == nullptr) {
        if (listed >= 0) {
            ::close(listed);
        }
        return warnings;
    }
    std::vector<std::pair<std::string, long>> stale;
    while (const dirent* entry = ::readdir(dir)) {
        const long pid = partialOwner(entry->d_name, target);
        if (pid > 0 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
            stale.emplace_back(entry->d_name, pid);
        }
    }
    ::closedir(dir);
    for (const auto& [name, pid] : stale) {
        struct stat st {};
        if (::fstatat(folder.descriptor(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            continue;
        }
        const bool isFolder = S_ISDIR(st.st_mode);
        if (isFolder) {
            const UniqueFd inner(
                ::openat(folder.descriptor(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (inner.valid()) {
                removeContents(inner.get());
            }
        }
        if ((isFolder || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) &&
            ::unlinkat(folder.descriptor(), name.c_str(), isFolder ? AT_REMOVEDIR : 0) == 0) {
            warnings.push_back(name + ": removed a partial " + (isFolder ? "directory" : "file") +
                               " left by an earlier run (process " + std::to_string(pid) +
                               ") that did not finish");
        }
    }
    return warnings;
}

// The input folder that `folder` is or lies in at any depth, as messages name it: a folder
// registered as an input (an open organ directory, InputMark) or one of `inputs`; nothing when
// there is none. The walk goes up through ".." from the folder's descriptor, so it sees the
// folder that was opened, whatever its name leads to now.
std::optional<std::string> enclosingInput(const FileRoot& folder, const std::vector<std::string>& inputs) {
    std::vector<std::pair<FileIdentity, std::string>> named;
    for (const auto& input : inputs) {
        struct stat st {};
        if (::stat(input.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            named.push_back(
                {{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)}, input});
        }
    }
    // Where the folder is, for the names of the folders above it.
    char real[4096];
    const std::string self = "/proc/self/fd/" + std::to_string(folder.descriptor());
    const ssize_t length = ::readlink(self.c_str(), real, sizeof real);
    std::string where = length > 0 && static_cast<std::size_t>(length) < sizeof real
                            ? std::string(real, static_cast<std::size_t>(length))
                            : folder.path();
    UniqueFd current(::openat(folder.descriptor(), ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
    FileIdentity below;
    while (current.valid()) {
        struct stat st {};
        if (::fstat(current.get(), &st) != 0) {
            return std::nullopt;
        }
        const FileIdentity identity{static_cast<std::uint64_t>(st.st_dev),
                                    static_cast<std::uint64_t>(st.st_ino)};
        if (identity == below) {
            return std::nullopt; // "/": its ".." is itself
        }
        if (MappedFile::isOpenAsInput(identity)) {
            return fileLabel(where);
        }
        for (const auto& [input, name] : named) {
            if (input == identity) {
                return fileLabel(name);
            }
        }
        below = identity;
        current = UniqueFd(::openat(current.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
        where = folderOf(where);
    }
    return std::nullopt;
}

// Refuses `target` when `folder`, the folder it goes into, is or lies inside an input folder.
void refuseInsideInput(const FileRoot& folder, const std::string& target,
                       const std::vector<std::string>& inputs) {
    if (const auto input = enclosingInput(folder, inputs)) {
        throw IoError(fileLabel(target) + ": is inside " + *input +
                      ", a folder that is an input (an organ directory); refusing to write there");
    }
}

// The folder `target` goes into, opened (beneath the target's root when it has one).
std::shared_ptr<const FileRoot> openFolderOf(const RootedPath& target) {
    const std::string folder = folderOf(target.path);
    try {
        return target.at(folder).openFolder();
    } catch (const IoError&) {
        struct stat st {};
        if (!target.root && (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
            throw IoError(fileLabel(target.path) + ": the folder " + folder + " does not exist");
        }
        throw;
    }
}

// A new file `label` in `folder` that one of `inputs` names too: a file this run writes besides
// (a report given the output's name), which does not exist yet either.
void refuseNamedTwice(const FileRoot& folder, const std::string& label,
                      const std::vector<std::string>& inputs) {
    struct stat here {};
    if (::fstat(folder.descriptor(), &here) != 0) {
        return;
    }
    const FileIdentity folderIdentity{static_cast<std::uint64_t>(here.st_dev),
                                      static_cast<std::uint64_t>(here.st_ino)};
    for (const std::string& input : inputs) {
        FileIdentity identity;
        if (fileLabel(input) != label || identityOf(input, identity)) {
            continue; // another name, or a file that exists (compared by identity when the target does)
        }
        const auto slash = input.find_last_of('/');
        const std::string parent = slash == std::string::npos ? "."
                                   : slash == 0               ? "/"
                                                              : input.substr(0, slash);
        FileIdentity parentIdentity;
        if (identityOf(parent, parentIdentity) && parentIdentity == folderIdentity) {
            throw IoError(label + ": named for two files of this run (" + fileLabel(input) +
                          " is written too); give each its own name");
        }
    }
}

// The target's folder, opened, after the checks of checkOutputTarget.
std::shared_ptr<const FileRoot> openTargetFolder(const RootedPath& target,
                                                 const std::vector<std::string>& inputs) {
    const std::string label = fileLabel(target.path);
    if (target.path.empty() || target.path.back() == '/') {
        throw IoError((target.path.empty() ? std::string("(empty path)") : label) +
                      ": not a file name to write");
    }
    const std::shared_ptr<const FileRoot> folder = openFolderOf(target);
    if (::faccessat(folder->descriptor(), ".", W_OK, 0) != 0) {
        throw IoError(label + ": cannot write in the folder " + folderOf(target.path) + ": " +
                      std::strerror(errno));
    }
    // Every file of an input folder is an input, the ones to come as well.
    refuseInsideInput(*folder, target.path, inputs);
    // Beneath a root a link at the target is never followed (it is an existing name, refused at
    // the rename); elsewhere the file it leads to is what the user named.
    struct stat st {};
    if (::fstatat(folder->descriptor(), label.c_str(), &st, target.root ? AT_SYMLINK_NOFOLLOW : 0) != 0) {
        refuseNamedTwice(*folder, label, inputs);
        return folder; // a new file
    }
    if (!S_ISREG(st.st_mode)) {
        throw IoError(notRegularFile(target.path, st.st_mode) + "; refusing to write over it");
    }
    const FileIdentity identity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
    bool isInput = MappedFile::isOpenAsInput(identity);
    for (const auto& input : inputs) {
        FileIdentity other;
        isInput = isInput || (identityOf(input, other) && other == identity);
    }
    if (isInput) {
        throw IoError(label + ": refusing to write over a file that is also an input");
    }
    return folder;
}

// A name of this process for a partial beside `target`, created by `make` (false with errno
// EEXIST: taken, another is tried).
std::string newPartialName(const std::string& label, const std::string& stem,
                           const std::function<bool(const std::string&)>& make) {
    std::random_device random;
    for (int attempt = 0; attempt < 8; ++attempt) {
        char suffix[16];
        std::snprintf(suffix, sizeof suffix, "%06x", random() & 0xFFFFFFu);
        const std::string name = stem + std::to_string(::getpid()) + "." + suffix;
        if (make(name)) {
            return name;
        }
        if (errno != EEXIST) {
            throw IoError(label + ": cannot create " + name + ": " + std::strerror(errno));
        }
    }
    throw IoError(label + ": cannot create a partial beside it");
}

// The rename that puts a finished partial in place; beneath a root (or for a folder) never over
// an existing name.
void renameIntoPlace(const FileRoot& folder, const std::string& partial, const std::string& name,
                     bool replace) {
    if (::renameat2(folder.descriptor(), partial.c_str(), folder.descriptor(), name.c_str(),
                    replace ? 0 : RENAME_NOREPLACE) != 0) {
        throw IoError(name + (errno == EEXIST ? std::string(": appeared while this was written, and is left "
                                                            "as it is; nothing was written")
                                              : ": cannot rename the partial into place: " +
                                                    std::string(std::strerror(errno))));
    }
}

void syncOrThrow(int fd, const std::string& what) {
    if (::fsync(fd) != 0) {
        throw IoError(what + ": fsync failed: " + std::strerror(errno));
    }
}

} // namespace

void checkOutputTarget(const RootedPath& target, const std::vector<std::string>& inputs) {
    openTargetFolder(target, inputs);
}

SafeOutput::SafeOutput(const RootedPath& target, const std::vector<std::string>& inputs)
    : m_target(target.path), m_folder(openTargetFolder(target, inputs)), m_replace(!target.root),
      m_partial(target) {
    m_warnings = removeStalePartials(*m_folder, m_target);
    const int folder = m_folder->descriptor();
    m_partialName =
        newPartialName(fileLabel(m_target), partialPrefix(m_target), [&](const std::string& name) {
            // O_EXCL with O_CREAT never follows a link: a planted link is an existing name, refused.
            m_fd = ::openat(folder, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
            return m_fd >= 0;
        });
    m_partial = m_folder->file(m_partialName);
}

SafeOutput::~SafeOutput() {
    if (m_fd >= 0) {
        ::close(m_fd);
    }
    if (!m_committed) {
        ::unlinkat(m_folder->descriptor(), m_partialName.c_str(), 0);
    }
}

void SafeOutput::write(std::span<const std::byte> bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(m_fd, bytes.data(), bytes.size());
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw IoError(fileLabel(m_target) + ": write failed: " + std::strerror(errno));
        }
        bytes = bytes.subspan(static_cast<std::size_t>(n));
    }
}

void SafeOutput::write(std::string_view text) {
    write(std::as_bytes(std::span(text.data(), text.size())));
}

void SafeOutput::finish() {
    if (m_finished) {
        return;
    }
    if (::fsync(m_fd) != 0) {
        throw IoError(fileLabel(m_target) + ": fsync failed: " + std::strerror(errno));
    }
    const int fd = m_fd;
    m_fd = -1;
    if (::close(fd) != 0) {
        throw IoError(fileLabel(m_target) + ": close failed: " + std::strerror(errno));
    }
    m_finished = true;
}

void SafeOutput::commit() {
    finish();
    renameIntoPlace(*m_folder, m_partialName, fileLabel(m_target), m_replace);
    m_committed = true;
    ::fsync(m_folder->descriptor());
}

SafeFolderOutput::SafeFolderOutput(const RootedPath& target) : m_target(target.path) {
    while (m_target.size() > 1 && m_target.back() == '/') {
        m_target.pop_back(); // "DIR/" names DIR
    }
    const std::string label = fileLabel(m_target);
    m_parent = openFolderOf(target.at(m_target));
    refuseInsideInput(*m_parent, m_target, {});
    struct stat st {};
    if (label.empty() || label == "." || label == ".." ||
        ::fstatat(m_parent->descriptor(), label.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        throw IoError(label + ": already exists; a folder is only ever written under a new name");
    }
    m_warnings = removeStalePartials(*m_parent, m_target);
    const int parent = m_parent->descriptor();
    m_partialName = newPartialName(label, partialStem(m_target) + ".partial-", [&](const std::string& name) {
        return ::mkdirat(parent, name.c_str(), 0755) == 0;
    });
    UniqueFd partial(
        ::openat(parent, m_partialName.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!partial.valid()) {
        const int error = errno;
        ::unlinkat(parent, m_partialName.c_str(), AT_REMOVEDIR);
        throw IoError(label + ": cannot open " + m_partialName + ": " + std::strerror(error));
    }
    m_folders.emplace_back("", std::move(partial));
}

SafeFolderOutput::~SafeFolderOutput() {
    if (!m_committed) {
        removeContents(m_folders.front().second.get());
        ::unlinkat(m_parent->descriptor(), m_partialName.c_str(), AT_REMOVEDIR);
    }
}

int SafeFolderOutput::folderFor(const std::string& relative, std::string& name) {
    const auto slash = relative.find_last_of('/');
    name = slash == std::string::npos ? relative : relative.substr(slash + 1);
    const std::string folder = slash == std::string::npos ? std::string() : relative.substr(0, slash);
    for (const auto& [made, fd] : m_folders) {
        if (made == folder) {
            return fd.get();
        }
    }
    std::string inner;
    const int outer = folderFor(folder, inner);
    if (::mkdirat(outer, inner.c_str(), 0755) != 0 && errno != EEXIST) {
        throw IoError(fileLabel(m_target) + ": cannot create " + folder + ": " + std::strerror(errno));
    }
    UniqueFd fd(::openat(outer, inner.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) {
        throw IoError(fileLabel(m_target) + ": cannot open " + folder + ": " + std::strerror(errno));
    }
    m_folders.emplace_back(folder, std::move(fd));
    return m_folders.back().second.get();
}

UniqueFd SafeFolderOutput::create(const std::string& relative) {
    std::string name;
    const int folder = folderFor(relative, name);
    UniqueFd fd(::openat(folder, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd.valid()) {
        throw IoError(fileLabel(m_target) + ": cannot create " + relative + ": " + std::strerror(errno));
    }
    return fd;
}

bool SafeFolderOutput::link(const MappedFile& from, const std::string& relative) {
    const UniqueFd in = from.openDescriptor();
    if (!in.valid()) {
        return false;
    }
    std::string name;
    const int folder = folderFor(relative, name);
    // Linked through the descriptor, never by name (a name can lead elsewhere by the time it is
    // followed): the new entry is the very file that was opened.
    const std::string self = "/proc/self/fd/" + std::to_string(in.get());
    if (::linkat(AT_FDCWD, self.c_str(), folder, name.c_str(), AT_SYMLINK_FOLLOW) == 0) {
        return true;
    }
    UniqueFd out(::openat(folder, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (out.valid() && ::ioctl(out.get(), FICLONE, in.get()) == 0) {
        return true;
    }
    if (out.valid()) {
        ::unlinkat(folder, name.c_str(), 0);
    }
    return false;
}

void SafeFolderOutput::commit() {
    const std::string label = fileLabel(m_target);
    // Inner folders first, the partial folder itself last: every name it holds is durable.
    for (auto it = m_folders.rbegin(); it != m_folders.rend(); ++it) {
        syncOrThrow(it->second.get(), label + "/" + it->first);
    }
    renameIntoPlace(*m_parent, m_partialName, label, false);
    m_committed = true;
    syncOrThrow(m_parent->descriptor(), label + ": its folder");
}

void writeFileSafely(const RootedPath& target, std::string_view content,
                     const std::vector<std::string>& inputs, std::vector<std::string>* warnings) {
    SafeOutput out(target, inputs);
    if (warnings != nullptr) {
        warnings->insert(warnings->end(), out.warnings().begin(), out.warnings().end());
    }
    out.write(content);
    out.commit();
}

std::string readSmallFile(const RootedPath& rooted, std::uint64_t maxBytes) {
    const std::string& path = rooted.path;
    const UniqueFd fd = rooted.open(O_RDONLY | O_NONBLOCK);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        throw IoError(fileLabel(path) + ": cannot read its size: " + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        throw IoError(notRegularFile(path, st.st_mode));
    }
    if (static_cast<std::uint64_t>(st.st_size) > maxBytes) {
        throw IoError(fileLabel(path) + ": " + groupDigits(static_cast<std::uint64_t>(st.st_size)) +
                      " bytes, more than the " + groupDigits(maxBytes) + " such a file may have");
    }
    std::string content(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t done = 0;
    while (done < content.size()) {
        const ssize_t n = ::read(fd.get(), content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            throw IoError(
                fileLabel(path) + ": read failed: " +
                (n == 0 ? std::string("the file shrank while read") : std::string(std::strerror(errno))));
        }
        done += static_cast<std::size_t>(n);
    }
    return content;
}

} // namespace organ
