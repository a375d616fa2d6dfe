#include "gguf/gguf_file.h"
#include "support/byte_reader.h"
#include "support/errors.h"
#include "support/text_format.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_set>

namespace organ {

// Parses and validates one file. Every count and length is checked against the bytes
// that remain before anything is reserved, so a corrupt header cannot make us allocate.
class GgufParser {
public:
    // `declaredSize`: the size of the file the bytes are the header of (GgufFile::fromHeader), which
    // the data section is checked against; the bytes' own size when absent.
    explicit GgufParser(std::shared_ptr<const MappedFile> file,
                        std::optional<std::uint64_t> declaredSize = {})
        : m_in(file->bytes(), fileLabel(file->path())), m_result(std::make_shared<GgufFile>()),
          m_size(declaredSize.value_or(file->size())) {
        m_result->m_file = std::move(file);
        m_result->m_fileSize = m_size;
    }

    std::shared_ptr<const GgufFile> run() {
        readHeader();
        readMetadata();
        applyAlignment();
        readTensorInfos();
        placeData();
        return m_result;
    }

private:
    void readHeader() {
        if (m_in.size() < 4) {
            throw FormatError(m_in.label() + ": not a GGUF file: only " + std::to_string(m_in.size()) +
                              " bytes, too short for the magic 'GGUF'");
        }
        const auto magic = m_in.read<std::uint32_t>("magic");
        if (magic != 0x46554747u) {
            throw FormatError(m_in.label() + ": not a GGUF file: the first four bytes are not 'GGUF'");
        }
        const std::uint64_t versionAt = m_in.position();
        m_version = m_in.read<std::uint32_t>("version");
        if (m_version < 1 || m_version > 3) {
            m_in.fail(versionAt, "version",
                      "unsupported GGUF version " + std::to_string(m_version) +
                          " (this reader knows versions 1, 2 and 3)");
        }
        m_width = m_version == 1 ? 4 : 8;
        m_result->m_version = m_version;
        m_tensorCountAt = m_in.position();
        m_tensorCount = m_in.readLength(m_width, "tensor count");
        m_kvCountAt = m_in.position();
        m_kvCount = m_in.readLength(m_width, "metadata count");
        checkCount(m_kvCount, m_width + 5, m_kvCountAt, "metadata count", "key-value pairs");
        checkCount(m_tensorCount, m_width + 16, m_tensorCountAt, "tensor count", "tensor infos");
    }

    // A count is plausible only if that many records of the smallest possible size fit
    // in what is left of the file.
    void checkCount(std::uint64_t count, std::uint64_t minRecord, std::uint64_t at, std::string_view what,
                    std::string_view records) const {
        if (count > m_in.remaining() / minRecord) {
            m_in.fail(at, what,
                      groupDigits(count) + " " + std::string(records) + " cannot fit in the " +
                          groupDigits(m_in.remaining()) + " bytes left of the file (" +
                          groupDigits(m_in.size()) + " bytes)");
        }
    }

    void readMetadata() {
        auto& entries = m_result->m_metadata;
        entries.reserve(static_cast<std::size_t>(m_kvCount));
        std::unordered_set<std::string_view> seen;
        seen.reserve(static_cast<std::size_t>(m_kvCount));
        for (std::uint64_t i = 0; i < m_kvCount; ++i) {
            const std::uint64_t at = m_in.position();
            const std::string what = "metadata key " + std::to_string(i);
            const std::string_view key = m_in.readString(m_width, what);
            if (key.empty()) {
                m_in.fail(at, what, "the key is empty");
            }
            if (key.size() > kGgufMaxKeyLength) {
                m_in.fail(at, what, "the key is " + groupDigits(key.size()) + " bytes long (at most 65 535)");
            }
            if (!seen.insert(key).second) {
                m_in.fail(at, "key '" + std::string(key) + "'", "the key appears twice");
            }
            const std::string valueWhat = "key '" + std::string(key) + "'";
            const std::uint64_t typeAt = m_in.position();
            const auto stored = m_in.read<std::uint32_t>(valueWhat + " value type");
            if (!isKnownValueType(stored)) {
                m_in.fail(typeAt, valueWhat, "unknown value type " + std::to_string(stored));
            }
            entries.push_back(
                {std::string(key), readValue(static_cast<ValueType>(stored), valueWhat, 0), at});
        }
    }

