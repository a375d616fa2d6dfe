#include "support/safe_files.h"

#include "support/errors.h"
#include "support/mapped_file.h"
#include "support/text_format.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace organ {
namespace {

std::string folderOf(const std::string& path) {
    const auto slash = path.find_last_of('/');
    if (slash == std::string::npos) {
        return ".";
    }
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseOf(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A partial of `target` is "<target>.partial.<pid>.<random>" (a file, SafeOutput's) or
// "<target>.partial-<pid>-<n>" (a folder, an organ directory being written).
std::string partialPrefix(const std::string& target) {
    return baseOf(target) + ".partial.";
}

// The process that made a partial named `name` of `target`, 0 when the name is not one.
long partialOwner(const std::string& name, const std::string& target) {
    const std::string prefix = baseOf(target) + ".partial";
    if (!name.starts_with(prefix) || name.size() < prefix.size() + 3) {
        return 0;
    }
    const char separator = name[prefix.size()];
    if (separator != '.' && separator != '-') {
        return 0;
    }
    const std::string rest = name.substr(prefix.size() + 1);
    const auto end = rest.find(separator);
    if (end == std::string::npos || end == 0 || end + 1 == rest.size() ||
        rest.find_first_not_of("0123456789") != end || end > 9) {
        return 0;
    }
    return std::strtol(rest.substr(0, end).c_str(), nullptr, 10);
}

// The input `folder` lies in, itself or a folder above it, as messages name it: an open folder
// (an organ directory being read, OpenFolder), or a folder among `inputs`. Nothing when none.
std::optional<std::string> enclosingInput(const std::string& folder, const std::vector<std::string>& inputs) {
    std::vector<std::pair<FileIdentity, std::string>> folders;
    for (const auto& input : inputs) {
        struct stat st {};
        if (::stat(input.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            folders.push_back(
                {{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)}, input});
        }
    }
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::canonical(folder, ec);
    if (ec) {
        return std::nullopt;
    }
    for (std::filesystem::path p = real;; p = p.parent_path()) {
        FileIdentity identity;
        if (identityOf(p.string(), identity)) {
            if (MappedFile::isOpenAsInput(identity)) {
                return fileLabel(p.string());
            }
            for (const auto& [input, name] : folders) {
                if (input == identity) {
                    return fileLabel(name);
                }
            }
        }
        if (p == p.parent_path()) {
            return std::nullopt;
        }
    }
}

} // namespace

std::vector<std::string> removeStalePartials(const std::string& target) {
    std::vector<std::string> warnings;
    const std::string folder = folderOf(target);
    DIR* dir = ::opendir(folder.c_str());
    if (dir == nullptr) {
        return warnings;
    }
    std::vector<std::pair<std::string, long>> stale;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string name = entry->d_name;
        const long pid = partialOwner(name, target);
        // A live process's partials, and anything that does not look like ours, are left alone.
        if (pid <= 0 || pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) {
            continue;
        }
        stale.emplace_back(name, pid);
    }
    ::closedir(dir);
    for (const auto& [name, pid] : stale) {
        const std::string path = folder + "/" + name;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0) {
            continue;
        }
        std::error_code ec;
        // A folder's contents go with it; a link is removed, never followed.
        const bool removed = S_ISDIR(st.st_mode) ? std::filesystem::remove_all(path, ec) > 0 && !ec
                             : S_ISREG(st.st_mode) || S_ISLNK(st.st_mode) ? ::unlink(path.c_str()) == 0
                                                                          : false;
        if (removed) {
            warnings.push_back(
                fileLabel(path) + ": removed a partial " + (S_ISDIR(st.st_mode) ? "directory" : "file") +
                " left by an earlier run (process " + std::to_string(pid) + ") that did not finish");
        }
    }
    return warnings;
}

void checkOutputTarget(const std::string& target, const std::vector<std::string>& inputs) {
    const std::string label = fileLabel(target);
    if (target.empty() || target.back() == '/') {
        throw IoError((target.empty() ? std::string("(empty path)") : label) + ": not a file name to write");
    }
    const std::string folder = folderOf(target);
    struct stat st {};
    if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        throw IoError(label + ": the folder " + folder + " does not exist");
    }
    if (::access(folder.c_str(), W_OK) != 0) {
        throw IoError(label + ": cannot write in the folder " + folder + ": " + std::strerror(errno));
    }
    // Every file of an input folder is an input, the ones to come as well.
    if (const auto input = enclosingInput(folder, inputs)) {
        throw IoError(label + ": is inside " + *input +
                      ", a folder that is an input (an organ directory); refusing to write there");
    }
    if (::stat(target.c_str(), &st) != 0) {
        return; // a new file
    }
    if (!S_ISREG(st.st_mode)) {
        throw IoError(label + ": " + (S_ISDIR(st.st_mode) ? "is a folder" : "is not a regular file") +
                      "; refusing to write over it");
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
}

SafeOutput::SafeOutput(std::string target, const std::vector<std::string>& inputs)
    : m_target(std::move(target)) {
    checkOutputTarget(m_target, inputs);
    m_warnings = removeStalePartials(m_target);
    std::random_device random;
    for (int attempt = 0; attempt < 8 && m_fd < 0; ++attempt) {
        char suffix[16];
        std::snprintf(suffix, sizeof suffix, "%06x", random() & 0xFFFFFFu);
        m_partial =
            folderOf(m_target) + "/" + partialPrefix(m_target) + std::to_string(::getpid()) + "." + suffix;
        // O_EXCL with O_CREAT never follows a link: a planted link is an existing name, refused.
        m_fd = ::open(m_partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (m_fd < 0 && errno != EEXIST) {
            throw IoError(fileLabel(m_target) + ": cannot create " + fileLabel(m_partial) + ": " +
                          std::strerror(errno));
        }
    }
    if (m_fd < 0) {
        throw IoError(fileLabel(m_target) + ": cannot create a partial file beside it");
    }
}

SafeOutput::~SafeOutput() {
    if (m_fd >= 0) {
        ::close(m_fd);
    }
    if (!m_committed) {
        ::unlink(m_partial.c_str());
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
    if (::rename(m_partial.c_str(), m_target.c_str()) != 0) {
        throw IoError(fileLabel(m_target) +
                      ": cannot rename the partial file into place: " + std::strerror(errno));
    }
    m_committed = true;
    syncFolder(folderOf(m_target));
}

void writeFileSafely(const std::string& target, std::string_view content,
                     const std::vector<std::string>& inputs, std::vector<std::string>* warnings) {
    SafeOutput out(target, inputs);
    if (warnings != nullptr) {
        warnings->insert(warnings->end(), out.warnings().begin(), out.warnings().end());
    }
    out.write(content);
    out.commit();
}

std::string readSmallFile(const std::string& path, std::uint64_t maxBytes) {
    const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (!fd.isOpen()) {
        throw IoError(fileLabel(path) + ": cannot open: " + std::strerror(errno));
    }
    return readSmallFile(fd, fileLabel(path), maxBytes);
}

std::string readSmallFile(const FileDescriptor& fd, const std::string& label, std::uint64_t maxBytes) {
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        throw IoError(label + ": is not a regular file");
    }
    if (static_cast<std::uint64_t>(st.st_size) > maxBytes) {
        throw IoError(label + ": " + groupDigits(static_cast<std::uint64_t>(st.st_size)) +
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
                label + ": read failed: " +
                (n == 0 ? std::string("the file shrank while read") : std::string(std::strerror(errno))));
        }
        done += static_cast<std::size_t>(n);
    }
    return content;
}

bool syncFolder(const std::string& folder) {
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    const bool synced = ::fsync(fd) == 0;
    ::close(fd);
    return synced;
}

} // namespace organ
