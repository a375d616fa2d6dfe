#pragma once

#include "anatomy/anatomy.h"
#include "gguf/gguf_model.h"
#include "gguf/gguf_writer.h"
#include "support/job.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace organ {

// An organ directory: a model taken apart into one file per tensor, sorted by anatomical
// system into skeleton/ organs/ embed/ norm/ adapters/ other/, with manifest.json holding
// everything else (docs/organ-directory.md, docs/organ-manifest.schema.json). A tensor file is
// [name_len:u32][name][n_dims:u32][ne:u64 × n_dims][dtype:u32][data], little-endian, the data
// exactly as in the GGUF.
inline constexpr const char* kOrganManifest = "manifest.json";

struct OrganTensor {
    std::string name;
    std::string file; // relative to the directory, "organs/blk_0_ffn_gate.bin"
    System system = System::Other;
    std::string role;
    std::optional<std::uint32_t> layer;
    TensorType type = TensorType::F32;
    std::uint32_t nDims = 1;
    std::array<std::uint64_t, kGgufMaxDims> ne{1, 1, 1, 1};
    std::uint64_t bytes = 0;
    std::string sha256; // of the data, lowercase hex
    // Where the data starts in the tensor file: after the header.
    std::uint64_t headerBytes() const;
};

// The folder of a system and the file name of a tensor ("blk.0.ffn_gate.weight" →
// "blk_0_ffn_gate.bin"): letters, digits, '_' and '-' only, unique within the directory even on
// a file system that ignores case (`taken` holds the lowercase names used so far).
std::string organFolder(System system);
std::string organFileName(const std::string& tensorName, std::vector<std::string>& taken);

// Takes `model` apart into `directory`, which must not exist yet. The files are written into a
// partial directory beside it (copying tensor data in the kernel where it can) and renamed into
// place only when all are written and synced: a directory at `directory` is always complete.
// `measurement`, when given, is stored in the manifest as it is. Cancelled or failed: nothing
// is left behind.
JobResult extractOrgans(const GgufModel& model, const std::string& directory,
                        const nlohmann::json* measurement = nullptr, const ProgressFn& progress = {},
                        const StopToken* stop = nullptr);

// An organ directory read back: the manifest parsed and checked (types, names, paths that stay
// inside the directory, tensor files that exist with the right size). Throws FormatError naming
// the directory, the entry and what is wrong; IoError when it cannot be read.
class OrganDirectory {
public:
    static OrganDirectory open(const std::string& directory);
    // Whether `path` is a folder holding a manifest (how the window and the CLI tell a
    // directory from a GGUF).
    static bool looksLikeOne(const std::string& path);

    const std::string& path() const { return m_path; }
    std::uint32_t ggufVersion() const { return m_ggufVersion; }
    const std::vector<std::pair<std::string, MetaValue>>& metadata() const { return m_metadata; }
    const std::vector<OrganTensor>& tensors() const { return m_tensors; }
    const nlohmann::json& measurement() const { return m_measurement; }
    std::string filePath(const OrganTensor& tensor) const;

    // Reads every tensor file once: its header against the manifest, its data against the
    // SHA-256. Throws FormatError naming the first file that does not match. Cancelled: false.
    bool verify(const ProgressFn& progress = {}, const StopToken* stop = nullptr) const;
    // What writeGguf needs to assemble the model: the metadata and the tensors, their bytes
    // read from the tensor files as the writer asks for them.
    GgufWriteSpec writeSpec() const;

private:
    std::string m_path;
    std::uint32_t m_ggufVersion = 3;
    std::vector<std::pair<std::string, MetaValue>> m_metadata;
    std::vector<OrganTensor> m_tensors;
    nlohmann::json m_measurement;
};

// verify() then writeGguf: the GGUF the directory was extracted from, byte for byte (GGUF v3).
JobResult assembleOrgans(const OrganDirectory& directory, const std::string& output,
                         const ProgressFn& progress = {}, const StopToken* stop = nullptr);

} // namespace organ
