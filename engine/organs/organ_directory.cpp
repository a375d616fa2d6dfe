#include "organs/organ_directory.h"

#include "organs/manifest_values.h"

#include "support/errors.h"
#include "support/safe_files.h"
#include "support/sha256.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace organ {

namespace {

constexpr std::size_t kChunk = 4u << 20; // bytes read or copied at a time
constexpr const char* kFormat = "organ-directory";
constexpr int kVersion = 1;

std::string label(const std::string& directory) {
    return fileLabel(directory);
}

void writeAll(int fd, const void* data, std::size_t size, const std::string& what) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd, p, size);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            throw IoError(what + ": cannot write: " + std::strerror(errno));
        }
        p += n;
        size -= static_cast<std::size_t>(n);
    }
}

void syncFd(int fd, const std::string& what) {
    if (::fsync(fd) != 0) {
        throw IoError(what + ": cannot sync: " + std::strerror(errno));
    }
}

template <typename T> void appendLe(std::string& out, T value) {
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        out += static_cast<char>((static_cast<std::uint64_t>(value) >> (8 * i)) & 0xFF);
    }
}

std::string tensorHeader(const std::string& name, std::uint32_t nDims,
                         const std::array<std::uint64_t, kGgufMaxDims>& ne, TensorType type) {
    std::string header;
    appendLe<std::uint32_t>(header, static_cast<std::uint32_t>(name.size()));
    header += name;
    appendLe<std::uint32_t>(header, nDims);
    for (std::uint32_t d = 0; d < nDims; ++d) {
        appendLe<std::uint64_t>(header, ne[d]);
    }
    appendLe<std::uint32_t>(header, static_cast<std::uint32_t>(type));
    return header;
}

std::uint64_t tensorByteSize(TensorType type, const std::array<std::uint64_t, kGgufMaxDims>& ne,
                             std::uint32_t nDims) {
    std::uint64_t elements = 1;
    for (std::uint32_t d = 0; d < nDims; ++d) {
        elements *= ne[d];
    }
    return storedBytes(type, elements);
}

// Relative, inside the directory: no absolute path, no "..", nothing but the safe characters.
bool safeRelativePath(const std::string& path) {
    if (path.empty() || path.front() == '/' || path.size() > 4096) {
        return false;
    }
    for (const char c : path) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/')) {
            return false;
        }
    }
    std::size_t start = 0;
    while (start <= path.size()) {
        const std::size_t end = std::min(path.find('/', start), path.size());
        const std::string_view part(path.data() + start, end - start);
        if (part.empty() || part == "." || part == "..") {
            return false;
        }
        start = end + 1;
    }
    return true;
}

// Copies `size` bytes at `offset` of `in` to the end of `out`: in the kernel when it can,
// through the mapping otherwise.
void copyData(int in, std::uint64_t offset, int out, std::span<const std::byte> mapped,
              const std::string& what, const StopToken* stop) {
    std::uint64_t done = 0;
    bool kernel = in >= 0;
    while (done < mapped.size()) {
        if (stop != nullptr && stop->stopRequested()) {
            return;
        }
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, mapped.size() - done));
        if (kernel) {
            loff_t from = static_cast<loff_t>(offset + done);
            const ssize_t copied = ::copy_file_range(in, &from, out, nullptr, n, 0);
            if (copied > 0) {
                done += static_cast<std::uint64_t>(copied);
                continue;
            }
            if (copied < 0 && errno == EINTR) {
                continue;
            }
            kernel = false; // EXDEV, ENOSYS, EINVAL…: the plain way from here on
            continue;
        }
        writeAll(out, mapped.data() + done, n, what);
        done += n;
    }
}

} // namespace

std::uint64_t OrganTensor::headerBytes() const {
    return 4 + name.size() + 4 + 8 * std::uint64_t(nDims) + 4;
}

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

