#include "cli.h"
#include "format_error.h"
#include "measure_cache.h"
#include "measure_report.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
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

// Written beside the target and renamed into place, so that a report is whole or absent.
bool writeReport(const std::string& path, const std::string& text) {
    const std::string partial = path + ".partial";
    {
        std::ofstream out(partial, std::ios::trunc | std::ios::binary);
        out << text;
        out.close();
        if (!out) {
            std::cerr << "organ measure: " << fileLabel(path) << ": cannot write the report\n";
            std::remove(partial.c_str());
            return false;
        }
    }
    std::error_code error;
    std::filesystem::rename(partial, path, error);
    if (error) {
        std::cerr << "organ measure: " << fileLabel(path) << ": " << error.message() << "\n";
        return false;
    }
    return true;
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
    std::vector<MeasuredModel> measured;
    int status = kExitOk;
    for (const auto& path : parsed.positional()) {
        MeasuredModel m;
        try {
            m.model = GgufModel::open(path);
        } catch (const std::exception& error) {
            std::cerr << "organ measure: " << error.what() << "\n";
            status = kExitInvalid;
            continue;
        }
        m.anatomy = analyzeAnatomy(*m.model);
        if (!(useCache && cache.load(m, options.params))) {
            ProgressPrinter printer(fileLabel(path));
            const JobResult result =
                measureModel(*m.model, m.anatomy, options, m.measurement,
                             [&](const Progress& p) { printer.update(p.done, p.total, p.stage); });
            printer.finish();
            if (!result.isOk()) {
                std::cerr << "organ measure: " << fileLabel(path) << ": " << result.message << "\n";
                status = kExitInvalid;
                continue;
            }
            std::string error;
            if (useCache && !cache.store(m, &error)) {
                std::cerr << "organ measure: " << error << "\n";
            }
        }
        std::cout << (measured.empty() ? "" : "\n") << m.measurement.name << "  (" << fileLabel(path) << ")"
                  << (m.measurement.fromCache ? "  [from cache; --no-cache measures afresh]" : "") << "\n"
                  << measurementHeadline(m.measurement) << "\n\n"
                  << tensorThetaTable(m) << "\n"
                  << systemThetaTable(m);
        measured.push_back(std::move(m));
    }
    if (measured.size() > 1) {
        std::cout << "\nZ-ranking\n" << rankingTable(measured);
    }
    if (const auto json = parsed.option("--json"); json && !measured.empty()) {
        status = writeReport(*json, measurementsDocument(measured).dump(2) + "\n") ? status : kExitInvalid;
    }
    if (const auto csv = parsed.option("--csv"); csv && !measured.empty()) {
        status = writeReport(*csv, measurementsCsv(measured)) ? status : kExitInvalid;
    }
    if (const auto markdown = parsed.option("--markdown"); markdown && !measured.empty()) {
        status = writeReport(*markdown, measurementsMarkdown(measured)) ? status : kExitInvalid;
    }
    return status;
}

} // namespace organ::cli
