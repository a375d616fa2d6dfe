#pragma once

#include "support/rooted_files.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace organ {

// Identity of a file on disk (device and inode), so that the writer can refuse to
// overwrite a file that is open as an input, whatever path or hard link names it.
struct FileIdentity {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};

// A read-only memory mapping of a whole file. Opening maps the file; nothing is read
// until the caller touches the bytes. While any MappedFile is alive its identity is
// registered, and isOpenAsInput() reports it.
class MappedFile {
public:
    // Opened beneath the path's root when it has one (support/rooted_files.h). The descriptor
    // stays open with the mapping.
    static std::shared_ptr<const MappedFile> open(const RootedPath& path);
    // The regular file `fd` is open on (`path`, opened beneath its root), mapped; the descriptor
    // is closed at once, so that a model of 36 000 tensor files keeps none of them open. Reads
    // and openDescriptor() open `path` again, checked to be the same file. `owner` lives as long
    // as the mapping (an organ directory's InputMark).
    static std::shared_ptr<const MappedFile> mapBeneath(UniqueFd fd, RootedPath path,
                                                        std::shared_ptr<const void> owner = {});
    // A copy of `bytes` in memory standing in for a file named `label`: no file, no identity
    // (never an input), exactly bytes.size() bytes (so that a sanitizer sees any read past
    // them). For fuzzing the reader and for tests.
    static std::shared_ptr<const MappedFile> fromBuffer(std::string label, std::span<const std::byte> bytes);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::string& path() const { return m_path; }
    std::uint64_t size() const { return m_size; }
    std::span<const std::byte> bytes() const { return {m_data, static_cast<std::size_t>(m_size)}; }
    FileIdentity identity() const { return m_identity; }
    // A descriptor of the file for the caller (copy_file_range, FICLONE, linkat): the mapping's
    // own duplicated, or the file opened again beneath its root and checked to be the same file.
    // Not valid for a buffer. Throws IoError when the file is gone or was replaced.
    UniqueFd openDescriptor() const;
    bool isBuffer() const { return m_buffer != nullptr; }

    // Tells the kernel that a range will not be needed soon, so that streaming a
    // 100 GB model through the writer keeps the resident set small.
    void release(std::uint64_t offset, std::uint64_t length) const;

    // Copies bytes with pread, without touching the mapping: streaming large ranges this way
    // avoids a page fault per 4 KiB. Throws IoError when the read fails.
    void read(std::uint64_t offset, std::span<std::byte> out) const;

    static bool isOpenAsInput(const FileIdentity& identity);

    // A file cut short while mapped (truncated by another program) would kill the process with
    // SIGBUS on the first read of a page past its new end. Instead the pages from there to the
    // mapping's end are replaced by zeros, the file is marked, and the count of such events
    // grows: a job that read while it grew must not trust what it read (the writer then writes
    // nothing). cutEvents() is that count; cutShortMessage() names the marked files still mapped
    // ("model.gguf was cut short while it was read (1 000 000 bytes now, 2 000 000 when opened)").
    static std::uint64_t cutEvents();
    static std::string cutShortMessage();
    // Marked so, or shorter now than when it was mapped (a kernel that keeps a large folio across
    // the cut gives zeros there without SIGBUS).
    bool wasCutShort() const;
    // "model.gguf was cut short while it was read (1 000 000 bytes now, 2 000 000 when opened)".
    std::string cutShortText() const;

private:
    MappedFile() = default;
    static std::shared_ptr<MappedFile> map(const UniqueFd& fd, const std::string& path);
    std::string m_path;
    const std::byte* m_data = nullptr;
    std::uint64_t m_size = 0;
    FileIdentity m_identity;
    int m_fd = -1;
    std::unique_ptr<std::byte[]> m_buffer; // fromBuffer: the bytes, owned
    std::optional<RootedPath> m_reopen;    // mapBeneath: where the file is opened again
    std::shared_ptr<const void> m_owner;
    int m_guard = -1; // its slot among the mappings watched for a cut (mapping_guard)
};

// Bytes of a mapped file.
struct FileSpan {
    std::shared_ptr<const MappedFile> file;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
};

// Registers an identity as an input (MappedFile::isOpenAsInput) for as long as it lives: an
// organ directory's folder while the directory or a model of it is open, so that nothing is
// written inside it (checkOutputTarget).
class InputMark {
public:
    explicit InputMark(const FileIdentity& identity);
    ~InputMark();
    InputMark(const InputMark&) = delete;
    InputMark& operator=(const InputMark&) = delete;

private:
    FileIdentity m_identity;
};

// The identity of an existing path, or nullopt-like {0,0} when it does not exist.
bool identityOf(const std::string& path, FileIdentity& out);

} // namespace organ
