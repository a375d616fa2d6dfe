#include "cli.h"
#include "measure/measure_cache.h"
#include "measure/measure_report.h"
#include "organs/organ_directory.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <cstdio>
#include <filesystem>
#include <iostream>

namespace organ::cli {
namespace {

ZParams parseSample(const Arguments& args) {
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

// Through the engine's safe writer: whole or absent, never over an input.
bool writeReport(const std::string& path, const std::string& text, const std::vector<std::string>& inputs) {
    try {
        std::vector<std::string> warnings;
        writeFileSafely(path, text, inputs, &warnings);
        for (const auto& warning : warnings) {
            std::cerr << "organ measure: warning: " << escapeText(warning) << "\n";
        }
        return true;
    } catch (const std::exception& error) {
        std::cerr << "organ measure: " << escapeText(error.what()) << "\n";
        return false;
    }
}

} // namespace

int runMeasure(const std::vector<std::string>& args) {
    const Arguments parsed(args, {"--no-cache"}, {"--sample", "--threads", "--json", "--csv", "--markdown"});
    if (parsed.positional().empty()) {
        throw UsageError{"measure needs at least one GGUF file"};
    }
    MeasureOptions options;
    options.params = parseSample(parsed);
    options.threads = static_cast<unsigned>(parsed.unsignedOption("--threads", 0));
    const bool useCache = !parsed.flag("--no-cache");
    const MeasurementCache cache;
    // Report targets are checked before anything is measured: never an input, never a
    // device, never two reports into one file.
    std::vector<std::string> reports;
    for (const char* option : {"--json", "--csv", "--markdown"}) {
        if (const auto target = parsed.option(option)) {
            for (const auto& other : reports) {
                if (std::filesystem::weakly_canonical(other) == std::filesystem::weakly_canonical(*target)) {
                    throw UsageError{"two reports cannot go to one file: " + escapeText(*target)};
                }
            }
            try {
                checkOutputTarget(*target, parsed.positional());
            } catch (const std::exception& error) {
                std::cerr << "organ measure: " << escapeText(error.what()) << "\n";
                return kExitInvalid;
            }
            reports.push_back(*target);
        }
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
            measureWithCache(m, options, useCache ? &cache : nullptr,
                             [&](const Progress& p) { printer.update(p.done, p.total, p.stage); });
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
        std::cout << (measured.empty() ? "" : "\n") << escapeText(m.measurement.name) << "  ("
                  << escapeText(fileLabel(path)) << ")"
                  << (m.measurement.fromCache ? "  [from cache; --no-cache measures afresh]" : "") << "\n"
                  << measurementHeadline(m.measurement) << "\n\n"
                  << tensorThetaTable(m) << "\n"
                  << systemThetaTable(m);
        measured.push_back(std::move(m));
    }
    if (measured.size() > 1) {
        std::cout << "\nZ-ranking\n" << rankingTable(measured);
    }
    const std::vector<std::string>& inputs = parsed.positional();
    if (const auto json = parsed.option("--json"); json && !measured.empty()) {
        status = writeReport(*json, dumpJson(measurementsDocument(measured), 2) + "\n", inputs)
                     ? status
                     : kExitInvalid;
    }
    if (const auto csv = parsed.option("--csv"); csv && !measured.empty()) {
        status = writeReport(*csv, measurementsCsv(measured), inputs) ? status : kExitInvalid;
    }
    if (const auto markdown = parsed.option("--markdown"); markdown && !measured.empty()) {
        status = writeReport(*markdown, measurementsMarkdown(measured), inputs) ? status : kExitInvalid;
    }
    return status;
}

} // namespace organ::cli
