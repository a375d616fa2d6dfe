#pragma once

// What of a file is in the page cache, for tests of reading ahead.

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <linux/magic.h>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <vector>

namespace organ::testing {

// How many of the pages of `bytes` bytes of the file from `offset` (a multiple of the page size)
// are in memory; none when that cannot be told (errno says why).
inline std::optional<std::size_t> residentPages(const std::string& path, std::uint64_t bytes,
                                                std::uint64_t offset = 0) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) {
        return std::nullopt;
    }
    void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(offset));
    ::close(fd);
    if (map == MAP_FAILED) {
        return std::nullopt;
    }
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> in((bytes + page - 1) / page);
    const bool told = ::mincore(map, bytes, in.data()) == 0;
    ::munmap(map, bytes);
    if (!told) {
        return std::nullopt;
    }
    std::size_t resident = 0;
    for (const unsigned char c : in) {
        resident += c & 1;
    }
    return resident;
}

// Whether the folder's file system keeps its files' pages in memory (a tmpfs or ramfs), where
// nothing can be evicted from the page cache.
inline bool keepsPagesInMemory(const std::string& folder) {
    struct statfs fs {};
    if (::statfs(folder.c_str(), &fs) != 0) {
        return false;
    }
    return fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC;
}

// Why a test that evicts pages skips when folderOnDisk() finds no folder.
inline constexpr const char* kNoFolderOnDisk =
    "the current folder, /var/tmp and /tmp keep their files' pages in memory (a tmpfs): nothing to evict "
    "and read ahead";

// The first of the current folder, /var/tmp and /tmp whose files' pages can be evicted; empty when
// every one keeps them in memory.
inline std::string folderOnDisk() {
    char current[4096];
    std::vector<std::string> candidates;
    if (::getcwd(current, sizeof current) != nullptr) {
        candidates.emplace_back(current);
    }
    candidates.emplace_back("/var/tmp");
    candidates.emplace_back("/tmp");
    for (const std::string& folder : candidates) {
        if (::access(folder.c_str(), W_OK) == 0 && !keepsPagesInMemory(folder)) {
            return folder;
        }
    }
    return {};
}

// Writes the file's pages back and drops them from the page cache; what went wrong when they could
// not be dropped (more than half of them still in memory afterwards included).
inline std::optional<std::string> evictFromPageCache(const std::string& path, std::uint64_t bytes) {
    const auto failed = [&](const char* what, int error) {
        return std::optional<std::string>(path + ": " + what + ": " + std::strerror(error));
    };
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) {
        return failed("open", errno);
    }
    if (::fdatasync(fd) != 0) {
        const int error = errno;
        ::close(fd);
        return failed("fdatasync", error);
    }
    const int advised = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    if (advised != 0) {
        return failed("posix_fadvise", advised);
    }
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const auto resident = residentPages(path, bytes);
    if (!resident) {
        return failed("mincore", errno);
    }
    if (*resident > bytes / page / 2) {
        return path + ": " + std::to_string(*resident) + " of its " + std::to_string(bytes / page) +
               " pages stayed in the page cache after POSIX_FADV_DONTNEED";
    }
    return std::nullopt;
}

} // namespace organ::testing
