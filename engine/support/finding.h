#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace organ {

// One thing a check found: in a graft plan, a model's validation, a chimera's metadata.
struct Finding {
    enum class Severity { Error, Warning, Info };
    Severity severity = Severity::Error;
    std::string message;
    std::vector<std::string> tensors; // tensor names concerned
    int operation = -1;               // index into a plan's operations, -1 for none
    // Found by validating a planned chimera as llama.cpp would load it: --keep-invalid writes
    // the file despite such errors (and says so).
    bool fromValidation = false;
};

std::string_view severityName(Finding::Severity severity);

// How many findings of each severity; `ok()` when there is no error.
struct FindingCounts {
    std::size_t errors = 0;
    std::size_t warnings = 0;
    std::size_t infos = 0;
    bool ok() const { return errors == 0; }
};
FindingCounts countFindings(const std::vector<Finding>& findings);

// "error: <message>" with the message escaped for a terminal (escapeText), `prefix` between
// the severity and the message ("[operation 2 replace] "). The one format of a finding.
std::string findingLine(const Finding& finding, std::string_view prefix = {});

// One finding a line, then "<label>: 1 error(s), 2 warning(s)" when a label is given.
std::string findingsText(const std::vector<Finding>& findings, std::string_view label = {});

// The findings as JSON: {"ok", "errors", "warnings", "infos", "findings": [{"severity",
// "message", "tensors", "operation" (or null), "from_validation"}]} — what `organ validate
// --json`, `organ plan check --json` and the HTTP API answer.
nlohmann::json findingsToJson(const std::vector<Finding>& findings);

} // namespace organ
