#include "fleet/fleet.h"

#include "anatomy/model_summary.h"
#include "organs/organ_directory.h"
#include "support/bounded_json.h"
#include "support/errors.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace organ {
namespace {

constexpr const char* kFleetFormat = "organ-fleet";
constexpr System kSystems[] = {System::Embed, System::Skeleton, System::Organ,
                               System::Norm,  System::Adapter,  System::Other};

// Each folder is opened by its path from `folder` down (beneath the root when there is one), read
// through that descriptor, and its entries judged by what they are, links not followed into.
void searchFolder(const RootedPath& folder, const std::function<void(std::string)>& add) {
    std::vector<std::string> pending{folder.path};
    while (!pending.empty()) {
        const std::string path = pending.back();
        pending.pop_back();
        const int fd = folder.at(path).tryOpen(O_RDONLY | O_DIRECTORY);
        DIR* dir = fd >= 0 ? ::fdopendir(fd) : nullptr;
        if (dir == nullptr) {
            if (fd >= 0) {
                ::close(fd);
            }
            continue; // unreadable: skipped, as a permission denied always was
        }
        std::vector<std::string> names;
        while (const dirent* entry = ::readdir(dir)) {
            const std::string name = entry->d_name;
            if (name == "." || name == "..") {
                continue;
            }
            const std::string inside = path.ends_with('/') ? path + name : path + "/" + name;
            struct stat st {};
            if (::fstatat(::dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
                continue;
            }
            // A link to a file is taken as the file it names (beneath a root it is not looked
            // through: opening it fails, and the fleet says why); a link to a folder is never searched.
            if (S_ISLNK(st.st_mode)) {
                const bool file = folder.root ||
                                  (::fstatat(::dirfd(dir), name.c_str(), &st, 0) == 0 && S_ISREG(st.st_mode));
                if (file && hasGgufExtension(name)) {
                    add(inside);
                }
            } else if (S_ISDIR(st.st_mode)) {
                names.push_back(inside);
            } else if (S_ISREG(st.st_mode) && hasGgufExtension(name)) {
                add(inside);
            }
        }
        ::closedir(dir);
        for (const std::string& inside : names) {
            if (OrganDirectory::looksLikeOne(folder.at(inside))) {
                add(inside);
            } else {
                pending.push_back(inside);
            }
        }
    }
}

std::string thetaText(const std::optional<double>& theta, int digits = 2) {
    return theta ? fixedDecimals(*theta, digits) + "°" : std::string("—");
}

// At most `width` bytes, cut at a character boundary and marked with "…".
std::string shortened(std::string text, std::size_t width) {
    if (text.size() <= width) {
        return text;
    }
    std::size_t cut = width - 3;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
        --cut;
    }
    return text.substr(0, cut) + "…";
}

FleetRow failedRow(const std::string& path, const std::string& message) {
    FleetRow row;
    row.path = path;
    row.name = fileLabel(path);
    row.error = message;
    return row;
}

} // namespace

std::vector<std::string> findFleetModels(const std::vector<std::string>& paths,
                                         const std::shared_ptr<const FileRoot>& root) {
    std::set<std::string> seen;
    auto add = [&](std::string path) {
        SplitName split;
        if (parseSplitName(path, split)) {
            path = splitPartPath(split.prefix, 1, split.count);
        }
        seen.insert(std::move(path));
    };
    for (const auto& path : paths) {
        const RootedPath rooted(root, path);
        const UniqueFd folder(rooted.tryOpen(O_PATH | O_DIRECTORY));
        if (folder.valid() && !OrganDirectory::looksLikeOne(rooted)) {
            searchFolder(rooted, add);
        } else {
            add(path);
        }
    }
    return {seen.begin(), seen.end()};
}

std::optional<double> FleetRow::systemTheta(System system) const {
    for (const FleetSystem& s : systems) {
        if (s.system == systemName(system)) {
            return s.thetaMean;
        }
    }
    return std::nullopt;
}

