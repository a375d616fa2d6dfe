// The sensitivity report as JSON and text, and read back from JSON for another budget.
#include "measure/quant_error.h"
#include "quant/quantize.h"
#include "support/bounded_json.h"
#include "support/errors.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "vitals/quant_sensitivity.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace organ {
namespace {

// A report of a model of some thousand tensors and a dozen types.
constexpr JsonLimits kSensitivityLimits{64u << 20, 4u << 20};

double finiteNumber(const nlohmann::json& value, const std::string& what) {
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
        throw FormatError(what + " is not a number of 0 or more");
    }
    return value.get<double>();
}

// One group of the report, checked against the model's group of the same place.
GroupSensitivity groupFromJson(const nlohmann::json& g, const QuantGroup& expected) {
    GroupSensitivity out;
    out.name = g.value("group", "");
    if (out.name != expected.name) {
        throw FormatError("group '" + escapeText(out.name) + "' where the model has '" + expected.name + "'");
    }
    const nlohmann::json& tensors = g.at("tensors");
    if (!tensors.is_array() || tensors.size() != expected.tensors.size()) {
        throw FormatError(expected.name + ": its tensors are not the model's");
    }
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (!tensors[i].is_string() || tensors[i].get<std::string>() != expected.tensors[i]->name) {
            throw FormatError(expected.name + ": its tensors are not the model's");
        }
        out.tensors.push_back(expected.tensors[i]->name);
        out.elements += expected.tensors[i]->elements;
        out.bytes += expected.tensors[i]->bytes;
    }
    out.seconds = finiteNumber(g.value("seconds", nlohmann::json(0)), expected.name + ": seconds");
    for (const nlohmann::json& t : g.at("types")) {
        const auto type = tensorTypeFromName(t.value("type", ""));
        if (!type || !canQuantizeTo(*type) || !groupFits(expected, *type)) {
            throw FormatError(expected.name + ": type '" + escapeText(t.value("type", "")) +
                              "' cannot be its");
        }
        TypeSensitivity at;
        at.type = *type;
        for (const TensorInfo* tensor : expected.tensors) {
            at.bytes += storedBytes(*type, tensor->elements);
        }
        if (t.value("bytes", nlohmann::json(0)) != at.bytes) {
            throw FormatError(expected.name + " in " + std::string(tensorTypeName(*type)) + ": not " +
                              std::to_string(at.bytes) + " bytes");
        }
        const std::string what = expected.name + " in " + std::string(tensorTypeName(*type));
        at.klMean = finiteNumber(t.value("kl_mean", nlohmann::json()), what + ": kl_mean");
        at.klP99 = finiteNumber(t.value("kl_p99", nlohmann::json()), what + ": kl_p99");
        at.topAgreement =
            finiteNumber(t.value("top1_agreement", nlohmann::json()), what + ": top1_agreement");
        out.types.push_back(at);
    }
    return out;
}

nlohmann::json typeSensitivityJson(const TypeSensitivity& t) {
    return {{"type", tensorTypeName(t.type)},
            {"bytes", t.bytes},
            {"kl_mean", t.klMean},
            {"kl_p99", t.klP99},
            {"top1_agreement", t.topAgreement}};
}

} // namespace

SensitivityReport readSensitivity(const RootedPath& path, const GgufModel& model) {
    return readBoundedJson(
        path, kSensitivityLimits, "a sensitivity report", [&](const nlohmann::json& document) {
            const nlohmann::json& doc = document.value("format", "") == "organ-quantize-budget"
                                            ? document.at("sensitivity")
                                            : document;
            if (doc.value("format", "") != "organ-quantize-sensitivity" || doc.value("version", 0) != 1) {
                throw FormatError(
                    "not a sensitivity report of organ quantize (format organ-quantize-sensitivity, "
                    "version 1)");
            }
            SensitivityReport report;
            report.model = doc.value("model", "");
            const auto grouping = quantGroupingFromName(doc.value("grouping", ""));
            if (!grouping) {
                throw FormatError("grouping is tensor, layer or role");
            }
            report.grouping = *grouping;
            report.importance = doc.value("importance", false);
            report.tokens = doc.value("tokens", std::size_t(0));
            report.chunk = doc.value("chunk", std::size_t(0));
            report.scored = doc.value("scored", std::size_t(0));
            report.perplexity = finiteNumber(doc.value("perplexity", nlohmann::json()), "perplexity");
            report.referenceSeconds =
                finiteNumber(doc.value("reference_seconds", nlohmann::json(0)), "reference_seconds");
            for (const nlohmann::json& name : doc.at("types")) {
                const auto type = tensorTypeFromName(name.is_string() ? name.get<std::string>() : "");
                if (!type) {
                    throw FormatError("types: not a tensor type: " + escapeText(name.dump()));
                }
                report.types.push_back(*type);
            }
            const std::vector<QuantGroup> groups = quantGroups(model, report.grouping);
            const nlohmann::json& read = doc.at("groups");
            if (!read.is_array() || read.size() != groups.size()) {
                throw FormatError("its groups are not the " + std::to_string(groups.size()) + " " +
                                  std::string(quantGroupingName(report.grouping)) + " groups of " +
                                  fileLabel(model.path()));
            }
            for (std::size_t i = 0; i < groups.size(); ++i) {
                report.groups.push_back(groupFromJson(read[i], groups[i]));
            }
            return report;
        });
}

