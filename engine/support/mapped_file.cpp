#include "support/mapped_file.h"

#include "support/errors.h"
#include "support/text_format.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace organ {
namespace {

std::mutex& registryMutex() {
    static std::mutex mutex;
    return mutex;
}

std::vector<FileIdentity>& registry() {
    static std::vector<FileIdentity> open;
    return open;
}

// An empty file cannot be mapped; it still needs a valid pointer for an empty span.
const std::byte kEmpty[1] = {};

void registerInput(const FileIdentity& identity) {
    std::lock_guard lock(registryMutex());
    registry().push_back(identity);
}

void unregisterInput(const FileIdentity& identity) {
    std::lock_guard lock(registryMutex());
    auto& open = registry();
    if (auto it = std::find(open.begin(), open.end(), identity); it != open.end()) {
        open.erase(it);
    }
}

} // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const RootedPath& rooted) {
    // Without blocking: opening a FIFO for reading would otherwise wait for a writer forever.
    UniqueFd fd = rooted.open(O_RDONLY | O_NONBLOCK);
    auto file = map(fd, rooted.path);
    ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK); // reads of a regular file
    file->m_fd = fd.release();
    return file;
}

std::shared_ptr<const MappedFile> MappedFile::mapBeneath(UniqueFd fd, RootedPath path,
                                                         std::shared_ptr<const void> owner) {
    auto file = map(fd, path.path);
    file->m_reopen = std::move(path);
    file->m_owner = std::move(owner);
    return file; // `fd` closes here: the mapping stays
}

std::shared_ptr<MappedFile> MappedFile::map(const UniqueFd& fd, const std::string& path) {
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        throw IoError(fileLabel(path) + ": cannot read its size: " + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        throw IoError(notRegularFile(path, st.st_mode));
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    const std::byte* bytes = kEmpty;
    if (size != 0) {
        void* data = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_SHARED, fd.get(), 0);
        if (data == MAP_FAILED) {
            throw IoError(fileLabel(path) + ": cannot map " + groupDigits(size) +
                          " bytes: " + std::strerror(errno));
        }
        bytes = static_cast<const std::byte*>(data);
    }
    // Made once the mapping exists: its destructor unmaps and unregisters exactly it.
    std::shared_ptr<MappedFile> file(new MappedFile);
    file->m_path = path;
    file->m_size = size;
    file->m_data = bytes;
    file->m_identity = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
    registerInput(file->m_identity);
    return file;
}

UniqueFd MappedFile::openDescriptor() const {
    if (m_buffer) {
        return UniqueFd();
    }
    if (m_fd >= 0) {
        UniqueFd fd(::fcntl(m_fd, F_DUPFD_CLOEXEC, 0));
        if (!fd.valid()) {
            throw IoError(fileLabel(m_path) + ": cannot open it again: " + std::strerror(errno));
        }
        return fd;
    }
    UniqueFd fd = m_reopen->open(O_RDONLY | O_NONBLOCK);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        FileIdentity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)} !=
            m_identity) {
        throw IoError(fileLabel(m_path) + ": was replaced by another file while it was read");
    }
    ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
    return fd;
}

std::shared_ptr<const MappedFile> MappedFile::fromBuffer(std::string label,
                                                         std::span<const std::byte> bytes) {
    std::shared_ptr<MappedFile> file(new MappedFile);
    file->m_path = std::move(label);
    file->m_size = bytes.size();
    if (bytes.empty()) {
        file->m_data = kEmpty;
    } else {
        file->m_buffer.reset(new std::byte[bytes.size()]);
        std::copy(bytes.begin(), bytes.end(), file->m_buffer.get());
        file->m_data = file->m_buffer.get();
    }
    return file;
}

MappedFile::~MappedFile() {
    if (m_fd >= 0) {
        ::close(m_fd);
    }
    if (m_buffer) {
        return; // in memory: not mapped, not registered
    }
    if (m_size != 0) {
        ::munmap(const_cast<std::byte*>(m_data), static_cast<std::size_t>(m_size));
    }
    unregisterInput(m_identity);
}

InputMark::InputMark(const FileIdentity& identity) : m_identity(identity) {
    registerInput(m_identity);
}

InputMark::~InputMark() {
    unregisterInput(m_identity);
}

void MappedFile::release(std::uint64_t offset, std::uint64_t length) const {
    if (m_size == 0 || length == 0 || m_buffer) {
        return;
    }
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    // Whole pages around the range: a page shared with the next range only faults in again.
    // The kernel maps large page-cache folios (up to 2 MiB) whole on a fault, pages before
    // the range included; reaching 2 MiB back releases those too.
    constexpr std::uint64_t kFolioSlack = 2u << 20;
    const std::uint64_t begin = (offset - std::min(offset, kFolioSlack)) / page * page;
    const std::uint64_t end = std::min((offset + length + page - 1) / page * page, m_size);
    if (end > begin) {
        ::madvise(const_cast<std::byte*>(m_data) + begin, static_cast<std::size_t>(end - begin),
                  MADV_DONTNEED);
    }
}

void MappedFile::read(std::uint64_t offset, std::span<std::byte> out) const {
    if (m_buffer) {
        if (offset > m_size || out.size() > m_size - offset) {
            throw IoError(fileLabel(m_path) + ": read failed at byte " + groupDigits(offset) +
                          ": unexpected end of file");
        }
        std::copy_n(m_data + offset, out.size(), out.begin());
        return;
    }
    // A file mapped beneath a folder keeps no descriptor: one is opened for this read.
    const UniqueFd reopened = m_fd >= 0 ? UniqueFd() : openDescriptor();
    const int fd = m_fd >= 0 ? m_fd : reopened.get();
    while (!out.empty()) {
        const ssize_t n = ::pread(fd, out.data(), out.size(), static_cast<off_t>(offset));
        if (n <= 0) {
            if (n < 0 && errno == EINTR) {
                continue;
            }
            throw IoError(
                fileLabel(m_path) + ": read failed at byte " + groupDigits(offset) + ": " +
                (n == 0 ? std::string("unexpected end of file") : std::string(std::strerror(errno))));
        }
        out = out.subspan(static_cast<std::size_t>(n));
        offset += static_cast<std::uint64_t>(n);
    }
}

bool MappedFile::isOpenAsInput(const FileIdentity& identity) {
    std::lock_guard lock(registryMutex());
    const auto& open = registry();
    return std::find(open.begin(), open.end(), identity) != open.end();
}

bool identityOf(const std::string& path, FileIdentity& out) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        return false;
    }
    out = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
    return true;
}

} // namespace organ
