#pragma once

#include "cli.h"
#include "plan_run.h"
#include "support/text_safety.h"

#include <iostream>
#include <string>
#include <vector>

namespace organ::cli {

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