namespace {

// Where a tensor's file comes from when its bytes are a whole tensor file already (an organ
// directory's, with the same header): that file, to be linked rather than copied.
bool sameTensorFile(const TensorSource& source, const std::string& header) {
    if (!source.mapping || source.generate || source.mapping->descriptor() < 0) {
        return false;
    }
    const auto all = source.mapping->bytes();
    return source.bytes.data() == all.data() + header.size() &&
           all.size() == header.size() + source.bytes.size() &&
           std::equal(header.begin(), header.end(), reinterpret_cast<const char*>(all.data()));
}

// The SHA-256 of a span of a mapped file, read with pread through a small buffer so that memory
// stays flat (reading the mapping would make every page resident); of the bytes when not a file.
// `stop`, when set, ends it early (the digest is then of a part).
std::string digestOf(const TensorSource& source, std::vector<std::byte>& buffer,
                     const std::atomic<bool>* stop = nullptr) {
    Sha256 sha;
    const auto data = source.bytes;
    const std::uint64_t base =
        source.mapping ? static_cast<std::uint64_t>(data.data() - source.mapping->bytes().data()) : 0;
    for (std::uint64_t at = 0; at < data.size() && !(stop != nullptr && *stop);) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, data.size() - at));
        if (source.mapping) {
            buffer.resize(n);
            source.mapping->read(base + at, buffer);
            sha.update(buffer);
        } else {
            sha.update(data.subspan(static_cast<std::size_t>(at), n));
        }
        at += n;
    }
    return sha.finishHex();
}

} // namespace

JobResult writeOrganDirectory(const GgufWriteSpec& spec, const RootedPath& directory,
                              const OrganSource& source, const nlohmann::json* measurement,
                              const ProgressFn& progress, const StopToken* stop) {
    const std::string name = label(directory.path);
    try {
        // Whatever goes wrong from here, the destructor removes the partial directory.
        SafeFolderOutput out(directory);
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
                return JobResult::cancelled();
            }
            const std::uint64_t bytes = tensorByteSize(t.type, t.ne, t.nDims);
            const TensorAnatomy anatomy = classifyTensor(t.name);
            const std::string folder = organFolder(anatomy.system);
            const std::string file = folder + "/" + organFileName(t.name, taken);
            const std::string what = name + "/" + file;
            const std::string header = tensorHeader(t.name, t.nDims, t.ne, t.type);
            std::string sha256;
            if (sameTensorFile(t.source, header) && out.link(*t.source.mapping, file)) {
                sha256 = digestOf(t.source, buffer);
            } else {
                const UniqueFd fd = out.create(file);
                writeAll(fd.get(), header.data(), header.size(), what);
                if (t.source.generate) {
                    Sha256 sha;
                    for (std::uint64_t at = 0; at < bytes; at += kChunk) {
                        if (stop != nullptr && stop->stopRequested()) {
                            break;
                        }
                        buffer.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, bytes - at)));
                        t.source.generate(at, buffer);
                        writeAll(fd.get(), buffer.data(), buffer.size(), what);
                        sha.update(buffer);
                    }
                    sha256 = sha.finishHex();
                } else {
                    if (t.source.bytes.size() != bytes) {
                        throw FormatError(what + ": the source holds " +
                                          std::to_string(t.source.bytes.size()) +
                                          " bytes, the tensor needs " + std::to_string(bytes));
                    }
                    const int in = t.source.mapping ? t.source.mapping->descriptor() : -1;
                    const std::uint64_t offset =
                        t.source.mapping ? static_cast<std::uint64_t>(t.source.bytes.data() -
                                                                      t.source.mapping->bytes().data())
                                         : 0;
                    copyData(in, offset, fd.get(), t.source.bytes, what, stop);
                    sha256 = digestOf(t.source, buffer);
                }
                syncFd(fd.get(), what);
            }
            if (stop != nullptr && stop->stopRequested()) {
                return JobResult::cancelled();
            }
            nlohmann::ordered_json shape = nlohmann::ordered_json::array();
            for (std::uint32_t d = 0; d < t.nDims; ++d) {
                shape.push_back(t.ne[d]);
            }
            nlohmann::ordered_json entry{{"name", isValidUtf8(t.name)
                                                      ? nlohmann::ordered_json(t.name)
                                                      : nlohmann::ordered_json{{"hex", hexOf(t.name)}}},
                                         {"file", file},
                                         {"system", std::string(systemName(anatomy.system))},
                                         {"role", anatomy.role},
                                         {"layer", anatomy.layer ? nlohmann::ordered_json(*anatomy.layer)
                                                                 : nlohmann::ordered_json(nullptr)},
                                         {"dtype", std::string(tensorTypeName(t.type))},
                                         {"shape", shape},
                                         {"bytes", bytes},
                                         {"sha256", sha256}};
            tensors.push_back(std::move(entry));
            done += bytes;
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
        nlohmann::ordered_json manifest{{"format", kFormat},
                                        {"version", kVersion},
                                        {"source", std::move(sourceJson)},
                                        {"metadata", std::move(metadata)},
                                        {"tensors", std::move(tensors)}};
        if (measurement != nullptr) {
            manifest["measurement"] = *measurement;
        }
        const std::string text = manifest.dump(1) + "\n";
        const UniqueFd manifestFd = out.create(kOrganManifest);
        writeAll(manifestFd.get(), text.data(), text.size(), name + "/manifest.json");
        syncFd(manifestFd.get(), name + "/manifest.json");
        if (stop != nullptr && !stop->beginCommit()) {
            return JobResult::cancelled();
        }
        out.commit();
        return JobResult::ok();
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
        TensorToWrite w{t.name, t.type, t.nDims, t.ne, {}};
        w.source.bytes = model.tensorData(t);
        w.source.mapping = model.tensorMapping(t);
        spec.tensors.push_back(std::move(w));
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

