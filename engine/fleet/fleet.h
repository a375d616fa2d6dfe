#pragma once

#include "measure/measure_cache.h"
#include "measure/measure_report.h"
#include "support/job.h"
#include "support/rooted_files.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace organ {

inline constexpr int kFleetReportVersion = 1;

// The models under `paths`: a file is taken as it is named; a folder is searched recursively for
// GGUF files (".gguf", any case) and organ directories (a folder with a manifest.json, not
// searched further). A split model counts once, as its first part's path, however many of its
// parts are found. Symbolic links to folders are not followed (no loops); a path that does not
// exist is returned too, so that the fleet lists it with its error. Sorted, without duplicates.
// With a root, every folder is opened beneath it (support/rooted_files.h) and a link found in one
// is listed without being looked through (opening it fails, and the fleet says so).
std::vector<std::string> findFleetModels(const std::vector<std::string>& paths,
                                         const std::shared_ptr<const FileRoot>& root = {});

// θ of one anatomical system in a fleet row.
struct FleetSystem {
    std::string system;
    std::uint64_t tensors = 0;
    std::uint64_t measured = 0;
    std::uint64_t parameters = 0;
    std::optional<double> thetaMean;
};

// One model of a fleet: what the report says about it, or why it could not be read.
struct FleetRow {
    std::string path;
    std::string error; // not empty: the model could not be opened or measured
    std::string name;
    std::string architecture;
    std::uint64_t parameters = 0;
    std::uint64_t fileSize = 0;
    double bitsPerWeight = 0;
    std::vector<std::pair<std::string, std::uint64_t>> dtypes; // dtype → parameters, most first
    std::uint64_t tensors = 0;
    std::uint64_t measured = 0; // tensors with a θ
    std::optional<double> thetaMean;
    std::optional<double> signalMean;
    std::vector<FleetSystem> systems; // in anatomical order, only systems present
    bool fromCache = false;

    bool ok() const { return error.empty(); }
    // θ mean of `system`, nothing when the model has none with a θ.
    std::optional<double> systemTheta(System system) const;
};

FleetRow fleetRowOf(const MeasuredModel& m);
// "Q4_K 71% Q6_K 18% F32 0.4%": the share of the parameters each dtype stores, most first.
std::string fleetDtypeText(const FleetRow& row);

// The least-squares line θ mean = slope · log10(parameters) + intercept over the models with a
// θ and parameters. Not fitted (with the reason) below three models or when every model has
// the same parameter count.
struct ScaleLaw {
    std::size_t models = 0;
    bool fitted = false;
    std::string reason; // why not fitted
    double slope = 0;
    double intercept = 0;
    double r2 = 0;
};
inline constexpr std::size_t kScaleLawMinModels = 3;
ScaleLaw fitScaleLaw(const std::vector<FleetRow>& rows);

struct FleetReport {
    ZParams params;
    std::vector<FleetRow> rows; // in the order found
    // Indices into rows of the measured ones, highest θ mean first (ties by name, then path).
    std::vector<std::size_t> ranking() const;
    ScaleLaw scaleLaw() const { return fitScaleLaw(rows); }
};

struct FleetOptions {
    ZParams params;
    unsigned threads = 0; // 0: one per core; shared between models measured at once
    const MeasurementCache* cache = nullptr;
    // Where the paths are opened beneath (none: as the process opens them).
    std::shared_ptr<const FileRoot> root;
    // Called as each model is done (from the workers, one call at a time).
    std::function<void(std::size_t index, const FleetRow& row)> onModel;
};

// Opens and measures every model of `paths` (from findFleetModels): up to `threads` models at
// once, each with its share of the threads, through the cache. A model that cannot be read or
// measured gets a row with its error; the others go on. One progress for the whole fleet:
// `done` of `total` are thousandths of models. Cancelled: the rows measured so far.
JobResult measureFleet(const std::vector<std::string>& paths, const FleetOptions& options, FleetReport& out,
                       const ProgressFn& progress = {}, const StopToken* stop = nullptr);

// `organ fleet --json` (docs/fleet.md) and back. fleetFromJson throws std::runtime_error
// naming what is wrong.
nlohmann::json fleetToJson(const FleetReport& report);
FleetReport fleetFromJson(const nlohmann::json& document);
// The fleet report at `path`, within 64 MiB and 4 194 304 JSON values (a fleet of 50 000 models
// is about 2 million; 80 MB took 1.76 GB under the old cap of 256 MiB): IoError or FormatError.
FleetReport readFleetReport(const RootedPath& path);
// Several fleet reports as one: every row, the same sample required; a model (by path) in two
// reports is kept once, and `warnings` says so.
FleetReport mergeFleetReports(const std::vector<FleetReport>& reports, std::vector<std::string>* warnings);

std::string fleetCsv(const FleetReport& report);
std::string fleetMarkdown(const FleetReport& report);
// For the terminal: the ranked table, the models that failed, the scale law.
std::string fleetText(const FleetReport& report);
std::string scaleLawText(const ScaleLaw& law);

} // namespace organ
