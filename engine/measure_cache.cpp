#include "measure_cache.h"

#include "digest.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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
    for (const auto& shard : model.shards()) {
        std::error_code error;
        const std::string canonical = std::filesystem::weakly_canonical(shard->path(), error).string();
        digest.update(std::string_view(canonical));
        struct stat st {};
        if (::stat(shard->path().c_str(), &st) == 0) {
            digest.updateValue(static_cast<std::int64_t>(st.st_size));
            digest.updateValue(static_cast<std::int64_t>(st.st_mtim.tv_sec));
            digest.updateValue(static_cast<std::int64_t>(st.st_mtim.tv_nsec));
        }
        digest.update(shard->mapping()->bytes().first(static_cast<std::size_t>(shard->headerSize())));
    }
    char name[40];
    std::snprintf(name, sizeof name, "zmeasure-%016llx", static_cast<unsigned long long>(digest.value()));
    return name;
}

bool MeasurementCache::load(MeasuredModel& m, const ZParams& params) const {
    std::ifstream in(pathOf(m_folder, keyFor(*m.model, params)));
    if (!in) {
        return false;
    }
    try {
        const nlohmann::json stored = nlohmann::json::parse(in);
        const auto& tensors = stored.at("tensors");
        if (stored.at("z_measure") != kZMeasureVersion || tensors.size() != m.model->tensors().size()) {
            return false;
        }
        ModelMeasurement measurement;
        measurement.path = m.model->path();
        measurement.name = m.model->name();
        measurement.architecture = m.model->architecture();
        measurement.params = params;
        measurement.fromCache = true;
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            if (tensors[i].at("name") != m.model->tensors()[i].name) {
                return false;
            }
            measurement.tensors.push_back(zResultFromJson(tensors[i]));
        }
        aggregateMeasurement(*m.model, m.anatomy, measurement);
        m.measurement = std::move(measurement);
        return true;
    } catch (const std::exception&) {
        return false; // a damaged entry is measured afresh and overwritten
    }
}

bool MeasurementCache::store(const MeasuredModel& m, std::string* error) const {
    std::error_code ec;
    std::filesystem::create_directories(m_folder, ec);
    const std::string target = pathOf(m_folder, keyFor(*m.model, m.measurement.params));
    const std::string partial = target + ".partial." + std::to_string(::getpid());
    {
        std::ofstream out(partial, std::ios::trunc);
        out << measurementToJson(m).dump();
        out.close();
        if (!out) {
            std::filesystem::remove(partial, ec);
            if (error != nullptr) {
                *error = "cannot write the measurement cache in " + m_folder;
            }
            return false;
        }
    }
    std::filesystem::rename(partial, target, ec);
    if (ec) {
        std::filesystem::remove(partial, ec);
        if (error != nullptr) {
            *error = "cannot write the measurement cache in " + m_folder;
        }
        return false;
    }
    return true;
}

} // namespace organ