std::string fleetDtypeText(const FleetRow& row) {
    std::string out;
    for (const auto& [type, parameters] : row.dtypes) {
        const double share =
            row.parameters != 0 ? 100.0 * static_cast<double>(parameters) / row.parameters : 0;
        out += (out.empty() ? "" : " ") + type + " " + fixedDecimals(share, share < 10 ? 1 : 0) + "%";
    }
    return out;
}

FleetRow fleetRowOf(const MeasuredModel& m) {
    const ModelSummary summary = summarize(*m.model, m.anatomy);
    FleetRow row;
    row.path = m.model->path();
    row.name = m.measurement.name;
    row.architecture = m.measurement.architecture;
    row.parameters = summary.parameters;
    row.fileSize = summary.fileSize;
    row.bitsPerWeight = summary.bitsPerWeight;
    std::map<std::string, std::uint64_t> dtypes;
    for (const TensorInfo& t : m.model->tensors()) {
        dtypes[std::string(tensorTypeName(t.type))] += t.elements;
    }
    row.dtypes.assign(dtypes.begin(), dtypes.end());
    std::stable_sort(row.dtypes.begin(), row.dtypes.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    const ThetaGroup& whole = m.measurement.model;
    row.tensors = whole.tensors;
    row.measured = whole.measured;
    if (whole.measured != 0) {
        row.thetaMean = whole.thetaMean;
        row.signalMean = whole.signalMean;
    }
    for (const ThetaGroup& g : m.measurement.bySystem) {
        row.systems.push_back({g.key, g.tensors, g.measured, g.parameters,
                               g.measured != 0 ? std::optional(g.thetaMean) : std::nullopt});
    }
    row.fromCache = m.measurement.fromCache;
    return row;
}

ScaleLaw fitScaleLaw(const std::vector<FleetRow>& rows) {
    std::vector<std::pair<double, double>> points;
    for (const FleetRow& row : rows) {
        if (row.ok() && row.thetaMean && row.parameters != 0) {
            points.emplace_back(std::log10(static_cast<double>(row.parameters)), *row.thetaMean);
        }
    }
    ScaleLaw law;
    law.models = points.size();
    if (points.size() < kScaleLawMinModels) {
        law.reason = "a scale law needs at least " + std::to_string(kScaleLawMinModels) +
                     " measured models; the fleet has " + std::to_string(points.size());
        return law;
    }
    double mx = 0;
    double my = 0;
    for (const auto& [x, y] : points) {
        mx += x;
        my += y;
    }
    mx /= static_cast<double>(points.size());
    my /= static_cast<double>(points.size());
    double sxx = 0;
    double sxy = 0;
    double syy = 0;
    for (const auto& [x, y] : points) {
        sxx += (x - mx) * (x - mx);
        sxy += (x - mx) * (y - my);
        syy += (y - my) * (y - my);
    }
    if (sxx <= 1e-18) {
        law.reason = "every measured model has the same parameter count: no line through them";
        return law;
    }
    law.fitted = true;
    law.slope = sxy / sxx;
    law.intercept = my - law.slope * mx;
    double residual = 0;
    for (const auto& [x, y] : points) {
        const double e = y - (law.slope * x + law.intercept);
        residual += e * e;
    }
    law.r2 = syy > 0 ? 1.0 - residual / syy : 1.0;
    // θ far outside [0°, 90°] (from a report made by hand) overflows the sums: no claim of a fit.
    if (!std::isfinite(law.slope) || !std::isfinite(law.intercept) || !std::isfinite(law.r2)) {
        law.fitted = false;
        law.slope = law.intercept = law.r2 = 0;
        law.reason = "the θ means are too large to fit a line through them";
    }
    return law;
}

std::vector<std::size_t> FleetReport::ranking() const {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].ok() && rows[i].thetaMean) {
            order.push_back(i);
        }
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const FleetRow& ra = rows[a];
        const FleetRow& rb = rows[b];
        if (*ra.thetaMean != *rb.thetaMean) {
            return *ra.thetaMean > *rb.thetaMean;
        }
        return std::tie(ra.name, ra.path) < std::tie(rb.name, rb.path);
    });
    return order;
}

