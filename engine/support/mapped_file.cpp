#include "support/mapped_file.h"

#include "support/errors.h"
#include "support/text_format.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
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

// The mappings a SIGBUS may come from, in slots that the signal handler reads without a lock
// (watch() and unwatch() hold registryMutex()). An organ directory maps a file per tensor, hence
// many; the slots are static (untouched ones take no memory) and used lowest first. A mapping
// made when all are taken is not watched: a cut then kills the process, as it would anyway.
constexpr std::size_t kGuardSlots = 1u << 17;
struct GuardSlot {
    std::atomic<std::uintptr_t> begin{0}; // 0: free
    std::atomic<std::uintptr_t> end{0};   // the mapping's end, a whole page
    std::atomic<bool> cut{false};
};
GuardSlot g_slots[kGuardSlots];
std::atomic<std::size_t> g_slotsUsed{0}; // slots at or past it were never taken
std::atomic<std::uint64_t> g_cutEvents{0};
std::uintptr_t g_pageSize = 4096;
struct sigaction g_previousBus {};

struct GuardOwners {
    std::vector<const MappedFile*> files; // by slot, for the messages
    std::vector<int> free;
};

GuardOwners& guardOwners() {
    static GuardOwners owners;
    return owners;
}

// A read past the end of a file cut short beneath its mapping: zeros mapped from the page read
// to the mapping's end (mmap is a system call, safe here), the slot marked, the read done again
// on return. Any other SIGBUS goes where it went before.
void onBusError(int signal, siginfo_t* info, void* context) {
    const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
    const std::size_t used = g_slotsUsed.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < used; ++i) {
        const std::uintptr_t begin = g_slots[i].begin.load(std::memory_order_acquire);
        const std::uintptr_t end = g_slots[i].end.load(std::memory_order_acquire);
        if (begin == 0 || address < begin || address >= end) {
            continue;
        }
        const std::uintptr_t page = address & ~(g_pageSize - 1);
        void* zeros = ::mmap(reinterpret_cast<void*>(page), end - page, PROT_READ,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (zeros != MAP_FAILED) {
            g_slots[i].cut.store(true, std::memory_order_release);
            g_cutEvents.fetch_add(1, std::memory_order_acq_rel);
            return;
        }
        break;
    }
    if ((g_previousBus.sa_flags & SA_SIGINFO) != 0 && g_previousBus.sa_sigaction != nullptr) {
        g_previousBus.sa_sigaction(signal, info, context);
        return;
    }
    if (g_previousBus.sa_handler != SIG_DFL && g_previousBus.sa_handler != SIG_IGN) {
        g_previousBus.sa_handler(signal);
        return;
    }
    // The fault comes again on return, with the default action: the process ends as it would have.
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    ::sigaction(SIGBUS, &fallback, nullptr);
}

int watchMapping(const MappedFile* file, const std::byte* data, std::uint64_t size) {
    static std::once_flag installed;
    std::call_once(installed, [] {
        g_pageSize = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
        struct sigaction action {};
        action.sa_sigaction = onBusError;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        ::sigaction(SIGBUS, &action, &g_previousBus);
    });
    std::lock_guard lock(registryMutex());
    GuardOwners& owners = guardOwners();
    int slot = -1;
    if (!owners.free.empty()) {
        slot = owners.free.back();
        owners.free.pop_back();
    } else if (const std::size_t next = g_slotsUsed.load(std::memory_order_relaxed); next < kGuardSlots) {
        slot = static_cast<int>(next);
        owners.files.push_back(nullptr);
    } else {
        return -1;
    }
    const auto begin = reinterpret_cast<std::uintptr_t>(data);
    GuardSlot& s = g_slots[slot];
    s.cut.store(false, std::memory_order_relaxed);
    s.end.store(begin + (size + g_pageSize - 1) / g_pageSize * g_pageSize, std::memory_order_relaxed);
    s.begin.store(begin, std::memory_order_release);
    owners.files[static_cast<std::size_t>(slot)] = file;
    if (static_cast<std::size_t>(slot) >= g_slotsUsed.load(std::memory_order_relaxed)) {
        g_slotsUsed.store(static_cast<std::size_t>(slot) + 1, std::memory_order_release);
    }
    return slot;
}

void unwatchMapping(int slot) {
    if (slot < 0) {
        return;
    }
    std::lock_guard lock(registryMutex());
    GuardSlot& s = g_slots[slot];
    s.begin.store(0, std::memory_order_release);
    s.end.store(0, std::memory_order_release);
    GuardOwners& owners = guardOwners();
    owners.files[static_cast<std::size_t>(slot)] = nullptr;
    owners.free.push_back(slot);
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
    if (size != 0) {
        file->m_guard = watchMapping(file.get(), bytes, size);
    }
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
    unwatchMapping(m_guard); // before the range may be mapped again by anyone
    if (m_size != 0) {
        ::munmap(const_cast<std::byte*>(m_data), static_cast<std::size_t>(m_size));
    }
    unregisterInput(m_identity);
}

std::uint64_t MappedFile::cutEvents() {
    return g_cutEvents.load(std::memory_order_acquire);
}

bool MappedFile::wasCutShort() const {
    if (m_guard >= 0 && g_slots[m_guard].cut.load(std::memory_order_acquire)) {
        return true;
    }
    struct stat st {};
    return m_fd >= 0 && ::fstat(m_fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) < m_size;
}

std::string MappedFile::cutShortText() const {
    std::string now;
    struct stat st {};
    if (m_fd >= 0 && ::fstat(m_fd, &st) == 0) {
        now = groupDigits(static_cast<std::uint64_t>(st.st_size)) + " bytes now, ";
    }
    return fileLabel(m_path) + " was cut short while it was read (" + now + groupDigits(m_size) +
           " when opened)";
}

std::string MappedFile::cutShortMessage() {
    std::lock_guard lock(registryMutex());
    std::string message;
    for (const MappedFile* file : guardOwners().files) {
        if (file != nullptr && file->wasCutShort()) {
            message += (message.empty() ? "" : "; ") + file->cutShortText();
        }
    }
    return message.empty() ? "a file was cut short while it was read" : message;
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
