#include "cli.h"
#include "measure/measure_cache.h"
#include "organs/organ_directory.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <iostream>

namespace organ::cli {

// organ extract MODEL -o DIR: the model as an organ directory, with its measurement when the
// cache holds one for the default parameters (nothing is measured here).
int runExtract(const std::vector<std::string>& args) {
    const Arguments parsed(args, {}, {"-o", "--output"});
    const auto output = parsed.option("-o") ? parsed.option("-o") : parsed.option("--output");
    if (parsed.positional().size() != 1 || !output) {
        throw UsageError{"extract needs one model and -o DIR"};
    }
    const std::string& path = parsed.positional().front();
    MeasuredModel m;
    try {
        m.model = GgufModel::open(path);
    } catch (const std::exception& error) {
        std::cerr << "organ extract: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
    m.anatomy = analyzeAnatomy(*m.model);
    std::optional<nlohmann::json> measurement;
    if (MeasurementCache().load(m, ZParams{})) {
        measurement = measurementToJson(m);
    }
    ProgressPrinter printer(fileLabel(path));
    const JobResult done =
        extractOrgans(*m.model, *output, measurement ? &*measurement : nullptr,
                      [&](const Progress& p) { printer.update(p.done, p.total, p.stage); });
    printer.finish();
    if (!done.isOk()) {
        std::cerr << "organ extract: " << escapeText(done.message) << "\n";
        return kExitInvalid;
    }
    std::cout << escapeText(fileLabel(*output)) << ": " << m.model->tensors().size() << " tensors"
              << (measurement ? ", with their measurement" : "") << "\n";
    return kExitOk;
}

int runAssembleOrgans(const std::string& directory, const std::string& output) {
    try {
        const OrganDirectory organs = OrganDirectory::open(directory);
        ProgressPrinter printer(fileLabel(directory));
        const JobResult done = assembleOrgans(
            organs, output, [&](const Progress& p) { printer.update(p.done, p.total, p.stage); });
        printer.finish();
        if (!done.isOk()) {
            std::cerr << "organ assemble: " << escapeText(done.message) << "\n";
            return kExitInvalid;
        }
        for (const std::string& warning : done.warnings) {
            std::cerr << "organ assemble: warning: " << escapeText(warning) << "\n";
        }
        std::cout << escapeText(fileLabel(output)) << ": assembled from " << organs.tensors().size()
                  << " tensor files\n";
        return kExitOk;
    } catch (const std::exception& error) {
        std::cerr << "organ assemble: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
}

} // namespace organ::cli