JobResult measureFleet(const std::vector<std::string>& paths, const FleetOptions& options, FleetReport& out,
                       const ProgressFn& progress, const StopToken* stop) {
    out = FleetReport{};
    out.params = options.params;
    const std::size_t count = paths.size();
    const unsigned threads = options.threads == 0 ? defaultThreadCount() : options.threads;
    const unsigned workers =
        static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(threads, count)));
    const unsigned perModel = std::max(1u, threads / workers);

    std::vector<std::optional<FleetRow>> rows(count);
    std::vector<std::uint64_t> permille(count, 0);
    std::mutex mutex;
    ProgressThrottle throttle(progress);
    std::size_t finished = 0;
    std::vector<std::string> warnings;
    std::atomic<std::size_t> next{0};
    std::uint64_t permilleSum = 0; // of `permille`, kept as each entry changes (under `mutex`)
    auto setPermille = [&](std::size_t index, std::uint64_t value) {
        permilleSum += value - permille[index];
        permille[index] = value;
    };
    auto report = [&](std::size_t index, std::uint64_t value) {
        std::lock_guard lock(mutex);
        setPermille(index, value);
        const std::string stage = "measuring the fleet: " + std::to_string(finished) + " of " +
                                  std::to_string(count) + " models done";
        throttle.report(permilleSum, count * 1000, stage);
    };
    auto measureOne = [&](std::size_t index) -> std::optional<FleetRow> {
        const std::string& path = paths[index];
        MeasuredModel m;
        try {
            m.model = openModel({options.root, path});
            m.anatomy = analyzeAnatomy(*m.model);
        } catch (const std::bad_alloc&) {
            return failedRow(path, fileLabel(path) + ": out of memory while opening");
        } catch (const std::exception& error) {
            return failedRow(path, error.what());
        }
        MeasureOptions measureOptions;
        measureOptions.params = options.params;
        measureOptions.threads = perModel;
        const CachedMeasurement done = measureWithCache(
            m, measureOptions, options.cache,
            [&](const Progress& p) { report(index, p.total != 0 ? p.done * 1000 / p.total : 0); }, stop);
        {
            std::lock_guard lock(mutex);
            for (const std::string* w : {&done.cacheWarning, &done.storeError}) {
                if (!w->empty()) {
                    warnings.push_back(*w);
                }
            }
        }
        if (done.result.status == JobResult::Status::Cancelled) {
            return std::nullopt;
        }
        if (!done.result.isOk()) {
            return failedRow(path, fileLabel(path) + ": " + done.result.message);
        }
        FleetRow row = fleetRowOf(m);
        row.path = path;
        return row;
    };
    auto work = [&] {
        for (std::size_t i = next++; i < count; i = next++) {
            if (stop != nullptr && stop->stopRequested()) {
                return;
            }
            std::optional<FleetRow> row = measureOne(i);
            if (!row) {
                return;
            }
            std::lock_guard lock(mutex);
            rows[i] = std::move(row);
            setPermille(i, 1000);
            ++finished;
            if (options.onModel) {
                options.onModel(i, *rows[i]);
            }
        }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < workers; ++w) {
        pool.emplace_back(work);
    }
    work();
    for (auto& t : pool) {
        t.join();
    }
    for (auto& row : rows) {
        if (row) {
            out.rows.push_back(std::move(*row));
        }
    }
    JobResult result = stop != nullptr && stop->stopRequested() ? JobResult::cancelled() : JobResult::ok();
    result.warnings = std::move(warnings);
    if (result.isOk()) {
        throttle.report(count * 1000, count * 1000, "measured", true);
    }
    return result;
}

