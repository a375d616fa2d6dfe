#pragma once

#include "gguf/gguf_writer.h"
#include "graft/chimera_spec.h"
#include "graft/graft_check.h"
#include "support/job.h"

#include <functional>
#include <string>
#include <vector>

namespace organ {

struct AssemblyOptions {
    // Keep a chimera that fails validation (named as such by the caller); otherwise it is
    // never renamed into place.
    bool keepInvalid = false;
};

// Writes the chimera through the GGUF writer (partial file, fsync, verification) and validates
// the written partial as llama.cpp would load it before renaming it into place; refuses when
// the report has errors.
JobResult assembleChimera(const GraftPlan& plan, const GraftModels& models, const CompatibilityReport& report,
                          const std::string& output, const AssemblyOptions& options = {},
                          const ProgressFn& progress = {}, const StopToken* stop = nullptr);

// Check → assemble → validate: the one workflow the command line and the window run. The
// report is handed to `checked` before anything is written; with errors nothing is. The
// validation is of the file written (empty when none was).
struct GraftOutcome {
    CompatibilityReport report;
    JobResult written;
    std::vector<Finding> validation;
};
GraftOutcome graftChimera(const GraftPlan& plan, const GraftModels& models, const std::string& output,
                          const AssemblyOptions& options = {},
                          const std::function<void(const CompatibilityReport&)>& checked = {},
                          const ProgressFn& progress = {}, const StopToken* stop = nullptr);

} // namespace organ
