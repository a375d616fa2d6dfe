#pragma once

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

} // namespace organ