    MetaValue readValue(ValueType type, const std::string& what, unsigned depth) {
        const std::uint64_t begin = m_in.position();
        skipValue(type, what, depth);
        const auto payload = m_in.bytes().subspan(static_cast<std::size_t>(begin),
                                                  static_cast<std::size_t>(m_in.position() - begin));
        return MetaValue(type, payload, m_width, m_result->m_file);
    }

    void skipValue(ValueType type, const std::string& what, unsigned depth) {
        const std::uint64_t at = m_in.position();
        if (type == ValueType::Bool) {
            const auto v = m_in.read<std::uint8_t>(what);
            if (v > 1) {
                m_in.fail(at, what, "a bool must be 0 or 1, not " + std::to_string(v));
            }
            return;
        }
        if (const std::size_t fixed = fixedValueSize(type); fixed != 0) {
            m_in.skip(fixed, what);
            return;
        }
        if (type == ValueType::String) {
            m_in.readString(m_width, what);
            return;
        }
        if (depth >= kGgufMaxArrayNesting) {
            m_in.fail(at, what, "arrays nested more than " + std::to_string(kGgufMaxArrayNesting) + " deep");
        }
        const auto stored = m_in.read<std::uint32_t>(what + " element type");
        if (!isKnownValueType(stored)) {
            m_in.fail(at, what, "unknown array element type " + std::to_string(stored));
        }
        const auto element = static_cast<ValueType>(stored);
        const std::uint64_t countAt = m_in.position();
        const std::uint64_t count = m_in.readLength(m_width, what + " array length");
        const std::size_t fixed = fixedValueSize(element);
        const std::uint64_t minElement =
            fixed != 0 ? fixed : (element == ValueType::String ? m_width : 4 + m_width);
        if (count > m_in.remaining() / minElement) {
            m_in.fail(countAt, what,
                      "array of " + groupDigits(count) + " " + std::string(valueTypeName(element)) +
                          " values cannot fit in the " + groupDigits(m_in.remaining()) +
                          " bytes left of the file");
        }
        if (fixed != 0 && element != ValueType::Bool) {
            m_in.skip(count * fixed, what);
            return;
        }
        if (element == ValueType::String) {
            for (std::uint64_t i = 0; i < count; ++i) {
                m_in.readString(m_width, what);
            }
            return;
        }
        for (std::uint64_t i = 0; i < count; ++i) {
            skipValue(element, what, depth + 1);
        }
    }

    void applyAlignment() {
        const MetaValue* value = m_result->find("general.alignment");
        if (value == nullptr) {
            return;
        }
        const auto& entry = *std::find_if(m_result->m_metadata.begin(), m_result->m_metadata.end(),
                                          [](const MetaEntry& e) { return e.key == "general.alignment"; });
        if (value->type() != ValueType::U32) {
            m_in.fail(entry.offset, "key 'general.alignment'",
                      "must be a u32, not " + std::string(valueTypeName(value->type())));
        }
        const std::uint64_t alignment = *value->asUInt();
        if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
            m_in.fail(entry.offset, "key 'general.alignment'",
                      std::to_string(alignment) + " is not a power of two");
        }
        m_result->m_alignment = static_cast<std::uint32_t>(alignment);
    }

