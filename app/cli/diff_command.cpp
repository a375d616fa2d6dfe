// organ diff: two models compared tensor by tensor.
#include "measure/model_diff.h"
#include "organs/organ_directory.h"
#include "report_run.h"
#include "support/text_format.h"

namespace organ::cli {

int runDiff(const std::vector<std::string>& args) {
    const SelectionArguments a = selectionArguments(args, 2, "diff needs two models");
    const std::string& first = a.parsed.positional()[0];
    const std::string& second = a.parsed.positional()[1];
    auto compare = [&](const StopToken& stop) {
        ProgressPrinter printer(fileLabel(first) + " → " + fileLabel(second));
        auto diff = diffModels(*openModel(first), *openModel(second), a.select, printingTo(printer), &stop,
                               a.threads);
        printer.finish();
        return diff;
    };
    return runReport("diff", a.parsed, {first, second}, compare, modelDiffText, modelDiffToJson);
}

} // namespace organ::cli
