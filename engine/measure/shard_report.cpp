#include "measure/shard_report.h"

#include "support/base64.h"
#include "support/bounded_json.h"
#include "support/errors.h"
#include "support/safe_files.h"
#include "support/sha256.h"
#include "support/text_format.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>

namespace organ {
namespace {

constexpr const char* kShardFormat = "organ-shard";

std::optional<std::uint64_t> unsignedKey(const GgufFile& file, std::string_view key) {
    const MetaValue* value = file.find(key);
    return value != nullptr ? value->asUInt() : std::nullopt;
}

std::span<const std::byte> headerOf(const GgufFile& file) {
    return file.mapping()->bytes().subspan(0, static_cast<std::size_t>(file.headerSize()));
}

// The identity of the set from its first part: its header's SHA-256, architecture and name.
void takeIdentity(const GgufFile& first, ShardReport& out) {
    out.firstHeaderSha256 = Sha256::hex(headerOf(first));
    const auto model = GgufModel::partAlone(std::shared_ptr<const GgufFile>(&first, [](const GgufFile*) {}));
    out.architecture = model->architecture();
    if (const MetaValue* name = first.find("general.name"); name != nullptr && name->asString()) {
        out.name = std::string(*name->asString());
    }
}

// "2, 5-9, 12": the parts as runs, at most kShownRuns of them (a set may claim 99 999 parts).
std::string partsText(const std::vector<unsigned>& parts) {
    constexpr std::size_t kShownRuns = 20;
    std::string out;
    std::size_t runs = 0;
    for (std::size_t i = 0; i < parts.size();) {
        std::size_t end = i + 1;
        while (end < parts.size() && parts[end] == parts[end - 1] + 1) {
            ++end;
        }
        if (runs == kShownRuns) {
            return out + " and " + std::to_string(parts.size() - i) + " more";
        }
        out += (out.empty() ? "" : ", ") + std::to_string(parts[i]) +
               (end - i > 1 ? "-" + std::to_string(parts[end - 1]) : std::string());
        ++runs;
        i = end;
    }
    return out;
}

} // namespace

JobResult measureShard(const std::string& path, const MeasureOptions& options, ShardReport& out,
                       const ProgressFn& progress, const StopToken* stop) {
    out = ShardReport{};
    const auto file = GgufFile::open(path);
    const std::string label = fileLabel(path);
    const auto count = unsignedKey(*file, "split.count");
    if (!count || *count <= 1) {
        throw FormatError(label + ": not a part of a split model (no split.count above 1): measure it whole");
    }
    const auto no = unsignedKey(*file, "split.no");
    if (!no || *no >= *count || *count > kMaxSplitParts) {
        throw FormatError(label + ": key 'split.no' is " +
                          (no ? std::to_string(*no) : std::string("missing")) + " in a set of " +
                          std::to_string(*count) + " parts");
    }
    out.path = path;
    out.part = static_cast<unsigned>(*no) + 1;
    out.count = static_cast<unsigned>(*count);
    out.setTensors = unsignedKey(*file, "split.tensors.count").value_or(0);
    out.params = options.params;
    const auto header = headerOf(*file);
    out.header.assign(header.begin(), header.end());
    out.fileSize = file->fileSize();
    if (out.part == 1) {
        takeIdentity(*file, out);
    } else if (SplitName split; parseSplitName(path, split) && split.count == out.count) {
        const std::string firstPath = splitPartPath(split.prefix, 1, split.count);
        std::error_code ec;
        if (std::filesystem::exists(firstPath, ec)) {
            try {
                const auto first = GgufFile::open(firstPath);
                if (unsignedKey(*first, "split.count") != count || unsignedKey(*first, "split.no") != 0u) {
                    throw FormatError(fileLabel(firstPath) + ": not the first of the same " +
                                      std::to_string(*count) + " parts");
                }
                takeIdentity(*first, out);
            } catch (const std::exception& error) {
                out.warnings.push_back(std::string("the first part beside it was not used: ") + error.what() +
                                       "; the set's identity stays unknown until merged");
            }
        }
    }
    const auto model = GgufModel::partAlone(file);
    const ModelAnatomy anatomy = analyzeAnatomy(*model);
    ModelMeasurement measurement;
    const JobResult result = measureModel(*model, anatomy, options, measurement, progress, stop);
    if (!result.isOk()) {
        return result;
    }
    for (std::size_t i = 0; i < model->tensors().size(); ++i) {
        out.tensors.emplace_back(model->tensors()[i].name, measurement.tensors[i]);
    }
    return result;
}

nlohmann::json shardReportToJson(const ShardReport& r) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& [name, z] : r.tensors) {
        nlohmann::json entry = zResultToJson(z);
        entry["name"] = name;
        tensors.push_back(std::move(entry));
    }
    nlohmann::json identity = {{"known", r.identityKnown()}};
    if (r.identityKnown()) {
        identity["first_header_sha256"] = r.firstHeaderSha256;
        identity["architecture"] = r.architecture;
        identity["name"] = r.name;
    }
    return {{"format", kShardFormat},
            {"version", kShardReportVersion},
            {"z_measure", kZMeasureVersion},
            {"parameters", {{"sample", sampleJson(r.params)}}},
            {"path", r.path},
            {"part", r.part},
            {"count", r.count},
            {"set_tensors", r.setTensors},
            {"identity", std::move(identity)},
            {"file_size", r.fileSize},
            {"header_base64", toBase64(r.header)},
            {"tensors", std::move(tensors)}};
}