    void readTensorInfos() {
        auto& tensors = m_result->m_tensors;
        tensors.reserve(static_cast<std::size_t>(m_tensorCount));
        std::unordered_set<std::string_view> seen;
        seen.reserve(static_cast<std::size_t>(m_tensorCount));
        for (std::uint64_t i = 0; i < m_tensorCount; ++i) {
            TensorInfo info;
            info.infoOffset = m_in.position();
            const std::string what = "tensor " + std::to_string(i);
            info.name = std::string(m_in.readString(m_width, what + " name"));
            if (info.name.empty()) {
                m_in.fail(info.infoOffset, what, "the name is empty");
            }
            const std::string named = "tensor '" + info.name + "'";
            if (info.name.size() > kGgufMaxTensorName) {
                m_in.fail(info.infoOffset, named,
                          "the name is " + std::to_string(info.name.size()) + " bytes long (ggml allows 63)");
            }
            readShape(info, named);
            const std::uint64_t typeAt = m_in.position();
            const auto storedType = m_in.read<std::uint32_t>(named + " type");
            const auto traits = tensorTypeTraits(storedType);
            if (!traits) {
                m_in.fail(typeAt, named, "unknown tensor type " + std::to_string(storedType));
            }
            info.type = traits->type;
            if (info.ne[0] % traits->blockSize != 0) {
                m_in.fail(typeAt, named,
                          "its rows of " + groupDigits(info.ne[0]) + " elements are not a whole number of " +
                              std::string(traits->name) + " blocks of " + std::to_string(traits->blockSize));
            }
            const std::uint64_t blocks = info.elements / traits->blockSize;
            if (blocks > std::numeric_limits<std::uint64_t>::max() / traits->bytesPerBlock) {
                m_in.fail(typeAt, named, "its size in bytes overflows 64 bits");
            }
            info.bytes = blocks * traits->bytesPerBlock;
            const std::uint64_t offsetAt = m_in.position();
            info.relativeOffset = m_in.read<std::uint64_t>(named + " offset");
            if (info.relativeOffset % m_result->m_alignment != 0) {
                m_in.fail(offsetAt, named,
                          "data offset " + groupDigits(info.relativeOffset) +
                              " is not a multiple of the alignment " + std::to_string(m_result->m_alignment));
            }
            tensors.push_back(std::move(info));
            // The view points into the vector's element: reserved above, so it never moves.
            if (!seen.insert(tensors.back().name).second) {
                m_in.fail(tensors.back().infoOffset, named, "the name appears twice");
            }
        }
    }

    void readShape(TensorInfo& info, const std::string& named) {
        const std::uint64_t dimsAt = m_in.position();
        info.nDims = m_in.read<std::uint32_t>(named + " dimension count");
        if (info.nDims > kGgufMaxDims) {
            m_in.fail(dimsAt, named, std::to_string(info.nDims) + " dimensions (ggml allows at most 4)");
        }
        std::uint64_t elements = 1;
        bool overflow = false;
        constexpr auto kMaxElements = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
        for (std::uint32_t d = 0; d < info.nDims; ++d) {
            const std::uint64_t at = m_in.position();
            const std::uint64_t ne = m_in.readLength(m_width, named + " dimension " + std::to_string(d));
            if (ne > kMaxElements) {
                m_in.fail(at, named,
                          "dimension " + std::to_string(d) + " is " + groupDigits(ne) +
                              ", which ggml reads as negative");
            }
            info.ne[d] = ne;
            if (ne != 0 && elements > kMaxElements / ne) {
                overflow = true;
            }
            elements *= ne;
        }
        if (overflow) {
            m_in.fail(dimsAt, named, "its element count (" + info.shapeText() + ") overflows 64 bits");
        }
        info.elements = elements;
    }