bool OrganDirectory::looksLikeOne(const RootedPath& path) {
    const UniqueFd folder(path.tryOpen(O_PATH | O_DIRECTORY));
    struct stat st {};
    return folder.valid() &&
           ::fstatat(folder.get(), kOrganManifest, &st, path.root ? AT_SYMLINK_NOFOLLOW : 0) == 0 &&
           S_ISREG(st.st_mode);
}

OrganDirectory OrganDirectory::open(const RootedPath& directory) {
    const std::string name = label(directory.path);
    // Every file below is reached through the directory's descriptor, never through a link.
    const std::shared_ptr<const FileRoot> folder = directory.openFolder();
    struct stat st {};
    if (::fstatat(folder->descriptor(), kOrganManifest, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode)) {
        throw FormatError(name + ": no manifest.json (not an organ directory, or an unfinished one)");
    }
    nlohmann::json manifest;
    try {
        manifest = nlohmann::json::parse(readSmallFile(folder->file(kOrganManifest), 1u << 30));
    } catch (const nlohmann::json::exception& e) {
        throw FormatError(name + "/manifest.json: not JSON: " + e.what());
    }
    auto bad = [&](const std::string& what) { return FormatError(name + "/manifest.json: " + what); };
    if (!manifest.is_object() || manifest.value("format", std::string()) != kFormat) {
        throw bad("\"format\" is not \"organ-directory\"");
    }
    if (!manifest.contains("version") || manifest["version"] != kVersion) {
        throw bad("version " + manifest.value("version", nlohmann::json()).dump() +
                  " is not supported (only 1)");
    }
    OrganDirectory out;
    out.m_path = directory.path;
    out.m_folder = folder;
    if (manifest.contains("source") && manifest["source"].is_object()) {
        out.m_ggufVersion = manifest["source"].value("gguf_version", 3u);
    }
    if (!manifest.contains("metadata") || !manifest["metadata"].is_array()) {
        throw bad("\"metadata\" must be a list");
    }
    for (std::size_t i = 0; i < manifest["metadata"].size(); ++i) {
        const auto& e = manifest["metadata"][i];
        const std::string where = name + "/manifest.json: metadata[" + std::to_string(i) + "]";
        if (!e.is_object() || !e.contains("key")) {
            throw FormatError(where + ": needs a \"key\"");
        }
        std::string key;
        if (e["key"].is_string()) {
            key = e["key"].get<std::string>();
        } else if (e["key"].is_object() && e["key"].contains("hex") && e["key"]["hex"].is_string() &&
                   bytesOfHex(e["key"]["hex"].get<std::string>())) {
            key = *bytesOfHex(e["key"]["hex"].get<std::string>());
        } else {
            throw FormatError(where + ": \"key\" must be a string");
        }
        out.m_metadata.emplace_back(key, metaValueFromManifest(e, where + " (" + escapeText(key) + ")"));
    }
    if (!manifest.contains("tensors") || !manifest["tensors"].is_array()) {
        throw bad("\"tensors\" must be a list");
    }
    std::vector<std::string> names;
    std::vector<std::string> files;
    for (std::size_t i = 0; i < manifest["tensors"].size(); ++i) {
        const auto& e = manifest["tensors"][i];
        const std::string where = name + "/manifest.json: tensors[" + std::to_string(i) + "]";
        auto need = [&](const char* key, bool ok) {
            if (!e.is_object() || !e.contains(key) || !ok) {
                throw FormatError(where + ": \"" + key + "\" is missing or of the wrong kind");
            }
        };
        need("name", e.is_object() && e.contains("name") && (e["name"].is_string() || e["name"].is_object()));
        need("file", e.contains("file") && e["file"].is_string());
        need("dtype", e.contains("dtype") && e["dtype"].is_string());
        need("shape", e.contains("shape") && e["shape"].is_array());
        need("bytes", e.contains("bytes") && e["bytes"].is_number_unsigned());
        need("sha256", e.contains("sha256") && e["sha256"].is_string());
        OrganTensor t;
        if (e["name"].is_string()) {
            t.name = e["name"].get<std::string>();
        } else if (e["name"].contains("hex") && e["name"]["hex"].is_string() &&
                   bytesOfHex(e["name"]["hex"].get<std::string>())) {
            t.name = *bytesOfHex(e["name"]["hex"].get<std::string>());
        } else {
            throw FormatError(where + ": \"name\" must be a string");
        }
        t.file = e["file"].get<std::string>();
        if (!safeRelativePath(t.file)) {
            throw FormatError(where + ": file '" + escapeText(t.file) +
                              "' is not a plain path inside the directory");
        }
        const auto type = tensorTypeFromName(e["dtype"].get<std::string>());
        if (!type) {
            throw FormatError(where + ": unknown dtype '" + escapeText(e["dtype"].get<std::string>()) + "'");
        }
        t.type = *type;
        const auto& shape = e["shape"];
        if (shape.empty() || shape.size() > kGgufMaxDims) {
            throw FormatError(where + ": a shape has 1 to " + std::to_string(kGgufMaxDims) + " dimensions");
        }
        t.nDims = static_cast<std::uint32_t>(shape.size());
        std::uint64_t elements = 1;
        for (std::size_t d = 0; d < shape.size(); ++d) {
            if (!shape[d].is_number_unsigned() || shape[d].get<std::uint64_t>() == 0 ||
                shape[d].get<std::uint64_t>() > (std::uint64_t(1) << 40)) {
                throw FormatError(where + ": shape[" + std::to_string(d) + "] must be a positive integer");
            }
            t.ne[d] = shape[d].get<std::uint64_t>();
            if (elements > (std::uint64_t(1) << 50) / t.ne[d]) {
                throw FormatError(where + ": the shape is too large");
            }
            elements *= t.ne[d];
        }
        const TensorTypeTraits& traits = traitsOf(t.type);
        if (t.ne[0] % traits.blockSize != 0) {
            throw FormatError(where + ": " + std::to_string(t.ne[0]) + " values per row are not whole " +
                              std::string(tensorTypeName(t.type)) + " blocks");
        }
        t.bytes = e["bytes"].get<std::uint64_t>();
        if (t.bytes != storedBytes(t.type, elements)) {
            throw FormatError(where + ": " + std::to_string(t.bytes) +
                              " bytes do not fit the shape and dtype");
        }
        t.sha256 = e["sha256"].get<std::string>();
        if (t.sha256.size() != 64 || !bytesOfHex(t.sha256)) {
            throw FormatError(where + ": sha256 must be 64 hexadecimal digits");
        }
        if (e.contains("system") && e["system"].is_string()) {
            t.system = systemFromName(e["system"].get<std::string>()).value_or(System::Other);
        }
        t.role = e.value("role", std::string());
        if (e.contains("layer") && e["layer"].is_number_unsigned()) {
            t.layer = e["layer"].get<std::uint32_t>();
        }
        if (std::find(names.begin(), names.end(), t.name) != names.end()) {
            throw FormatError(where + ": the tensor " + escapeText(t.name) + " is listed twice");
        }
        if (std::find(files.begin(), files.end(), t.file) != files.end()) {
            throw FormatError(where + ": the file " + t.file + " is listed twice");
        }
        names.push_back(t.name);
        files.push_back(t.file);
        // The file itself: regular (never followed through a link), of the right size.
        const UniqueFd file(folder->file(t.file).tryOpen(O_PATH));
        if (!file.valid() && errno != ELOOP) {
            throw FormatError(name + ": " + t.file + " is missing");
        }
        if (!file.valid() || ::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
            throw FormatError(name + ": " + t.file + " is not a regular file");
        }
        if (static_cast<std::uint64_t>(st.st_size) != t.headerBytes() + t.bytes) {
            throw FormatError(name + ": " + t.file + " is " + std::to_string(st.st_size) +
                              " bytes, expected " + std::to_string(t.headerBytes() + t.bytes));
        }
        out.m_tensors.push_back(std::move(t));
    }
    if (manifest.contains("measurement")) {
        out.m_measurement = manifest["measurement"];
    }
    return out;
}

