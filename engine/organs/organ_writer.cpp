#include "organs/organ_directory.h"

#include "organs/manifest_values.h"

#include "support/bounded_json.h"
#include "support/errors.h"
#include "support/file_copy.h"
#include "support/safe_files.h"
#include "support/sha256.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace organ {

namespace {

void syncFd(int fd, const std::string& what) {
    if (::fsync(fd) != 0) {
        throw IoError(what + ": cannot sync: " + std::strerror(errno));
    }
}

std::uint64_t tensorByteSize(TensorType type, const std::array<std::uint64_t, kGgufMaxDims>& ne,
                             std::uint32_t nDims) {
    std::uint64_t elements = 1;
    for (std::uint32_t d = 0; d < nDims; ++d) {
        elements *= ne[d];
    }
    return storedBytes(type, elements);
}

// Where a tensor's file comes from when its bytes are a whole tensor file already (an organ
// directory's, with the same header): that file, to be linked rather than copied.
bool sameTensorFile(const TensorSource& source, const std::string& header) {
    if (!source.mapping || source.generate || source.mapping->isBuffer()) {
        return false;
    }
    const auto all = source.mapping->bytes();
    return source.bytes.data() == all.data() + header.size() &&
           all.size() == header.size() + source.bytes.size() &&
           std::equal(header.begin(), header.end(), reinterpret_cast<const char*>(all.data()));
}

// Copies a tensor's bytes to the end of `out`: in the kernel when it can (appendFileRange).
void copyData(const TensorSource& source, int out, std::vector<std::byte>& buffer, const std::string& what,
              const StopToken* stop) {
    const auto data = source.bytes;
    if (!source.mapping) {
        writeAll(out, data.data(), data.size(), what);
        return;
    }
    const auto base = static_cast<std::uint64_t>(data.data() - source.mapping->bytes().data());
    appendFileRange(*source.mapping, base, data.size(), out, what, buffer, {}, stop);
}

// The SHA-256 of `length` bytes from `offset` of the file `fd` is open on: what a written tensor
// file holds, read back through a buffer.
std::string sha256OfWritten(int fd, std::uint64_t offset, std::uint64_t length,
                            std::vector<std::byte>& buffer, const std::string& what) {
    Sha256 sha;
    for (std::uint64_t at = 0; at < length;) {
        buffer.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kOrganChunk, length - at)));
        const ssize_t n = ::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(offset + at));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            throw IoError(what + ": cannot read it back" +
                          (n == 0 ? std::string(": it is shorter than written")
                                  : ": " + std::string(std::strerror(errno))));
        }
        sha.update(std::span(buffer).first(static_cast<std::size_t>(n)));
        at += static_cast<std::uint64_t>(n);
    }
    return sha.finishHex();
}

// Writes one tensor's file at `file` (in the partial directory of `out`) and returns the SHA-256
// of its data: linked or cloned from an unchanged tensor file, copied, or generated. What it
// holds must be what its source was promised to hold.
std::string writeTensorFile(const TensorToWrite& t, SafeFolderOutput& directory, const std::string& file,
                            const std::string& what, std::vector<std::byte>& buffer, const StopToken* stop) {
    const std::uint64_t bytes = tensorByteSize(t.type, t.ne, t.nDims);
    const std::string header = tensorFileHeader(t.name, t.nDims, t.ne, t.type);
    if (sameTensorFile(t.source, header) && directory.link(*t.source.mapping, file)) {
        // The new name is the very file mapped: its bytes are read through the mapping's file.
        const UniqueFd linked = t.source.mapping->openDescriptor();
        const std::string sha256 = sha256OfWritten(linked.get(), header.size(), bytes, buffer, what);
        if (t.source.promised) {
            t.source.promised->check(sha256);
        }
        return sha256;
    }
    const UniqueFd out = directory.create(file);
    writeAll(out.get(), header.data(), header.size(), what);
    std::string sha256;
    if (t.source.generate) {
        Sha256 sha;
        for (std::uint64_t at = 0; at < bytes && !(stop != nullptr && stop->stopRequested());
             at += kOrganChunk) {
            buffer.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kOrganChunk, bytes - at)));
            t.source.generate(at, buffer);
            writeAll(out.get(), buffer.data(), buffer.size(), what);
            sha.update(buffer);
        }
        sha256 = sha.finishHex();
    } else {
        if (t.source.bytes.size() != bytes) {
            throw FormatError(what + ": the source holds " + std::to_string(t.source.bytes.size()) +
                              " bytes, the tensor needs " + std::to_string(bytes));
        }
        copyData(t.source, out.get(), buffer, what, stop);
        if (stop != nullptr && stop->stopRequested()) {
            return {};
        }
        sha256 = sha256OfWritten(out.get(), header.size(), bytes, buffer, what);
        if (t.source.promised) {
            t.source.promised->check(sha256);
        }
    }
    syncFd(out.get(), what);
    return sha256;
}