nlohmann::json sensitivityToJson(const SensitivityReport& report) {
    nlohmann::json groups = nlohmann::json::array();
    for (const GroupSensitivity& g : report.groups) {
        nlohmann::json types = nlohmann::json::array();
        std::transform(g.types.begin(), g.types.end(), std::back_inserter(types), typeSensitivityJson);
        nlohmann::json tensors = nlohmann::json::array();
        for (const std::string& name : g.tensors) {
            tensors.push_back(jsonText(name));
        }
        groups.push_back({{"group", jsonText(g.name)},
                          {"tensors", tensors},
                          {"elements", g.elements},
                          {"bytes", g.bytes},
                          {"seconds", g.seconds},
                          {"types", types}});
    }
    return {{"format", "organ-quantize-sensitivity"},
            {"version", 1},
            {"model", jsonText(report.model)},
            {"grouping", quantGroupingName(report.grouping)},
            {"importance", report.importance},
            {"types", typeNamesJson(report.types)},
            {"tokens", report.tokens},
            {"chunk", report.chunk},
            {"scored", report.scored},
            {"perplexity",
             std::isfinite(report.perplexity) ? nlohmann::json(report.perplexity) : nlohmann::json()},
            {"reference_seconds", report.referenceSeconds},
            {"groups", groups},
            {"notes", report.notes}};
}

std::string sensitivityText(const SensitivityReport& report) {
    std::size_t nameWidth = 8;
    double seconds = 0;
    for (const GroupSensitivity& g : report.groups) {
        nameWidth = std::max(nameWidth, g.name.size() + 2);
        seconds += g.seconds;
    }
    std::string out = escapeText(report.model) + ": KL divergence from the model itself with one " +
                      std::string(quantGroupingName(report.grouping)) + " group quantized" +
                      (report.importance ? " (with the importance matrix)" : "") + ", on " +
                      std::to_string(report.tokens) + " tokens" +
                      (report.chunk > 0 ? " in chunks of " + std::to_string(report.chunk) : std::string()) +
                      ", " + std::to_string(report.scored) + " scored; the model's own perplexity " +
                      fixedDecimals(report.perplexity, 4) + "\n(KL mean in thousandths of a nat)\n\n  " +
                      padText("group", nameWidth);
    for (TensorType type : report.types) {
        out += padText(std::string(tensorTypeName(type)), 10, true);
    }
    out += padText("seconds", 9, true) + "\n";
    for (const GroupSensitivity& g : report.groups) {
        out += "  " + padText(escapeText(g.name), nameWidth);
        for (TensorType type : report.types) {
            const auto t = std::find_if(g.types.begin(), g.types.end(),
                                        [&](const TypeSensitivity& x) { return x.type == type; });
            out += padText(t != g.types.end() ? fixedDecimals(1000 * t->klMean, 4) : "—", 10, true);
        }
        out += padText(fixedDecimals(g.seconds, 2), 9, true) + "\n";
    }
    out += "\n  the model's own logits: " + fixedDecimals(report.referenceSeconds, 2) + " s; " +
           std::to_string(report.groups.size()) + " groups: " + fixedDecimals(seconds, 2) + " s (" +
           fixedDecimals(report.groups.empty() ? 0.0 : seconds / double(report.groups.size()), 3) +
           " s a group)\n";
    return out;
}

} // namespace organ