std::shared_ptr<const GgufModel> OrganDirectory::model() const {
    const std::string name = label(m_path);
    // One descriptor per tensor file stays open with its mapping: a large model's directory needs
    // more than the usual soft limit of 1024.
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
        limit.rlim_cur < m_tensors.size() + 256) {
        limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, m_tensors.size() + 256);
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
    std::vector<GgufModel::TensorFile> files;
    GgufWriteSpec spec;
    spec.metadata = m_metadata;
    for (const OrganTensor& t : m_tensors) {
        auto mapping = MappedFile::open(m_folder->file(t.file));
        const std::string header = tensorHeader(t.name, t.nDims, t.ne, t.type);
        const auto bytes = mapping->bytes();
        if (bytes.size() != t.headerBytes() + t.bytes) {
            throw FormatError(name + ": " + t.file + " is " + std::to_string(bytes.size()) +
                              " bytes, expected " + std::to_string(t.headerBytes() + t.bytes));
        }
        std::string found(header.size(), '\0');
        mapping->read(0, std::as_writable_bytes(std::span(found.data(), found.size())));
        if (found != header) {
            throw FormatError(name + ": " + t.file + ": its header does not match the manifest's " +
                              escapeText(t.name) + " (name, shape or dtype)");
        }
        TensorToWrite w{t.name, t.type, t.nDims, t.ne, {}};
        w.source.bytes = bytes.subspan(static_cast<std::size_t>(t.headerBytes()));
        w.source.mapping = mapping;
        spec.tensors.push_back(std::move(w));
        files.push_back({std::move(mapping), t.headerBytes()});
    }
    const GgufLayout layout = layoutGguf(spec, name);
    return GgufModel::fromTensorFiles(GgufFile::fromHeader(m_path, layout.header, layout.fileSize),
                                      std::move(files));
}