nlohmann::ordered_json manifestEntry(const TensorToWrite& t, const std::string& file,
                                     const TensorAnatomy& anatomy, const std::string& sha256) {
    nlohmann::ordered_json shape = nlohmann::ordered_json::array();
    for (std::uint32_t d = 0; d < t.nDims; ++d) {
        shape.push_back(t.ne[d]);
    }
    return {
        {"name", isValidUtf8(t.name) ? nlohmann::ordered_json(t.name)
                                     : nlohmann::ordered_json{{"hex", hexOf(t.name)}}},
        {"file", file},
        {"system", std::string(systemName(anatomy.system))},
        {"role", anatomy.role},
        {"layer", anatomy.layer ? nlohmann::ordered_json(*anatomy.layer) : nlohmann::ordered_json(nullptr)},
        {"dtype", std::string(tensorTypeName(t.type))},
        {"shape", shape},
        {"bytes", tensorByteSize(t.type, t.ne, t.nDims)},
        {"sha256", sha256}};
}

// Writes every tensor file and the manifest into the partial directory of `out`; false when
// stopped.
bool writeOrgans(const GgufWriteSpec& spec, SafeFolderOutput& out, const std::string& name,
                 const OrganSource& source, const nlohmann::json* measurement, const ProgressFn& progress,
                 const StopToken* stop) {
    std::uint32_t alignment = kGgufDefaultAlignment;
    nlohmann::ordered_json metadata = nlohmann::ordered_json::array();
    for (const auto& [key, value] : spec.metadata) {
        // A split model becomes one directory, and then one file: its split keys go.
        if (key.starts_with("split.")) {
            continue;
        }
        if (key == "general.alignment" && value.asUInt()) {
            alignment = static_cast<std::uint32_t>(*value.asUInt());
        }
        metadata.push_back(metaValueToManifest(key, value));
    }
    nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
    std::vector<std::string> taken;
    std::uint64_t total = 0;
    for (const TensorToWrite& t : spec.tensors) {
        total += tensorByteSize(t.type, t.ne, t.nDims);
    }
    std::uint64_t done = 0;
    std::vector<std::byte> buffer;
    for (const TensorToWrite& t : spec.tensors) {
        if (stop != nullptr && stop->stopRequested()) {
            return false;
        }
        const TensorAnatomy anatomy = classifyTensor(t.name);
        const std::string folder = organFolder(anatomy.system);
        const std::string file = folder + "/" + organFileName(t.name, taken);
        const std::string sha256 = writeTensorFile(t, out, file, name + "/" + file, buffer, stop);
        if (stop != nullptr && stop->stopRequested()) {
            return false;
        }
        tensors.push_back(manifestEntry(t, file, anatomy, sha256));
        done += tensorByteSize(t.type, t.ne, t.nDims);
        if (progress) {
            progress({done, total, "writing organs"});
        }
    }
    nlohmann::ordered_json sourceJson{{"file", source.file},
                                      {"gguf_version", source.ggufVersion},
                                      {"alignment", source.alignment.value_or(alignment)},
                                      {"shards", source.shards}};
    if (!source.made.empty()) {
        sourceJson["made_by"] = source.made;
    }
    nlohmann::ordered_json manifest{{"format", kOrganFormat},
                                    {"version", kOrganFormatVersion},
                                    {"source", std::move(sourceJson)},
                                    {"metadata", std::move(metadata)},
                                    {"tensors", std::move(tensors)}};
    if (measurement != nullptr) {
        manifest["measurement"] = *measurement;
    }
    // Never a directory that cannot be opened again.
    if (const std::uint64_t values = jsonValueCount(manifest); values > kMaxManifestValues) {
        throw FormatError(name + ": its manifest would hold " + groupDigits(values) +
                          " values, more than the " + groupDigits(kMaxManifestValues) +
                          " an organ directory holds");
    }
    const std::string text = manifest.dump(1) + "\n";
    if (text.size() > kMaxManifestBytes) {
        throw FormatError(name + ": its manifest would be " + groupDigits(text.size()) +
                          " bytes, more than the " + groupDigits(kMaxManifestBytes) +
                          " an organ directory holds");
    }
    const UniqueFd manifestFd = out.create(kOrganManifest);
    writeAll(manifestFd.get(), text.data(), text.size(), name + "/manifest.json");
    syncFd(manifestFd.get(), name + "/manifest.json");
    return true;
}

} // namespace