nlohmann::json fleetToJson(const FleetReport& report) {
    nlohmann::json models = nlohmann::json::array();
    for (const FleetRow& row : report.rows) {
        if (!row.ok()) {
            models.push_back({{"path", row.path}, {"name", row.name}, {"error", row.error}});
            continue;
        }
        nlohmann::json dtypes = nlohmann::json::object();
        for (const auto& [type, parameters] : row.dtypes) {
            dtypes[type] = parameters;
        }
        nlohmann::json systems = nlohmann::json::array();
        for (const FleetSystem& s : row.systems) {
            systems.push_back({{"system", s.system},
                               {"tensors", s.tensors},
                               {"measured", s.measured},
                               {"parameters", s.parameters},
                               {"theta_mean", optionalNumber(s.thetaMean)}});
        }
        models.push_back({{"path", row.path},
                          {"name", row.name},
                          {"architecture", row.architecture},
                          {"parameters", row.parameters},
                          {"file_size", row.fileSize},
                          {"bits_per_weight", row.bitsPerWeight},
                          {"dtypes", std::move(dtypes)},
                          {"tensors", row.tensors},
                          {"measured", row.measured},
                          {"theta_mean", optionalNumber(row.thetaMean)},
                          {"signal_mean", optionalNumber(row.signalMean)},
                          {"systems", std::move(systems)},
                          {"from_cache", row.fromCache}});
    }
    nlohmann::json ranking = nlohmann::json::array();
    int rank = 0;
    for (std::size_t i : report.ranking()) {
        const FleetRow& row = report.rows[i];
        ranking.push_back({{"rank", ++rank},
                           {"path", row.path},
                           {"name", row.name},
                           {"parameters", row.parameters},
                           {"theta_mean", *row.thetaMean}});
    }
    const ScaleLaw law = report.scaleLaw();
    nlohmann::json scale = {{"models", law.models}, {"fitted", law.fitted}};
    if (law.fitted) {
        scale["slope"] = law.slope;
        scale["intercept"] = law.intercept;
        scale["r2"] = law.r2;
        scale["x"] = "log10(parameters)";
        scale["y"] = "theta_mean";
    } else {
        scale["reason"] = law.reason;
    }
    return {{"format", kFleetFormat},        {"version", kFleetReportVersion},
            {"z_measure", kZMeasureVersion}, {"parameters", {{"sample", sampleJson(report.params)}}},
            {"models", std::move(models)},   {"ranking", std::move(ranking)},
            {"scale_law", std::move(scale)}};
}

