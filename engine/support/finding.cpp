#include "support/finding.h"

#include "support/text_safety.h"

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

FindingCounts countFindings(const std::vector<Finding>& findings) {
    FindingCounts counts;
    for (const Finding& f : findings) {
        counts.errors += f.severity == Finding::Severity::Error;
        counts.warnings += f.severity == Finding::Severity::Warning;
        counts.infos += f.severity == Finding::Severity::Info;
    }
    return counts;
}

std::string findingLine(const Finding& finding, std::string_view prefix) {
    std::string line(severityName(finding.severity));
    line += ": ";
    line += prefix;
    line += escapeText(finding.message);
    return line;
}

std::string findingsText(const std::vector<Finding>& findings, std::string_view label) {
    std::string text;
    for (const Finding& f : findings) {
        text += findingLine(f) + "\n";
    }
    if (!label.empty()) {
        const FindingCounts counts = countFindings(findings);
        text += escapeText(label) + ": " + std::to_string(counts.errors) + " error(s), " +
                std::to_string(counts.warnings) + " warning(s)\n";
    }
    return text;
}

nlohmann::json findingsToJson(const std::vector<Finding>& findings) {
    nlohmann::json list = nlohmann::json::array();
    for (const Finding& f : findings) {
        list.push_back(
            {{"severity", severityName(f.severity)},
             {"message", f.message},
             {"tensors", f.tensors},
             {"operation", f.operation >= 0 ? nlohmann::json(f.operation) : nlohmann::json(nullptr)},
             {"from_validation", f.fromValidation}});
    }
    const FindingCounts counts = countFindings(findings);
    return {{"ok", counts.ok()},
            {"errors", counts.errors},
            {"warnings", counts.warnings},
            {"infos", counts.infos},
            {"findings", std::move(list)}};
}

} // namespace organ
