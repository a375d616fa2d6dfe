#include "organs/organ_directory.h"

#include "anatomy/model_validation.h"
#include "organs/manifest_values.h"

#include "support/bounded_json.h"
#include "support/errors.h"
#include "support/safe_files.h"
#include "support/text_format.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_set>

namespace organ {

namespace {

template <typename T> void appendLe(std::string& out, T value) {
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        out += static_cast<char>((static_cast<std::uint64_t>(value) >> (8 * i)) & 0xFF);
    }
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

// A name, or a key, as the manifest writes it: a string, or {"hex"} when it is not UTF-8.
std::optional<std::string> nameOf(const nlohmann::json& value) {
    if (value.is_string()) {
        return value.get<std::string>();
    }
    if (value.is_object() && value.contains("hex") && value["hex"].is_string()) {
        return bytesOfHex(value["hex"].get<std::string>());
    }
    return std::nullopt;
}

std::vector<std::pair<std::string, MetaValue>> readMetadata(const nlohmann::json& manifest,
                                                            const std::string& name) {
    if (!manifest.contains("metadata") || !manifest["metadata"].is_array()) {
        throw FormatError(name + "/manifest.json: \"metadata\" must be a list");
    }
    std::vector<std::pair<std::string, MetaValue>> metadata;
    for (std::size_t i = 0; i < manifest["metadata"].size(); ++i) {
        const auto& e = manifest["metadata"][i];
        const std::string where = name + "/manifest.json: metadata[" + std::to_string(i) + "]";
        if (!e.is_object() || !e.contains("key")) {
            throw FormatError(where + ": needs a \"key\"");
        }
        const auto key = nameOf(e["key"]);
        if (!key) {
            throw FormatError(where + ": \"key\" must be a string");
        }
        metadata.emplace_back(*key, metaValueFromManifest(e, where + " (" + *key + ")"));
    }
    return metadata;
}

// One entry of "tensors", checked in itself (not yet against its file).
OrganTensor readTensor(const nlohmann::json& e, const std::string& where) {
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
    const auto tensorName = nameOf(e["name"]);
    if (!tensorName) {
        throw FormatError(where + ": \"name\" must be a string");
    }
    t.name = *tensorName;
    t.file = e["file"].get<std::string>();
    if (!safeRelativePath(t.file)) {
        throw FormatError(where + ": file '" + t.file + "' is not a plain path inside the directory");
    }
    const auto type = tensorTypeFromName(e["dtype"].get<std::string>());
    if (!type) {
        throw FormatError(where + ": unknown dtype '" + e["dtype"].get<std::string>() + "'");
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
        throw FormatError(where + ": " + std::to_string(t.bytes) + " bytes do not fit the shape and dtype");
    }
    t.sha256 = e["sha256"].get<std::string>();
    if (t.sha256.size() != 64 || !bytesOfHex(t.sha256)) {
        throw FormatError(where + ": sha256 must be 64 hexadecimal digits");
    }
    std::transform(t.sha256.begin(), t.sha256.end(), t.sha256.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (e.contains("system") && e["system"].is_string()) {
        t.system = systemFromName(e["system"].get<std::string>()).value_or(System::Other);
    }
    t.role = e.value("role", std::string());
    if (e.contains("layer") && e["layer"].is_number_unsigned()) {
        t.layer = e["layer"].get<std::uint32_t>();
    }
    return t;
}

// The tensor file of `t`, opened beneath the directory `name` (no link followed at any step,
// without blocking), a regular file of the right size.
UniqueFd openTensorFile(const FileRoot& folder, const std::string& name, const OrganTensor& t) {
    const std::string file = name + "/" + t.file;
    UniqueFd fd(folder.openFile(t.file, O_RDONLY | O_NONBLOCK));
    if (!fd.valid()) {
        const int error = errno;
        throw error == ENOENT || error == ENOTDIR ? FormatError(file + " is missing")
        : error == ELOOP                          ? FormatError(file +
                                                                " leads through a link (a linked file or sub-folder is never "
                                                                                         "followed out of " +
                                                                name + ")")
                         : FormatError(file + ": cannot open: " + std::strerror(error));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        throw FormatError(file + " is not a regular file");
    }
    if (static_cast<std::uint64_t>(st.st_size) != t.headerBytes() + t.bytes) {
        throw FormatError(file + " is " + std::to_string(st.st_size) + " bytes, expected " +
                          std::to_string(t.headerBytes() + t.bytes));
    }
    ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
    return fd;
}

} // namespace

std::uint64_t OrganTensor::headerBytes() const {
    return 4 + name.size() + 4 + 8 * std::uint64_t(nDims) + 4;
}

std::string tensorFileHeader(const std::string& name, std::uint32_t nDims,
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

bool OrganDirectory::looksLikeOne(const RootedPath& path) {
    const UniqueFd folder(path.tryOpen(O_PATH | O_DIRECTORY));
    struct stat st {};
    return folder.valid() &&
           ::fstatat(folder.get(), kOrganManifest, &st, path.root ? AT_SYMLINK_NOFOLLOW : 0) == 0 &&
           S_ISREG(st.st_mode);
}

OrganDirectory OrganDirectory::open(const RootedPath& directory) {
    const std::string name = fileLabel(directory.path);
    OrganDirectory out;
    out.m_path = directory.path;
    // Every file below is reached through the directory's descriptor, never through a link; while
    // the directory (or a mapping of its files) is open, its folder is an input.
    out.m_folder = directory.openFolder();
    struct stat st {};
    if (::fstat(out.m_folder->descriptor(), &st) != 0) {
        throw IoError(name + ": cannot read the folder: " + std::strerror(errno));
    }
    out.m_input = std::make_shared<const InputMark>(
        FileIdentity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)});
    if (::fstatat(out.m_folder->descriptor(), kOrganManifest, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode)) {
        throw FormatError(name + ": no manifest.json (not an organ directory, or an unfinished one)");
    }
    // Its values counted as they are read: past kMaxManifestValues it is refused before its
    // parsed form outgrows what opening a directory may cost.
    const nlohmann::json manifest =
        parseBoundedJson(readSmallFile(out.m_folder->file(kOrganManifest), kMaxManifestBytes),
                         kMaxManifestValues, name + "/manifest.json", "an organ directory");
    auto bad = [&](const std::string& what) { return FormatError(name + "/manifest.json: " + what); };
    if (!manifest.is_object() || manifest.value("format", std::string()) != kOrganFormat) {
        throw bad("\"format\" is not \"organ-directory\"");
    }
    if (!manifest.contains("version") || manifest["version"] != kOrganFormatVersion) {
        throw bad("version " + manifest.value("version", nlohmann::json()).dump() +
                  " is not supported (only 1)");
    }
    if (manifest.contains("source") && manifest["source"].is_object() &&
        manifest["source"].contains("gguf_version") &&
        manifest["source"]["gguf_version"].is_number_unsigned()) {
        out.m_ggufVersion = manifest["source"]["gguf_version"].get<std::uint32_t>();
    }
    out.m_metadata = readMetadata(manifest, name);
    if (!manifest.contains("tensors") || !manifest["tensors"].is_array()) {
        throw bad("\"tensors\" must be a list");
    }
    std::unordered_set<std::string> names;
    std::unordered_set<std::string> files;
    for (std::size_t i = 0; i < manifest["tensors"].size(); ++i) {
        const std::string where = name + "/manifest.json: tensors[" + std::to_string(i) + "]";
        OrganTensor t = readTensor(manifest["tensors"][i], where);
        if (!names.insert(t.name).second) {
            throw FormatError(where + ": the tensor " + t.name + " is listed twice");
        }
        if (!files.insert(t.file).second) {
            throw FormatError(where + ": the file " + t.file + " is listed twice");
        }
        openTensorFile(*out.m_folder, name, t);
        out.m_tensors.push_back(std::move(t));
    }
    if (manifest.contains("measurement")) {
        out.m_measurement = manifest["measurement"];
    }
    return out;
}

std::shared_ptr<const GgufModel> OrganDirectory::model() const {
    std::vector<GgufModel::TensorFile> files;
    GgufWriteSpec spec;
    spec.metadata = m_metadata;
    const std::string name = fileLabel(m_path);
    for (const OrganTensor& t : m_tensors) {
        UniqueFd fd = openTensorFile(*m_folder, name, t);
        const std::string header = tensorFileHeader(t.name, t.nDims, t.ne, t.type);
        std::string found(header.size(), '\0');
        if (::pread(fd.get(), found.data(), found.size(), 0) != static_cast<ssize_t>(found.size()) ||
            found != header) {
            throw FormatError(name + "/" + t.file + ": its header does not match the manifest's " + t.name +
                              " (name, shape or dtype)");
        }
        auto mapping = MappedFile::mapBeneath(std::move(fd), m_folder->file(t.file), m_input);
        TensorToWrite w{t.name, t.type, t.nDims, t.ne, {}};
        w.source.bytes = mapping->bytes().subspan(static_cast<std::size_t>(t.headerBytes()));
        spec.tensors.push_back(std::move(w));
        files.push_back({std::move(mapping), t.headerBytes(), PromisedSha256{t.sha256, name + "/" + t.file}});
    }
    const GgufLayout layout = layoutGguf(spec, name);
    return GgufModel::fromTensorFiles(GgufFile::fromHeader(m_path, layout.header, layout.fileSize),
                                      std::move(files));
}

JobResult assembleOrgans(const OrganDirectory& directory, const RootedPath& output, bool keepInvalid,
                         const ProgressFn& progress, const StopToken* stop) {
    try {
        const auto model = directory.model();
        GgufWriteSpec spec = specFromModel(*model);
        spec.metadata = directory.metadata();
        return writeGguf(output, spec, progress, stop, [&](const RootedPath& written) {
            return invalidModelRefusal(written, output.path, keepInvalid);
        });
    } catch (const std::exception& e) {
        return JobResult::failed(e.what());
    }
}

std::shared_ptr<const GgufModel> openModel(const RootedPath& path) {
    if (OrganDirectory::looksLikeOne(path)) {
        return OrganDirectory::open(path).model();
    }
    if (UniqueFd(path.tryOpen(O_PATH | O_DIRECTORY)).valid()) {
        throw IoError(fileLabel(path.path) + ": is a folder without " + kOrganManifest +
                      ": neither a GGUF file nor an organ directory");
    }
    return GgufModel::open(path);
}

} // namespace organ
