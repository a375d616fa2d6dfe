#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace organ {

class MappedFile;
class StopToken;

// Appends `length` bytes from `offset` of `source`'s file to the file `out` is open on, at its
// position: in the kernel (copy_file_range: no copy through this process, a shared extent where the
// file system clones) while the kernel can, then through `buffer` with pread (never the mapping, so
// nothing stays resident) once it refuses (EXDEV, ENOSYS, EINVAL, EOPNOTSUPP: another file system,
// an old kernel, a special file); any other error of the kernel's copy (no space, the file size
// limit) fails it. A buffer "mapping" is written from memory. `copied` is told the bytes appended so
// far, a chunk at a time. Returns false when `stop` stopped it. Throws IoError naming `what` when a
// write fails, and the source's file when a read does (it got shorter).
bool appendFileRange(const MappedFile& source, std::uint64_t offset, std::uint64_t length, int out,
                     const std::string& what, std::vector<std::byte>& buffer,
                     const std::function<void(std::uint64_t)>& copied = {}, const StopToken* stop = nullptr);

// Writes all of `size` bytes to `fd` at its position, again after a short write or EINTR. Throws
// IoError naming `what`.
void writeAll(int fd, const void* data, std::size_t size, const std::string& what);

} // namespace organ
