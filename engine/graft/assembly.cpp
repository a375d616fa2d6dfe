#include "graft/assembly.h"

#include "anatomy/model_validation.h"
#include "gguf/gguf_writer.h"
#include "organs/organ_directory.h"
#include "support/text_format.h"

#include <algorithm>

namespace organ {

JobResult assembleChimera(const GraftPlan& plan, const GraftModels& models, const CompatibilityReport& report,
                          const RootedPath& output, const AssemblyOptions& options,
                          const ProgressFn& progress, const StopToken* stop) {
    const auto blocking =
        std::count_if(report.findings.begin(), report.findings.end(), [&](const Finding& f) {
            return f.severity == Finding::Severity::Error && !(options.keepInvalid && f.fromValidation);
        });
    if (blocking != 0) {
        return JobResult::failed(fileLabel(output.path) + ": not written: the plan has " +
                                 std::to_string(blocking) + " error(s)");
    }
    const GgufWriteSpec spec =
        chimeraSpec(plan, models, report.layout, ChimeraSources::Writer, options.purifyLog);
    if (isOrganDirectoryTarget(output.path)) {
        // What llama.cpp would say of the chimera was checked from its spec, with the plan.
        OrganSource source;
        source.made = "graft";
        return writeOrganDirectory(spec, output, source, nullptr, progress, stop);
    }
    // Validated as llama.cpp would load it before it replaces anything: an invalid chimera is
    // never left on disk unless asked for.
    return writeGguf(output, spec, progress, stop, [&](const RootedPath& written) {
        return invalidModelRefusal(written, output.path, options.keepInvalid);
    });
}

GraftOutcome graftChimera(const GraftPlan& plan, const GraftModels& models, const RootedPath& output,
                          const AssemblyOptions& options,
                          const std::function<void(const CompatibilityReport&)>& checked,
                          const ProgressFn& progress, const StopToken* stop) {
    GraftOutcome outcome;
    GraftPlan withOutput = plan;
    withOutput.output = output.path;
    outcome.report = checkGraft(withOutput, models);
    if (checked) {
        checked(outcome.report);
    }
    AssemblyOptions logged = options;
    if (!logged.purifyLog) {
        logged.purifyLog = std::make_shared<PurifyLog>();
    }
    outcome.written = assembleChimera(withOutput, models, outcome.report, output, logged, progress, stop);
    outcome.purified = logged.purifyLog->tensors();
    if (outcome.written.isOk()) {
        outcome.validation = validateModel(*openModel(output));
    }
    return outcome;
}

nlohmann::json graftOutcomeToJson(const GraftOutcome& outcome, const std::string& output) {
    const JobResult& written = outcome.written;
    return {{"output", output},
            {"written", written.isOk()},
            {"error", written.isOk()                                   ? nlohmann::json()
                      : written.status == JobResult::Status::Cancelled ? nlohmann::json("cancelled")
                                                                       : nlohmann::json(written.message)},
            {"check", findingsToJson(outcome.report.findings)},
            {"validation", findingsToJson(outcome.validation)},
            {"purified", purifiedToJson(outcome.purified)}};
}

} // namespace organ
