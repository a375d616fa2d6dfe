#include "cli.h"
#include "measure/measure_cache.h"
#include "measure/measure_report.h"
#include "measure/shard_report.h"
#include "organs/organ_directory.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <cstdio>
#include <filesystem>
#include <iostream>

namespace organ::cli {

ZParams sampleFrom(const Arguments& args) {
    ZParams params;
    const auto text = args.option("--sample");
    if (!text) {
        return params;
    }
    if (*text == "all") {
        params.sample = kSampleAll;
        return params;
    }
    params.sample = args.unsignedOption("--sample", kDefaultSample);
    if (params.sample == 0) {
        throw UsageError{"--sample needs a positive number or 'all'"};
    }
    return params;
}

bool writeReport(const char* command, const std::string& path, const std::string& text,
                 const std::vector<std::string>& inputs) {
    try {
        std::vector<std::string> warnings;
        writeFileSafely(path, text, inputs, &warnings);
        for (const auto& warning : warnings) {
            std::cerr << "organ " << command << ": warning: " << escapeText(warning) << "\n";
        }
        return true;
    } catch (const std::exception& error) {
        std::cerr << "organ " << command << ": " << escapeText(error.what()) << "\n";
        return false;
    }
}

bool reportTargetsOk(const char* command, const Arguments& parsed, const std::vector<std::string>& inputs) {
    std::vector<std::string> reports;
    for (const char* option : {"--json", "--csv", "--markdown"}) {
        if (const auto target = parsed.option(option)) {
            for (const auto& other : reports) {
                if (std::filesystem::weakly_canonical(other) == std::filesystem::weakly_canonical(*target)) {
                    throw UsageError{"two reports cannot go to one file: " + escapeText(*target)};
                }
            }
            try {
                checkOutputTarget(*target, inputs);
            } catch (const std::exception& error) {
                std::cerr << "organ " << command << ": " << escapeText(error.what()) << "\n";
                return false;
            }
            reports.push_back(*target);
        }
    }
    return true;
}

namespace {

void printModel(const MeasuredModel& m, const std::string& source, bool first) {
    std::cout << (first ? "" : "\n") << escapeText(m.measurement.name) << "  (" << escapeText(source) << ")"
              << (m.measurement.fromCache ? "  [from cache; --no-cache measures afresh]" : "") << "\n"
              << measurementHeadline(m.measurement) << "\n"
              << (m.model->hasTensorFiles()
                      ? "organ directory: measured from samples of its tensor files, whose "
                        "SHA-256s are not checked (organ assemble --organs checks them)\n"
                      : "")
              << "\n"
              << tensorThetaTable(m) << "\n"
              << systemThetaTable(m);
}

int writeMeasurementReports(const Arguments& parsed, const std::vector<MeasuredModel>& measured,
                            const std::vector<std::string>& inputs, int status) {
    if (measured.empty()) {
        return status;
    }
    if (const auto json = parsed.option("--json")) {
        status = writeReport("measure", *json, dumpJson(measurementsDocument(measured), 2) + "\n", inputs)
                     ? status
                     : kExitInvalid;
    }
    if (const auto csv = parsed.option("--csv")) {
        status = writeReport("measure", *csv, measurementsCsv(measured), inputs) ? status : kExitInvalid;
    }
    if (const auto markdown = parsed.option("--markdown")) {
        status =
            writeReport("measure", *markdown, measurementsMarkdown(measured), inputs) ? status : kExitInvalid;
    }
    return status;
}

int measureOneShard(const Arguments& parsed, const MeasureOptions& options) {
    const std::string path = *parsed.option("--shard");
    if (!parsed.positional().empty() || parsed.option("--csv") || parsed.option("--markdown")) {
        throw UsageError{"--shard measures one file and writes its shard report with --json F"};
    }
    const auto json = parsed.option("--json");
    if (!json) {
        throw UsageError{"--shard needs --json F: the shard report that organ measure --merge reads"};
    }
    ShardReport report;
    JobResult result;
    ProgressPrinter printer(fileLabel(path));
    try {
        checkOutputTarget(*json, {path});
        result = measureShard(path, options, report, printingTo(printer));
    } catch (const std::exception& error) {
        printer.finish();
        std::cerr << "organ measure: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
    printer.finish();
    for (const auto& warning : report.warnings) {
        std::cerr << "organ measure: warning: " << escapeText(fileLabel(path)) << ": " << escapeText(warning)
                  << "\n";
    }
    if (!result.isOk()) {
        std::cerr << "organ measure: " << escapeText(fileLabel(path)) << ": " << escapeText(result.message)
                  << "\n";
        return kExitInvalid;
    }
    std::size_t measured = 0;
    for (const auto& [name, z] : report.tensors) {
        measured += z.hasTheta() ? 1 : 0;
    }
    std::cout << escapeText(fileLabel(path)) << ": part " << report.part << " of " << report.count << " of "
              << (report.identityKnown()
                      ? "'" + escapeText(report.name) + "' (" + escapeText(report.architecture) + ")"
                      : std::string("a model not yet known (its first part was not beside it)"))
              << ": " << report.tensors.size() << " tensors, " << measured << " with a θ\n";
    return writeReport("measure", *json, dumpJson(shardReportToJson(report), 1) + "\n", {path})
               ? kExitOk
               : kExitInvalid;
}

int mergeShards(const Arguments& parsed) {
    const auto reports = readEach("measure", parsed.positional(),
                                  [](const std::string& path) { return readShardReport(path); });
    if (!reports) {
        return kExitInvalid;
    }
    std::vector<MeasuredModel> measured;
    try {
        measured.push_back(mergeShardReports(*reports));
    } catch (const std::exception& error) {
        std::cerr << "organ measure: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
    printModel(measured.front(), "merged from " + std::to_string(reports->size()) + " shard reports", true);
    return writeMeasurementReports(parsed, measured, parsed.positional(), kExitOk);
}

} // namespace

int runMeasure(const std::vector<std::string>& args) {
    const Arguments parsed(args, {"--no-cache", "--merge"},
                           {"--sample", "--threads", "--json", "--csv", "--markdown", "--shard"});
    if (parsed.option("--shard") && parsed.flag("--merge")) {
        throw UsageError{"--shard measures one part, --merge joins the reports: one at a time"};
    }
    if (parsed.flag("--merge")) {
        if (parsed.positional().empty()) {
            throw UsageError{"--merge needs the shard reports to join"};
        }
        if (parsed.option("--sample") || parsed.option("--threads") || parsed.flag("--no-cache")) {
            throw UsageError{"--merge reads reports: --sample, --threads and --no-cache do not apply"};
        }
        if (!reportTargetsOk("measure", parsed, parsed.positional())) {
            return kExitInvalid;
        }
        return mergeShards(parsed);
    }
    if (parsed.option("--shard")) {
        MeasureOptions options;
        options.params = sampleFrom(parsed);
        options.threads = static_cast<unsigned>(parsed.unsignedOption("--threads", 0));
        return measureOneShard(parsed, options);
    }
    if (parsed.positional().empty()) {
        throw UsageError{"measure needs at least one GGUF file"};
    }
    MeasureOptions options;
    options.params = sampleFrom(parsed);
    options.threads = static_cast<unsigned>(parsed.unsignedOption("--threads", 0));
    const bool useCache = !parsed.flag("--no-cache");
    const MeasurementCache cache;
    // Report targets are checked before anything is measured: never an input, never a
    // device, never two reports into one file.
    if (!reportTargetsOk("measure", parsed, parsed.positional())) {
        return kExitInvalid;
    }
    std::vector<MeasuredModel> measured;
    int status = kExitOk;
    for (const auto& path : parsed.positional()) {
        MeasuredModel m;
        try {
            m.model = openModel(path);
        } catch (const std::exception& error) {
            std::cerr << "organ measure: " << escapeText(error.what()) << "\n";
            status = kExitInvalid;
            continue;
        }
        m.anatomy = analyzeAnatomy(*m.model);
        ProgressPrinter printer(fileLabel(path));
        const CachedMeasurement done =
            measureWithCache(m, options, useCache ? &cache : nullptr, printingTo(printer));
        printer.finish();
        if (!done.cacheWarning.empty()) {
            std::cerr << "organ measure: warning: " << escapeText(done.cacheWarning) << "\n";
        }
        if (!done.result.isOk()) {
            std::cerr << "organ measure: " << escapeText(fileLabel(path)) << ": "
                      << escapeText(done.result.message) << "\n";
            status = kExitInvalid;
            continue;
        }
        if (!done.storeError.empty()) {
            std::cerr << "organ measure: warning: " << escapeText(done.storeError) << "\n";
        }
        printModel(m, fileLabel(path), measured.empty());
        measured.push_back(std::move(m));
    }
    if (measured.size() > 1) {
        std::cout << "\nZ-ranking\n" << rankingTable(measured);
    }
    return writeMeasurementReports(parsed, measured, parsed.positional(), status);
}

} // namespace organ::cli
