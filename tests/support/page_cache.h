#pragma once

// What of a file is in the page cache, for tests of reading ahead.

#include <cstdint>
#include <fcntl.h>
#include <optional>
#include <string>
#include <sys/mman.h>
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

// Writes the file's pages back and drops them from the page cache; false where they stay (a tmpfs
// keeps a file's pages in memory), with nothing to read ahead.
inline bool evictFromPageCache(const std::string& path, std::uint64_t bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) {
        return false;
    }
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    return residentPages(path, bytes).value_or(0) <= bytes / page / 2;
}

} // namespace organ::testing
