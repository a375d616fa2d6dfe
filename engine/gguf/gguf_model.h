#pragma once

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace organ {

// A model as the user sees it: one GGUF file, or every part of a split model
// (NAME-00001-of-0000N.gguf …), checked against split.count and split.tensors.count.
// Metadata comes from the first part; tensors from all parts, each tagged with its shard.
// Or a model whose header and tensor data live apart (an organ directory): the header a GGUF of it
// would have, and one file per tensor.
class GgufModel {
public:
    // Opening any part of a split model opens the whole set (every part beneath the path's root
    // when it has one).
    static std::shared_ptr<const GgufModel> open(const RootedPath& path);
    // A model of one parsed file (GgufFile::fromBytes): a part of a split model is refused,
    // since its other parts are files.
    static std::shared_ptr<const GgufModel> fromFile(std::shared_ptr<const GgufFile> file);
    // The model of a split set's parts, first part first, each checked against split.no,
    // split.count and split.tensors.count (opened files, or headers from GgufFile::fromHeader).
    static std::shared_ptr<const GgufModel> fromParts(std::vector<std::shared_ptr<const GgufFile>> parts);
    // One part of a split set by itself, its tensors only, while the other parts are absent:
    // measured shard by shard (organ measure --shard). Its metadata is that part's own.
    static std::shared_ptr<const GgufModel> partAlone(std::shared_ptr<const GgufFile> file);
    // A model of `header` (GgufFile::fromHeader) whose tensors' bytes are in `data`, one per tensor
    // in the header's order: `offset` bytes into its file, and as long as the tensor. Throws
    // FormatError naming the file when one is too short.
    // `promised`: the SHA-256 the tensor's bytes must have (its manifest's), checked by whoever
    // copies or computes from them (tensorSource).
    struct TensorFile {
        std::shared_ptr<const MappedFile> mapping;
        std::uint64_t offset = 0;
        std::optional<PromisedSha256> promised;
    };
    static std::shared_ptr<const GgufModel> fromTensorFiles(std::shared_ptr<const GgufFile> header,
                                                            std::vector<TensorFile> data);

    const std::string& path() const { return m_shards.front()->path(); }
    const std::vector<std::shared_ptr<const GgufFile>>& shards() const { return m_shards; }
    const GgufFile& primary() const { return *m_shards.front(); }
    const std::vector<MetaEntry>& metadata() const { return primary().metadata(); }
    const std::vector<TensorInfo>& tensors() const { return m_tensors; }
    const MetaValue* find(std::string_view key) const { return primary().find(key); }
    const TensorInfo* findTensor(std::string_view name) const; // by name, in constant time
    std::span<const std::byte> tensorData(const TensorInfo& tensor) const;
    // The mapping tensorData() lies in.
    const std::shared_ptr<const MappedFile>& tensorMapping(const TensorInfo& tensor) const;
    // The tensor's bytes to copy or compute from: the data, its mapping, and for a tensor file the
    // SHA-256 it was promised.
    TensorSource tensorSource(const TensorInfo& tensor) const;
    // Every file the model's bytes are read from: its parts, or its header's stand-in and the
    // tensor files (what an output must never be).
    std::vector<std::shared_ptr<const MappedFile>> files() const;
    // Whether the tensors live in files of their own (an organ directory).
    bool hasTensorFiles() const { return !m_tensorFiles.empty(); }
    // The size of the model as one GGUF (of the parts together).
    std::uint64_t fileSize() const;

    // general.architecture, or "" when absent.
    std::string architecture() const;
    // general.name, or the file name without ".gguf".
    std::string name() const;
    // "{arch}.KEY" as an unsigned integer, e.g. archValue("block_count").
    std::optional<std::uint64_t> archValue(std::string_view key) const;

private:
    std::vector<std::shared_ptr<const GgufFile>> m_shards;
    void indexTensors();

    std::vector<TensorInfo> m_tensors;
    std::vector<TensorFile> m_tensorFiles;                 // fromTensorFiles: one per tensor, in order
    std::unordered_map<std::string, std::size_t> m_byName; // grafts and validation look up per tensor
};

// "dir/name-00002-of-00005.gguf" -> {"dir/name", 2, 5}; false when the name is not a split part.
struct SplitName {
    std::string prefix;
    unsigned part = 0;
    unsigned count = 0;
};
bool parseSplitName(const std::string& path, SplitName& out);
std::string splitPartPath(const std::string& prefix, unsigned part, unsigned count);
// Whether a file name ends in ".gguf", in any case.
bool hasGgufExtension(std::string_view path);

} // namespace organ
