#pragma once

#include "gguf/gguf_writer.h"
#include "graft/chimera_spec.h"
#include "graft/graft_check.h"
#include "purify/purify_model.h"
#include "support/job.h"

#include <functional>
#include <string>
#include <vector>

namespace organ {

struct AssemblyOptions {
    // Keep a chimera that fails validation (named as such by the caller); otherwise it is
    // never renamed into place.
    bool keepInvalid = false;
    // Where what purify operations did goes, tensor by tensor.
    std::shared_ptr<PurifyLog> purifyLog;
};

// Writes the chimera through the GGUF writer (partial file, fsync, verification) and validates
// the written partial as llama.cpp would load it before renaming it into place; refuses when
// the report has errors. An `output` not ending in ".gguf" is written as an organ directory
// (writeOrganDirectory: unchanged tensors of an organ directory linked, not copied).
JobResult assembleChimera(const GraftPlan& plan, const GraftModels& models, const CompatibilityReport& report,
                          const RootedPath& output, const AssemblyOptions& options = {},
                          const ProgressFn& progress = {}, const StopToken* stop = nullptr);

// Check → assemble → validate: the one workflow the command line and the window run. The
// report is handed to `checked` before anything is written; with errors nothing is. The
// validation is of the file written (empty when none was).
struct GraftOutcome {
    CompatibilityReport report;
    JobResult written;
    std::vector<Finding> validation;
    std::vector<PurifiedTensor> purified; // θ before and after of what purify operations did
};
GraftOutcome graftChimera(const GraftPlan& plan, const GraftModels& models, const RootedPath& output,
                          const AssemblyOptions& options = {},
                          const std::function<void(const CompatibilityReport&)>& checked = {},
                          const ProgressFn& progress = {}, const StopToken* stop = nullptr);

// `organ assemble --json` (and `organ graft --json`): the output, whether it was written and why
// not (`error`, null when it was), the check's and the validation's findings, and what purify
// operations did.
nlohmann::json graftOutcomeToJson(const GraftOutcome& outcome, const std::string& output);

} // namespace organ
