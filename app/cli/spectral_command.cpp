// organ spectral: the heavy-tail exponent α of each weight matrix (spectral v1).
#include "measure/spectral.h"
#include "organs/organ_directory.h"
#include "report_run.h"
#include "support/text_format.h"

namespace organ::cli {

int runSpectral(const std::vector<std::string>& args) {
    const SelectionArguments a = selectionArguments(args, 1, "spectral needs one model");
    const std::string& path = a.parsed.positional().front();
    auto fit = [&](const StopToken& stop) {
        const auto model = openModel(path);
        ProgressPrinter printer(fileLabel(path));
        auto report = measureSpectra(*model, a.select, printingTo(printer), &stop, a.threads);
        printer.finish();
        return report;
    };
    return runReport("spectral", a.parsed, {path}, fit, spectralText, spectralToJson);
}

} // namespace organ::cli
