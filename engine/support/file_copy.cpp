#include "support/file_copy.h"

#include "support/errors.h"
#include "support/job.h"
#include "support/mapped_file.h"
#include "support/text_format.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace organ {

namespace {

// Big enough that a copy in the kernel is a few calls per GB, small enough that a stop is seen
// within a fraction of a second.
constexpr std::size_t kKernelChunk = 32u << 20;
constexpr std::size_t kBufferChunk = 4u << 20;

} // namespace

void writeAll(int fd, const void* data, std::size_t size, const std::string& what) {
    const auto* p = static_cast<const std::byte*>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd, p, size);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            throw IoError(what + ": write failed: " + std::strerror(n < 0 ? errno : ENOSPC));
        }
        p += n;
        size -= static_cast<std::size_t>(n);
    }
}

bool appendFileRange(const MappedFile& source, std::uint64_t offset, std::uint64_t length, int out,
                     const std::string& what, std::vector<std::byte>& buffer,
                     const std::function<void(std::uint64_t)>& copied, const StopToken* stop) {
    if (offset > source.size() || length > source.size() - offset) {
        throw IoError(fileLabel(source.path()) + ": " + groupDigits(length) + " bytes at " +
                      groupDigits(offset) + " lie past its end");
    }
    const UniqueFd in = source.openDescriptor();
    bool kernel = in.valid();
    for (std::uint64_t done = 0; done < length;) {
        if (stop != nullptr && stop->stopRequested()) {
            return false;
        }
        if (kernel) {
            loff_t from = static_cast<loff_t>(offset + done);
            const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kKernelChunk, length - done));
            const ssize_t moved = ::copy_file_range(in.get(), &from, out, nullptr, n, 0);
            if (moved < 0 && errno == EINTR) {
                continue;
            }
            if (moved > 0) {
                done += static_cast<std::uint64_t>(moved);
                if (copied) {
                    copied(done);
                }
                continue;
            }
            // Refused (another file system, an old kernel, a file it cannot copy), or 0 at an end
            // of file that came early: the plain way from here on, which names a short source.
            // Anything else (no space, the file size limit) is the write's failure.
            if (moved < 0 && errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP &&
                errno != EBADF && errno != EPERM) {
                throw IoError(what + ": write failed: " + std::strerror(errno));
            }
            kernel = false;
            continue;
        }
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kBufferChunk, length - done));
        if (source.isBuffer()) {
            writeAll(out, source.bytes().data() + offset + done, n, what);
        } else {
            buffer.resize(n);
            source.read(offset + done, buffer);
            writeAll(out, buffer.data(), n, what);
        }
        done += n;
        if (copied) {
            copied(done);
        }
    }
    return true;
}

} // namespace organ