ShardReport shardReportFromJson(const nlohmann::json& d) {
    ShardReport r;
    try {
        r.params = readReportPreamble(d, kShardFormat, kShardReportVersion, "shard report");
        r.path = d.at("path").get<std::string>();
        const std::uint64_t part = unsignedAt(d, "part");
        const std::uint64_t count = unsignedAt(d, "count");
        // File names carry the count in five digits; a larger one is not a split set (and would
        // size the merge's tables by a number from the file).
        if (count < 2 || count > kMaxSplitParts || part < 1 || part > count) {
            throw std::runtime_error("part " + std::to_string(part) + " of " + std::to_string(count) +
                                     " is not a part of a split set");
        }
        r.part = static_cast<unsigned>(part);
        r.count = static_cast<unsigned>(count);
        r.setTensors = unsignedAt(d, "set_tensors");
        r.fileSize = unsignedAt(d, "file_size");
        const auto& identity = d.at("identity");
        if (identity.at("known").get<bool>()) {
            r.firstHeaderSha256 = identity.at("first_header_sha256").get<std::string>();
            r.architecture = identity.at("architecture").get<std::string>();
            r.name = identity.at("name").get<std::string>();
            if (r.firstHeaderSha256.size() != 64) {
                throw std::runtime_error("first_header_sha256 is not a SHA-256");
            }
        }
        auto header = fromBase64(d.at("header_base64").get<std::string>());
        if (!header) {
            throw std::runtime_error("header_base64 is not base64");
        }
        r.header = std::move(*header);
        for (const auto& t : d.at("tensors")) {
            r.tensors.emplace_back(t.at("name").get<std::string>(), zResultFromJson(t));
        }
    } catch (const nlohmann::json::exception& error) {
        throw std::runtime_error(std::string("not a valid shard report: ") + error.what());
    }
    // The header must parse as the part the report says it is, holding the report's tensors.
    const auto file = GgufFile::fromHeader(r.path, r.header, r.fileSize);
    if (unsignedKey(*file, "split.no") != r.part - 1 || unsignedKey(*file, "split.count") != r.count) {
        throw std::runtime_error("the header is not that of part " + std::to_string(r.part) + " of " +
                                 std::to_string(r.count));
    }
    const auto& tensors = file->tensors();
    bool same = tensors.size() == r.tensors.size();
    for (std::size_t i = 0; same && i < tensors.size(); ++i) {
        same = tensors[i].name == r.tensors[i].first;
    }
    if (!same) {
        throw std::runtime_error("its tensors are not those of its header");
    }
    // Every result must be one the Z-measure can give for that tensor (θ in [0°, 90°] and
    // following from H, K and C): a θ of -1e9 would merge into the model's mean unnoticed.
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (const auto why = inconsistency(r.tensors[i].second, tensors[i].elements)) {
            throw std::runtime_error("tensor '" + tensors[i].name + "': " + *why);
        }
    }
    return r;
}

