#include "cli.h"
#include "gguf/specimen.h"
#include "support/text_format.h"

#include <iostream>

namespace organ::cli {

int runSpecimen(const std::vector<std::string>& args) {
    const Arguments parsed(args, {}, {"--seed"});
    if (parsed.positional().size() != 1) {
        throw UsageError{"specimen needs exactly one output file"};
    }
    const std::string& path = parsed.positional().front();
    const std::uint64_t seed = parsed.unsignedOption("--seed", 1);
    ProgressPrinter printer(fileLabel(path));
    const JobResult result = writeSpecimen(path, seed, {}, printingTo(printer));
    printer.finish();
    if (!result.isOk()) {
        std::cerr << "organ specimen: " << result.message << "\n";
        return kExitInvalid;
    }
    std::cout << "wrote " << path << " (seed " << seed << ")\n";
    return kExitOk;
}

} // namespace organ::cli
