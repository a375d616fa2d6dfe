#pragma once

#include "graft/assembly.h"
#include "support/job.h"

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace organ::cli {

// While alive, Ctrl-C (SIGINT), SIGTERM and SIGHUP stop the job through `stop` instead of killing
// the process, so that it ends cancelled with nothing written (a second one kills as usual). From
// then on SIGPIPE is ignored, to the process's end: stdout piped to a reader that left kills
// neither the job nor the process when it flushes the job's last lines at exit.
class StopOnInterrupt {
public:
    explicit StopOnInterrupt(StopToken& stop);
    ~StopOnInterrupt();
    StopOnInterrupt(const StopOnInterrupt&) = delete;
    StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;

private:
    struct Saved;
    std::unique_ptr<Saved> m_saved;
};

// How runPlan runs a plan besides writing it.
struct PlanRun {
    AssemblyOptions options;
    // Where graftOutcomeToJson goes, whatever the outcome, with `error`: why nothing was written
    // (null when it was).
    std::optional<std::string> json;
    std::vector<std::string> inputs; // files besides the plan's models never to write over
    // Runs once the report has no errors, before anything is written; a problem stops the job
    // (it is said on stderr and in the JSON outcome's `error`) and nothing is written.
    std::function<std::optional<std::string>(const CompatibilityReport&, const GraftModels&)> beforeWriting;
    // Adds to the JSON outcome.
    std::function<void(nlohmann::json&)> moreJson;
};

// The JSON outcome (`json`) of a run refused before its plan could be checked: nothing written,
// `error` saying why, `more` adding the command's own keys; never over `output` or an input.
void writeRefusedReport(const std::string& command, const std::string& json, const std::string& output,
                        const std::string& why, const std::vector<std::string>& inputs,
                        const std::function<void(nlohmann::json&)>& more);

// Checks the plan, prints the report, writes the chimera (Ctrl-C cancels: nothing written), then
// validates it; `command` names the command in messages. Returns the exit status.
int runPlan(const GraftPlan& plan, const std::string& output, const std::string& command, const PlanRun& run);

} // namespace organ::cli