std::string organFolder(System system) {
    switch (system) {
    case System::Skeleton:
        return "skeleton";
    case System::Organ:
        return "organs";
    case System::Embed:
        return "embed";
    case System::Norm:
        return "norm";
    case System::Adapter:
        return "adapters";
    case System::Other:
        return "other";
    }
    return "other";
}

std::string organFileName(const std::string& tensorName, std::vector<std::string>& taken) {
    std::string stem = tensorName;
    if (stem.ends_with(".weight") && stem.size() > 7) {
        stem.resize(stem.size() - 7);
    }
    for (char& c : stem) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) {
            c = '_';
        }
    }
    if (stem.empty()) {
        stem = "tensor";
    }
    stem.resize(std::min<std::size_t>(stem.size(), 180));
    auto lower = [](std::string s) {
        std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
        return s;
    };
    std::string name = stem + ".bin";
    for (int n = 2; std::find(taken.begin(), taken.end(), lower(name)) != taken.end(); ++n) {
        name = stem + "-" + std::to_string(n) + ".bin";
    }
    taken.push_back(lower(name));
    return name;
}

JobResult writeOrganDirectory(const GgufWriteSpec& spec, const RootedPath& directory,
                              const OrganSource& source, const nlohmann::json* measurement,
                              const ProgressFn& progress, const StopToken* stop) {
    std::string path = directory.path;
    while (path.size() > 1 && path.back() == '/') {
        path.pop_back(); // "DIR/" names DIR
    }
    const std::string name = fileLabel(path);
    try {
        // Whatever goes wrong from here, the destructor removes the partial directory.
        SafeFolderOutput out(directory.at(path));
        if (!writeOrgans(spec, out, name, source, measurement, progress, stop) ||
            (stop != nullptr && !stop->beginCommit())) {
            return JobResult::cancelled();
        }
        out.commit();
        JobResult result = JobResult::ok();
        result.warnings = out.warnings();
        return result;
    } catch (const std::exception& e) {
        return JobResult::failed(e.what());
    }
}

GgufWriteSpec specFromModel(const GgufModel& model) {
    GgufWriteSpec spec;
    for (const MetaEntry& entry : model.metadata()) {
        if (!entry.key.starts_with("split.")) {
            spec.metadata.emplace_back(entry.key, entry.value);
        }
    }
    for (const TensorInfo& t : model.tensors()) {
        spec.tensors.push_back({t.name, t.type, t.nDims, t.ne, model.tensorSource(t)});
    }
    return spec;
}

JobResult extractOrgans(const GgufModel& model, const RootedPath& directory,
                        const nlohmann::json* measurement, const ProgressFn& progress,
                        const StopToken* stop) {
    OrganSource source;
    source.file = fileLabel(model.path());
    source.ggufVersion = model.primary().version();
    source.alignment = model.primary().alignment();
    source.shards = model.shards().size();
    source.made = "extract";
    return writeOrganDirectory(specFromModel(model), directory, source, measurement, progress, stop);
}

bool isOrganDirectoryTarget(const std::string& output) {
    return !hasGgufExtension(output);
}

nlohmann::json extractionToJson(const GgufModel& model, const std::string& directory) {
    return {{"output", directory}, {"tensors", model.tensors().size()}};
}

} // namespace organ
