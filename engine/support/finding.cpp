#include "support/finding.h"

namespace organ {

std::string_view severityName(Finding::Severity severity) {
    switch (severity) {
    case Finding::Severity::Error:
        return "error";
    case Finding::Severity::Warning:
        return "warning";
    case Finding::Severity::Info:
        return "info";
    }
    return "?";
}

} // namespace organ
