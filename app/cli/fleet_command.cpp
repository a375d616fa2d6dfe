#include "cli.h"
#include "fleet/fleet.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <iostream>

namespace organ::cli {
namespace {

int writeReports(const Arguments& parsed, const FleetReport& report, const std::vector<std::string>& inputs) {
    int status = kExitOk;
    if (const auto json = parsed.option("--json")) {
        status = writeReport("fleet", *json, dumpJson(fleetToJson(report), 2) + "\n", inputs) ? status
                                                                                              : kExitInvalid;
    }
    if (const auto csv = parsed.option("--csv")) {
        status = writeReport("fleet", *csv, fleetCsv(report), inputs) ? status : kExitInvalid;
    }
    if (const auto markdown = parsed.option("--markdown")) {
        status = writeReport("fleet", *markdown, fleetMarkdown(report), inputs) ? status : kExitInvalid;
    }
    return status;
}

int mergeReports(const Arguments& parsed) {
    const auto reports =
        readEach("fleet", parsed.positional(), [](const std::string& path) { return readFleetReport(path); });
    if (!reports) {
        return kExitInvalid;
    }
    std::vector<std::string> warnings;
    FleetReport merged;
    try {
        merged = mergeFleetReports(*reports, &warnings);
    } catch (const std::exception& error) {
        std::cerr << "organ fleet: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
    for (const auto& warning : warnings) {
        std::cerr << "organ fleet: warning: " << escapeText(warning) << "\n";
    }
    std::cout << fleetText(merged);
    return writeReports(parsed, merged, parsed.positional());
}

} // namespace

int runFleet(const std::vector<std::string>& args) {
    const Arguments parsed(args, {"--no-cache", "--merge"},
                           {"--sample", "--threads", "--json", "--csv", "--markdown"});
    if (parsed.positional().empty()) {
        throw UsageError{parsed.flag("--merge") ? "fleet --merge needs at least one fleet report"
                                                : "fleet needs at least one file or folder"};
    }
    if (parsed.flag("--merge")) {
        if (parsed.option("--sample") || parsed.option("--threads") || parsed.flag("--no-cache")) {
            throw UsageError{"--merge reads reports: --sample, --threads and --no-cache do not apply"};
        }
        if (!reportTargetsOk("fleet", parsed, parsed.positional())) {
            return kExitInvalid;
        }
        return mergeReports(parsed);
    }
    const std::vector<std::string> models = findFleetModels(parsed.positional());
    if (models.empty()) {
        std::cerr << "organ fleet: no GGUF file or organ directory found in the paths given\n";
        return kExitInvalid;
    }
    // The models found are the inputs (an organ directory with every file in it); the folders
    // searched are not: a report may go beside the models.
    if (!reportTargetsOk("fleet", parsed, models)) {
        return kExitInvalid;
    }
    const MeasurementCache cache;
    FleetOptions options;
    options.params = sampleFrom(parsed);
    options.threads = static_cast<unsigned>(parsed.unsignedOption("--threads", 0));
    options.cache = parsed.flag("--no-cache") ? nullptr : &cache;
    FleetReport report;
    ProgressPrinter printer("fleet of " + std::to_string(models.size()) + " models");
    const JobResult result = measureFleet(models, options, report, printingTo(printer));
    printer.finish();
    for (const auto& warning : result.warnings) {
        std::cerr << "organ fleet: warning: " << escapeText(warning) << "\n";
    }
    std::cout << fleetText(report);
    // The reports list what was found, models that could not be read among them; never a model
    // as its own report's target.
    int status = writeReports(parsed, report, models);
    for (const FleetRow& row : report.rows) {
        if (!row.ok()) {
            status = kExitInvalid;
        }
    }
    return status;
}

} // namespace organ::cli
