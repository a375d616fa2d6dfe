#include "measure/measure_cache.h"

#include "support/digest.h"
#include "support/safe_files.h"
#include "support/sha256.h"
#include "support/text_safety.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace organ {
namespace {

std::string environment(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::string(value) : std::string();
}

std::string pathOf(const std::string& folder, const std::string& key) {
    return folder + "/" + key + ".json";
}

} // namespace

std::string MeasurementCache::defaultFolder() {
    if (const std::string explicitFolder = environment("ORGAN_CACHE_DIR"); !explicitFolder.empty()) {
        return explicitFolder;
    }
    if (const std::string xdg = environment("XDG_CACHE_HOME"); !xdg.empty()) {
        return xdg + "/organ-workbench";
    }
    return environment("HOME") + "/.cache/organ-workbench";
}

MeasurementCache::MeasurementCache(std::string folder) : m_folder(std::move(folder)) {}

std::string MeasurementCache::keyFor(const GgufModel& model, const ZParams& params) const {
    Digest digest;
    digest.update(std::string_view("organ-zmeasure-"));
    digest.update(std::string_view(kZMeasureVersion));
    digest.updateValue(params.sample);
    // Every file the bytes come from (the parts, or an organ directory's tensor files) by name, size
    // and time of change; and the header.
    for (const auto& file : model.files()) {
        std::error_code error;
        const std::string canonical = std::filesystem::weakly_canonical(file->path(), error).string();
        digest.update(std::string_view(canonical));
        // The size and time of the file that was opened, not of whatever its name leads to now.
        const UniqueFd opened = file->openDescriptor();
        struct stat st {};
        if ((opened.valid() ? ::fstat(opened.get(), &st) : ::stat(file->path().c_str(), &st)) == 0) {
            digest.updateValue(static_cast<std::int64_t>(st.st_size));
            digest.updateValue(static_cast<std::int64_t>(st.st_mtim.tv_sec));
            digest.updateValue(static_cast<std::int64_t>(st.st_mtim.tv_nsec));
        }
    }
    for (const auto& shard : model.shards()) {
        digest.update(shard->mapping()->bytes().first(static_cast<std::size_t>(shard->headerSize())));
    }
    char name[40];
    std::snprintf(name, sizeof name, "zmeasure-%016llx", static_cast<unsigned long long>(digest.value()));
    return name;
}

namespace {

constexpr std::uint64_t kMaxEntryBytes = 256u << 20;

std::string checksumOf(const nlohmann::json& measurement) {
    const std::string text = dumpJson(measurement);
    return Sha256::hex(std::as_bytes(std::span(text.data(), text.size())));
}

} // namespace

bool MeasurementCache::load(MeasuredModel& m, const ZParams& params, std::string* warning) const {
    const std::string path = pathOf(m_folder, keyFor(*m.model, params));
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        return false; // no entry
    }
    auto damaged = [&](const std::string& why) {
        if (warning != nullptr) {
            *warning = "measurement cache entry " + path + " is damaged (" + why + "): measuring afresh";
        }
        return false;
    };
    try {
        const nlohmann::json file = nlohmann::json::parse(readSmallFile(path, kMaxEntryBytes));
        const nlohmann::json& stored = file.at("measurement");
        if (file.at("checksum") != checksumOf(stored)) {
            return damaged("its checksum does not match its content");
        }
        const auto& tensors = stored.at("tensors");
        if (stored.at("z_measure") != kZMeasureVersion || tensors.size() != m.model->tensors().size()) {
            return false; // another version's entry: replaced as it is measured
        }
        ModelMeasurement measurement;
        measurement.path = m.model->path();
        measurement.name = m.model->name();
        measurement.architecture = m.model->architecture();
        measurement.params = params;
        measurement.fromCache = true;
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            const TensorInfo& tensor = m.model->tensors()[i];
            if (tensors[i].at("name") != jsonText(tensor.name)) {
                return false;
            }
            ZResult z = zResultFromJson(tensors[i]);
            if (const auto why = inconsistency(z, tensor.elements)) {
                return damaged("tensor " + escapeText(tensor.name) + ": " + *why);
            }
            measurement.tensors.push_back(std::move(z));
        }
        aggregateMeasurement(*m.model, m.anatomy, measurement);
        m.measurement = std::move(measurement);
        return true;
    } catch (const std::exception& error) {
        return damaged(escapeText(error.what()));
    }
}

bool MeasurementCache::store(const MeasuredModel& m, std::string* error) const {
    std::error_code ec;
    std::filesystem::create_directories(m_folder, ec);
    const std::string target = pathOf(m_folder, keyFor(*m.model, m.measurement.params));
    try {
        // The folder is ours: an entry that is not a regular file (a FIFO, a link planted in
        // its place) is removed, never written through.
        struct stat st {};
        if (::lstat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
            std::filesystem::remove(target);
        }
        const nlohmann::json measurement = measurementToJson(m);
        const nlohmann::json file = {{"checksum", checksumOf(measurement)}, {"measurement", measurement}};
        writeFileSafely(target, dumpJson(file));
        return true;
    } catch (const std::exception& e) {
        if (error != nullptr) {
            *error = "cannot write the measurement cache in " + m_folder + ": " + e.what();
        }
        return false;
    }
}

CachedMeasurement measureWithCache(MeasuredModel& m, const MeasureOptions& options,
                                   const MeasurementCache* cache, const ProgressFn& progress,
                                   const StopToken* stop) {
    CachedMeasurement out;
    if (cache != nullptr && cache->load(m, options.params, &out.cacheWarning)) {
        return out;
    }
    out.result = measureModel(*m.model, m.anatomy, options, m.measurement, progress, stop);
    if (out.result.isOk() && cache != nullptr) {
        cache->store(m, &out.storeError);
    }
    return out;
}

} // namespace organ