    void placeData() {
        m_result->m_headerSize = m_in.position();
        const std::uint64_t alignment = m_result->m_alignment;
        const std::uint64_t end = m_in.position();
        const std::uint64_t dataOffset = end + (alignment - end % alignment) % alignment;
        m_result->m_dataOffset = dataOffset;
        auto& tensors = m_result->m_tensors;
        if (tensors.empty()) {
            return;
        }
        if (dataOffset > m_size) {
            m_in.fail(end, "data section",
                      "starts at byte " + groupDigits(dataOffset) + ", past the end of the file (" +
                          groupDigits(m_size) + " bytes)");
        }
        const std::uint64_t dataSize = m_size - dataOffset;
        for (auto& tensor : tensors) {
            if (tensor.relativeOffset > dataSize || tensor.bytes > dataSize - tensor.relativeOffset) {
                constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
                const bool overflows = tensor.relativeOffset > kMax - dataOffset ||
                                       tensor.bytes > kMax - dataOffset - tensor.relativeOffset;
                const std::string ends =
                    overflows ? "data ends beyond 64-bit offsets"
                              : "data ends at byte " +
                                    groupDigits(dataOffset + tensor.relativeOffset + tensor.bytes);
                throw FormatError(m_in.label() + ": tensor '" + tensor.name + "': " + ends +
                                  ", past the end of the file (" + groupDigits(m_size) + " bytes)");
            }
            tensor.fileOffset = dataOffset + tensor.relativeOffset;
        }
        std::vector<const TensorInfo*> byOffset;
        byOffset.reserve(tensors.size());
        for (const auto& tensor : tensors) {
            byOffset.push_back(&tensor);
        }
        std::sort(byOffset.begin(), byOffset.end(), [](const TensorInfo* a, const TensorInfo* b) {
            return a->relativeOffset != b->relativeOffset ? a->relativeOffset < b->relativeOffset
                                                          : a->bytes < b->bytes;
        });
        for (std::size_t i = 1; i < byOffset.size(); ++i) {
            const TensorInfo& previous = *byOffset[i - 1];
            const TensorInfo& current = *byOffset[i];
            if (current.relativeOffset < previous.relativeOffset + previous.bytes && current.bytes != 0) {
                throw FormatError(m_in.label() + ": tensor '" + current.name + "': data at byte " +
                                  groupDigits(current.fileOffset) + " overlaps tensor '" + previous.name +
                                  "' (bytes " + groupDigits(previous.fileOffset) + " to " +
                                  groupDigits(previous.fileOffset + previous.bytes) + ")");
            }
        }
    }

    ByteReader m_in;
    std::shared_ptr<GgufFile> m_result;
    std::uint64_t m_size;
    std::uint32_t m_version = 0;
    unsigned m_width = 8;
    std::uint64_t m_tensorCount = 0;
    std::uint64_t m_kvCount = 0;
    std::uint64_t m_tensorCountAt = 0;
    std::uint64_t m_kvCountAt = 0;
};

std::shared_ptr<const GgufFile> GgufFile::open(const RootedPath& path) {
    return GgufParser(MappedFile::open(path)).run();
}

std::shared_ptr<const GgufFile> GgufFile::fromBytes(std::string label, std::span<const std::byte> bytes) {
    return GgufParser(MappedFile::fromBuffer(std::move(label), bytes)).run();
}

std::shared_ptr<const GgufFile> GgufFile::fromHeader(std::string label, std::span<const std::byte> header,
                                                     std::uint64_t fileSize) {
    return GgufParser(MappedFile::fromBuffer(std::move(label), header), fileSize).run();
}

const MetaValue* GgufFile::find(std::string_view key) const {
    for (const auto& entry : m_metadata) {
        if (entry.key == key) {
            return &entry.value;
        }
    }
    return nullptr;
}

const TensorInfo* GgufFile::findTensor(std::string_view name) const {
    for (const auto& tensor : m_tensors) {
        if (tensor.name == name) {
            return &tensor;
        }
    }
    return nullptr;
}

std::span<const std::byte> GgufFile::tensorData(const TensorInfo& tensor) const {
    if (tensor.fileOffset + tensor.bytes > m_file->size()) {
        throw FormatError(fileLabel(path()) + ": holds no data for tensor '" + tensor.name + "'");
    }
    return m_file->bytes().subspan(static_cast<std::size_t>(tensor.fileOffset),
                                   static_cast<std::size_t>(tensor.bytes));
}

std::string TensorInfo::shapeText() const {
    std::string text;
    for (std::uint32_t d = 0; d < nDims; ++d) {
        if (d != 0) {
            text += " × ";
        }
        text += std::to_string(ne[d]);
    }
    return text.empty() ? "scalar" : text;
}

} // namespace organ