namespace {

// Checks every tensor file's data against the manifest's SHA-256 on a thread of its own, while
// the writer copies the same bytes (the second read comes from the page cache): the digests cost
// no time of the copy. The first mismatch, named, or an error, is what finish() returns.
class BackgroundCheck {
public:
    BackgroundCheck(const OrganDirectory& directory, const GgufModel& model)
        : m_thread([this, &directory, &model] { run(directory, model); }) {}
    ~BackgroundCheck() {
        m_stop = true;
        if (m_thread.joinable()) {
            m_thread.join();
        }
    }
    BackgroundCheck(const BackgroundCheck&) = delete;
    BackgroundCheck& operator=(const BackgroundCheck&) = delete;

    std::optional<std::string> finish() {
        m_thread.join();
        return m_problem;
    }

private:
    void run(const OrganDirectory& directory, const GgufModel& model) {
        try {
            std::vector<std::byte> buffer;
            for (std::size_t i = 0; i < directory.tensors().size() && !m_stop; ++i) {
                const OrganTensor& t = directory.tensors()[i];
                const TensorInfo& info = model.tensors()[i];
                const TensorSource data{model.tensorData(info), {}, model.tensorMapping(info), {}};
                const std::string digest = digestOf(data, buffer, &m_stop);
                if (!m_stop && digest != t.sha256) {
                    m_problem = label(directory.path()) + ": " + t.file +
                                ": its data does not match the manifest's SHA-256 (the file was changed)";
                    return;
                }
            }
        } catch (const std::exception& e) {
            m_problem = e.what();
        }
    }

    std::atomic<bool> m_stop{false};
    std::optional<std::string> m_problem;
    std::thread m_thread;
};

} // namespace

JobResult assembleOrgans(const OrganDirectory& directory, const RootedPath& output,
                         const ProgressFn& progress, const StopToken* stop) {
    try {
        const auto model = directory.model();
        GgufWriteSpec spec = specFromModel(*model);
        spec.metadata = directory.metadata();
        BackgroundCheck check(directory, *model);
        return writeGguf(
            output, spec, progress, stop,
            [&check](const RootedPath&) -> std::optional<std::string> { return check.finish(); });
    } catch (const std::exception& e) {
        return JobResult::failed(e.what());
    }
}

bool isOrganDirectoryTarget(const std::string& output) {
    return !hasGgufExtension(output);
}

nlohmann::json extractionToJson(const GgufModel& model, const std::string& directory) {
    return {{"output", directory}, {"tensors", model.tensors().size()}};
}

std::shared_ptr<const GgufModel> openModel(const RootedPath& path) {
    if (OrganDirectory::looksLikeOne(path)) {
        return OrganDirectory::open(path).model();
    }
    return GgufModel::open(path);
}

} // namespace organ
