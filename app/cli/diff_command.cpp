// organ diff: two models compared tensor by tensor.
#include "cli.h"
#include "measure/model_diff.h"
#include "organs/organ_directory.h"
#include "report_run.h"
#include "support/text_format.h"

namespace organ::cli {

int runDiff(const std::vector<std::string>& args) {
    const Arguments parsed(args, {}, {"--layers", "--system", "--role", "--tensor", "--threads", "--json"});
    if (parsed.positional().size() != 2) {
        throw UsageError{"diff needs two models"};
    }
    const TensorSelector select = selectorFrom(parsed);
    const auto threads =
        static_cast<unsigned>(std::min<std::uint64_t>(parsed.unsignedOption("--threads", 0), 1024));
    const std::string& first = parsed.positional()[0];
    const std::string& second = parsed.positional()[1];
    return runReport(
        "diff", parsed, {first, second},
        [&](const StopToken& stop) {
            const auto a = openModel(first);
            const auto b = openModel(second);
            ProgressPrinter printer(fileLabel(first) + " → " + fileLabel(second));
            auto diff = diffModels(
                *a, *b, select, [&](const Progress& p) { printer.update(p.done, p.total, p.stage); }, &stop,
                threads);
            printer.finish();
            return diff;
        },
        modelDiffText, modelDiffToJson);
}

} // namespace organ::cli