namespace {

// A measured model's row; throws std::runtime_error (a number out of its range) or nlohmann's
// exceptions (a field missing or mistyped).
void readMeasuredRow(const nlohmann::json& m, FleetRow& row) {
    row.architecture = m.at("architecture").get<std::string>();
    row.parameters = unsignedAt(m, "parameters");
    row.fileSize = unsignedAt(m, "file_size");
    const auto bits = numberOrNothing(m, "bits_per_weight", 0);
    if (!bits) {
        throw std::runtime_error("bits_per_weight is missing");
    }
    row.bitsPerWeight = *bits;
    for (const auto& [type, parameters] : m.at("dtypes").items()) {
        row.dtypes.emplace_back(type, unsignedAt(m.at("dtypes"), type.c_str()));
    }
    std::stable_sort(row.dtypes.begin(), row.dtypes.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    row.tensors = unsignedAt(m, "tensors");
    row.measured = unsignedAt(m, "measured");
    row.thetaMean = numberOrNothing(m, "theta_mean", 0, kThetaMax);
    row.signalMean = numberOrNothing(m, "signal_mean", 0, 1);
    for (const auto& s : m.at("systems")) {
        row.systems.push_back({s.at("system").get<std::string>(), unsignedAt(s, "tensors"),
                               unsignedAt(s, "measured"), unsignedAt(s, "parameters"),
                               numberOrNothing(s, "theta_mean", 0, kThetaMax)});
    }
    row.fromCache = m.value("from_cache", false);
}

} // namespace

FleetReport readFleetReport(const RootedPath& path) {
    return readBoundedJson(path, {64u << 20, 4u << 20}, "a fleet report", fleetFromJson);
}

FleetReport fleetFromJson(const nlohmann::json& document) {
    FleetReport report;
    try {
        report.params = readReportPreamble(document, kFleetFormat, kFleetReportVersion, "fleet report");
        for (const auto& m : document.at("models")) {
            FleetRow row;
            row.path = m.at("path").get<std::string>();
            row.name = m.at("name").get<std::string>();
            if (m.contains("error")) {
                row.error = m.at("error").get<std::string>();
                if (row.error.empty()) {
                    throw std::runtime_error("model '" + row.path + "': empty error");
                }
                report.rows.push_back(std::move(row));
                continue;
            }
            try {
                readMeasuredRow(m, row);
            } catch (const std::runtime_error& error) {
                throw std::runtime_error("model '" + row.path + "': " + error.what());
            }
            report.rows.push_back(std::move(row));
        }
    } catch (const nlohmann::json::exception& error) {
        throw std::runtime_error(std::string("not a valid fleet report: ") + error.what());
    }
    return report;
}

FleetReport mergeFleetReports(const std::vector<FleetReport>& reports, std::vector<std::string>* warnings) {
    FleetReport merged;
    if (reports.empty()) {
        return merged;
    }
    merged.params = reports.front().params;
    std::set<std::string> seen;
    for (const FleetReport& report : reports) {
        if (report.params.sample != merged.params.sample) {
            throw std::runtime_error(
                "the reports were measured with different samples (" + sampleJson(merged.params).dump() +
                " and " + sampleJson(report.params).dump() + "): their θ cannot be ranked together");
        }
        for (const FleetRow& row : report.rows) {
            if (!seen.insert(row.path).second) {
                if (warnings != nullptr) {
                    warnings->push_back("'" + row.path + "' is in more than one report: the first is kept");
                }
                continue;
            }
            merged.rows.push_back(row);
        }
    }
    return merged;
}

std::string scaleLawText(const ScaleLaw& law) {
    if (!law.fitted) {
        return "Scale law: not fitted — " + law.reason + ".";
    }
    const bool down = law.slope < 0;
    return "Scale law: θ mean = " + fixedDecimals(law.intercept, 3) + (down ? " − " : " + ") +
           fixedDecimals(std::fabs(law.slope), 3) + "° · log10(parameters)   r² " + fixedDecimals(law.r2, 3) +
           ", " + std::to_string(law.models) + " models";
}

std::string fleetText(const FleetReport& report) {
    std::ostringstream out;
    std::size_t failed = 0;
    for (const FleetRow& row : report.rows) {
        failed += row.ok() ? 0 : 1;
    }
    out << "Fleet: " << report.rows.size() << (report.rows.size() == 1 ? " model" : " models");
    if (failed != 0) {
        out << ", " << failed << " unreadable";
    }
    out << " · Z-measure " << kZMeasureVersion << ", "
        << (report.params.sample == kSampleAll ? std::string("every value")
                                               : groupDigits(report.params.sample) + " values")
        << " per tensor\n\n";
    const std::vector<std::size_t> ranking = report.ranking();
    if (!ranking.empty()) {
        out << padText("#", 4, true) << "  " << padText("model", 28) << padText("file", 30)
            << padText("arch", 10) << padText("params", 9, true) << padText("size", 11, true)
            << padText("bpw", 7, true) << padText("θ mean", 9, true) << padText("signal", 8, true);
        for (System s : kSystems) {
            out << padText(std::string(systemName(s)), 10, true);
        }
        out << "  dtypes\n";
        int rank = 0;
        for (std::size_t i : ranking) {
            const FleetRow& row = report.rows[i];
            out << padText(std::to_string(++rank), 4, true) << "  "
                << padText(shortened(escapeText(row.name), 26), 28)
                << padText(shortened(escapeText(fileLabel(row.path)), 28), 30)
                << padText(escapeText(row.architecture.empty() ? "?" : row.architecture), 10)
                << padText(humanCount(row.parameters), 9, true) << padText(humanBytes(row.fileSize), 11, true)
                << padText(fixedDecimals(row.bitsPerWeight, 2), 7, true)
                << padText(thetaText(row.thetaMean), 9, true)
                << padText(row.signalMean ? fixedDecimals(*row.signalMean, 3) : "—", 8, true);
            for (System s : kSystems) {
                out << padText(thetaText(row.systemTheta(s), 1), 10, true);
            }
            out << "  " << escapeText(fleetDtypeText(row)) << "\n";
        }
    }
    for (const FleetRow& row : report.rows) {
        if (row.ok() && !row.thetaMean) {
            out << "  not ranked: " << escapeText(row.path) << " (no tensor has a θ)\n";
        }
    }
    if (failed != 0) {
        out << "\nUnreadable:\n";
        for (const FleetRow& row : report.rows) {
            if (!row.ok()) {
                out << "  " << escapeText(row.error) << "\n";
            }
        }
    }
    out << "\n" << scaleLawText(report.scaleLaw()) << "\n";
    return out.str();
}

std::string fleetCsv(const FleetReport& report) {
    std::ostringstream out;
    out << "rank,name,path,architecture,parameters,file_size,bits_per_weight,dtypes,tensors,measured,theta_"
           "mean,"
           "signal_mean";
    for (System s : kSystems) {
        out << ",theta_" << systemName(s);
    }
    out << ",z_measure,sample,error\n";
    std::vector<int> rankOf(report.rows.size(), 0);
    int rank = 0;
    for (std::size_t i : report.ranking()) {
        rankOf[i] = ++rank;
    }
    const std::string sample =
        report.params.sample == kSampleAll ? std::string("all") : std::to_string(report.params.sample);
    for (std::size_t i = 0; i < report.rows.size(); ++i) {
        const FleetRow& row = report.rows[i];
        out << (rankOf[i] != 0 ? std::to_string(rankOf[i]) : std::string()) << ',' << csvQuoted(row.name)
            << ',' << csvQuoted(row.path) << ',' << csvQuoted(row.architecture) << ',';
        if (row.ok()) {
            out << row.parameters << ',' << row.fileSize << ',' << csvNumber(row.bitsPerWeight) << ','
                << csvQuoted(fleetDtypeText(row)) << ',' << row.tensors << ',' << row.measured << ','
                << csvNumber(row.thetaMean) << ',' << csvNumber(row.signalMean);
        } else {
            out << ",,,,,,,";
        }
        for (System s : kSystems) {
            out << ',' << csvNumber(row.systemTheta(s));
        }
        out << ',' << kZMeasureVersion << ',' << sample << ','
            << (row.ok() ? std::string() : csvQuoted(row.error)) << '\n';
    }
    return out.str();
}

std::string fleetMarkdown(const FleetReport& report) {
    std::ostringstream out;
    out << "# Fleet report\n\nZ-measure " << kZMeasureVersion << ", "
        << (report.params.sample == kSampleAll ? std::string("every value")
                                               : groupDigits(report.params.sample) + " values")
        << " per tensor. θ runs from 0° (noise) to 90° (structure).\n\n## Z-ranking\n\n"
        << "| # | model | architecture | parameters | size | bits/weight | θ mean | signal |";
    for (System s : kSystems) {
        out << " " << systemName(s) << " |";
    }
    out << "\n|---|---|---|---|---|---|---|---|";
    for (std::size_t i = 0; i < std::size(kSystems); ++i) {
        out << "---|";
    }
    out << "\n";
    int rank = 0;
    for (std::size_t i : report.ranking()) {
        const FleetRow& row = report.rows[i];
        out << "| " << ++rank << " | " << markdownText(row.name) << " | " << markdownText(row.architecture)
            << " | " << humanCount(row.parameters) << " | " << humanBytes(row.fileSize) << " | "
            << fixedDecimals(row.bitsPerWeight, 2) << " | " << thetaText(row.thetaMean) << " | "
            << (row.signalMean ? fixedDecimals(*row.signalMean, 3) : "—") << " |";
        for (System s : kSystems) {
            out << " " << thetaText(row.systemTheta(s), 1) << " |";
        }
        out << "\n";
    }
    bool anyFailed = false;
    for (const FleetRow& row : report.rows) {
        if (!row.ok()) {
            out << (anyFailed ? "" : "\n## Unreadable\n\n") << "- " << markdownText(row.error) << "\n";
            anyFailed = true;
        }
    }
    out << "\n## Scale law\n\n" << markdownText(scaleLawText(report.scaleLaw())) << "\n";
    return out.str();
}

} // namespace organ