std::vector<unsigned> missingParts(const std::vector<ShardReport>& reports) {
    if (reports.empty()) {
        return {};
    }
    std::vector<bool> present(reports.front().count + 1, false);
    for (const auto& r : reports) {
        if (r.part < present.size()) {
            present[r.part] = true;
        }
    }
    std::vector<unsigned> missing;
    for (unsigned p = 1; p < present.size(); ++p) {
        if (!present[p]) {
            missing.push_back(p);
        }
    }
    return missing;
}

ShardReport readShardReport(const RootedPath& path) {
    return readBoundedJson(path, {128u << 20, 4u << 20}, "a shard report", shardReportFromJson);
}

MeasuredModel mergeShardReports(const std::vector<ShardReport>& reports) {
    if (reports.empty()) {
        throw std::runtime_error("no shard reports to merge");
    }
    const ShardReport& any = reports.front();
    std::vector<const ShardReport*> byPart(any.count + 1, nullptr);
    for (const ShardReport& r : reports) {
        if (r.count != any.count || r.setTensors != any.setTensors) {
            throw std::runtime_error(fileLabel(r.path) + " is part of a set of " + std::to_string(r.count) +
                                     " parts and " + std::to_string(r.setTensors) + " tensors, " +
                                     fileLabel(any.path) + " of " + std::to_string(any.count) + " and " +
                                     std::to_string(any.setTensors) + ": not the same model");
        }
        if (r.params.sample != any.params.sample) {
            throw std::runtime_error(
                fileLabel(r.path) + " and " + fileLabel(any.path) +
                " were measured with different samples: their θ do not add up to one model");
        }
        if (byPart[r.part] != nullptr) {
            throw std::runtime_error("part " + std::to_string(r.part) + " is given twice (" +
                                     fileLabel(byPart[r.part]->path) + " and " + fileLabel(r.path) + ")");
        }
        byPart[r.part] = &r;
    }
    if (const auto missing = missingParts(reports); !missing.empty()) {
        throw std::runtime_error("missing part" + std::string(missing.size() == 1 ? " " : "s ") +
                                 partsText(missing) + " of " + std::to_string(any.count) + " (" +
                                 std::to_string(reports.size()) +
                                 " reports given): measure them with organ measure --shard");
    }
    const std::string firstSha = Sha256::hex(byPart[1]->header);
    std::vector<std::shared_ptr<const GgufFile>> parts;
    std::map<std::string, const ZResult*> results;
    for (unsigned p = 1; p <= any.count; ++p) {
        const ShardReport& r = *byPart[p];
        if (r.identityKnown() && r.firstHeaderSha256 != firstSha) {
            throw std::runtime_error("part " + std::to_string(p) + " (" + fileLabel(r.path) +
                                     ") was measured beside a different first part: not the same model");
        }
        parts.push_back(GgufFile::fromHeader(r.path, r.header, r.fileSize));
        for (const auto& [name, z] : r.tensors) {
            results[name] = &z;
        }
    }
    MeasuredModel m;
    m.model = GgufModel::fromParts(std::move(parts));
    m.anatomy = analyzeAnatomy(*m.model);
    ModelMeasurement& mm = m.measurement;
    mm.path = m.model->path();
    mm.name = m.model->name();
    mm.architecture = m.model->architecture();
    mm.params = any.params;
    for (const TensorInfo& t : m.model->tensors()) {
        mm.tensors.push_back(*results.at(t.name));
    }
    aggregateMeasurement(*m.model, m.anatomy, mm);
    return m;
}

} // namespace organ
