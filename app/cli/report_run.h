#pragma once

#include "anatomy/tensor_selector.h"
#include "cli.h"
#include "plan_run.h"
#include "support/text_safety.h"

#include <algorithm>

#include <iostream>
#include <string>
#include <vector>

namespace organ::cli {

// The command line of a report on `models` models and a selection of their tensors (organ diff,
// organ spectral): selectorFrom's options, --threads N (0: one per core) and --json F. Throws
// UsageError with `usage` for another number of models.
struct SelectionArguments {
    Arguments parsed;
    TensorSelector select;
    unsigned threads = 0;
};
inline SelectionArguments selectionArguments(const std::vector<std::string>& args, std::size_t models,
                                             const char* usage) {
    Arguments parsed(args, {}, {"--layers", "--system", "--role", "--tensor", "--threads", "--json"});
    if (parsed.positional().size() != models) {
        throw UsageError{usage};
    }
    TensorSelector select = selectorFrom(parsed);
    const auto threads =
        static_cast<unsigned>(std::min<std::uint64_t>(parsed.unsignedOption("--threads", 0), 1024));
    return {std::move(parsed), std::move(select), threads};
}

// Each note on stderr after "organ COMMAND: note: ".
inline void printNotes(const char* command, const std::vector<std::string>& notes) {
    for (const std::string& note : notes) {
        std::cerr << "organ " << command << ": note: " << escapeText(note) << "\n";
    }
}

// A report that writes nothing but itself: `measure` run with a stop token (Ctrl-C), its notes
// (when it has any), its `text` on stdout and its `toJson` to --json, never over `inputs`. The exit
// status.
template <typename Measure, typename Text, typename ToJson>
int runReport(const char* command, const Arguments& parsed, const std::vector<std::string>& inputs,
              Measure measure, Text text, ToJson toJson) {
    const auto json = parsed.option("--json");
    if (json && !reportTargetsOk(command, parsed, inputs)) {
        return kExitInvalid;
    }
    decltype(measure(std::declval<const StopToken&>())) report;
    try {
        StopToken stop;
        const StopOnInterrupt interrupt(stop);
        report = measure(stop);
    } catch (const std::exception& error) {
        std::cerr << "organ " << command << ": " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
    if (!report) {
        std::cerr << "organ " << command << ": cancelled\n";
        return kExitInvalid;
    }
    if constexpr (requires { report->notes; }) {
        printNotes(command, report->notes);
    }
    std::cout << text(*report);
    return json && !writeReport(command, *json, dumpJson(toJson(*report), 2) + "\n", inputs) ? kExitInvalid
                                                                                             : kExitOk;
}

} // namespace organ::cli
