#pragma once

#include "gguf/meta_value.h"
#include "gguf/tensor_type.h"
#include "support/mapped_file.h"

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace organ {

inline constexpr std::uint32_t kGgufDefaultAlignment = 32;
// The largest general.alignment organ writes (a power of two; ggml uses 32). Read files may
// declare more; a plan or a file that asks to write more is refused, so that padding never
// grows with a declared number.
inline constexpr std::uint32_t kGgufMaxAlignment = 1u << 16;
inline constexpr std::uint32_t kGgufMaxDims = 4;      // ggml's GGML_MAX_DIMS
inline constexpr std::size_t kGgufMaxTensorName = 63; // ggml's GGML_MAX_NAME minus its terminator
inline constexpr std::size_t kGgufMaxKeyLength = 65535;
inline constexpr unsigned kGgufMaxArrayNesting = 16;

struct TensorInfo {
    std::string name;
    TensorType type = TensorType::F32;
    std::uint32_t nDims = 0;
    std::array<std::uint64_t, kGgufMaxDims> ne{1, 1, 1, 1}; // ggml order: ne[0] varies fastest
    std::uint64_t elements = 0;
    std::uint64_t bytes = 0;
    std::uint64_t relativeOffset = 0; // from the start of the data section, as stored
    std::uint64_t fileOffset = 0;     // absolute, in the file that holds it
    std::uint64_t infoOffset = 0;     // where its tensor-info record starts
    std::uint32_t shard = 0;          // which file of a split model holds it

    // "64 × 172" in ggml order.
    std::string shapeText() const;
};

// One parsed GGUF file: header, metadata and tensor infos, all validated against the
// file's size. Tensor data stays in the mapping and is never touched by parsing.
class GgufFile {
public:
    // Maps and parses; throws FormatError (malformed) or IoError (cannot open).
    static std::shared_ptr<const GgufFile> open(const RootedPath& path);
    // Parses bytes in memory as the file `label` (see MappedFile::fromBuffer); throws FormatError.
    static std::shared_ptr<const GgufFile> fromBytes(std::string label, std::span<const std::byte> bytes);
    // Parses the header of a file of `fileSize` bytes whose data lies elsewhere (an organ
    // directory's tensor files): offsets are checked against `fileSize`, and tensorData() of
    // this file throws, since it holds none. Throws FormatError.
    static std::shared_ptr<const GgufFile> fromHeader(std::string label, std::span<const std::byte> header,
                                                      std::uint64_t fileSize);

    const std::string& path() const { return m_file->path(); }
    std::uint32_t version() const { return m_version; }
    std::uint32_t alignment() const { return m_alignment; }
    std::uint64_t fileSize() const { return m_fileSize; }
    std::uint64_t dataOffset() const { return m_dataOffset; }
    // Bytes before the data section's padding: header, metadata and tensor infos.
    std::uint64_t headerSize() const { return m_headerSize; }
    const std::vector<MetaEntry>& metadata() const { return m_metadata; }
    const std::vector<TensorInfo>& tensors() const { return m_tensors; }
    const MetaValue* find(std::string_view key) const;
    const TensorInfo* findTensor(std::string_view name) const;
    std::span<const std::byte> tensorData(const TensorInfo& tensor) const;
    const std::shared_ptr<const MappedFile>& mapping() const { return m_file; }

private:
    friend class GgufParser;
    std::shared_ptr<const MappedFile> m_file;
    std::uint32_t m_version = 0;
    std::uint32_t m_alignment = kGgufDefaultAlignment;
    std::uint64_t m_fileSize = 0;
    std::uint64_t m_dataOffset = 0;
    std::uint64_t m_headerSize = 0;
    std::vector<MetaEntry> m_metadata;
    std::vector<TensorInfo> m_tensors;
};

} // namespace organ
