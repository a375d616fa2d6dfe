#pragma once

#include "anatomy/anatomy.h"
#include "gguf/gguf_model.h"
#include "measure/model_measure.h"

#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace organ {

// A model with its anatomy and its measurement: what every report needs.
struct MeasuredModel {
    std::shared_ptr<const GgufModel> model;
    ModelAnatomy anatomy;
    ModelMeasurement measurement;
    // The tensors to report (parallel to the model's tensors); empty: every tensor. The
    // measurement's groups should then be aggregated over the same tensors.
    std::vector<bool> include;

    bool reported(std::size_t tensor) const { return include.empty() || include[tensor]; }
};

nlohmann::json zResultToJson(const ZResult& z);
ZResult zResultFromJson(const nlohmann::json& j);

// One model: identity, parameters, groups and every tensor (docs/measure-json.md).
nlohmann::json measurementToJson(const MeasuredModel& m);
// The whole `organ measure --json` document: version, parameters, models, ranking.
nlohmann::json measurementsDocument(const std::vector<MeasuredModel>& models);

// Text from a file, made safe for a report: in Markdown with the characters Markdown acts on
// escaped; in CSV as one quoted field, a leading =, +, - or @ after a quote mark (a spreadsheet
// would run it as a formula).
std::string markdownText(const std::string& raw);
std::string csvQuoted(const std::string& raw);
// A number in a CSV field: 10 significant digits, empty when there is none.
std::string csvNumber(const std::optional<double>& v);

// An optional number in a report: the number, or null; and back (absent or null: nothing).
// Reading refuses what a report cannot hold, naming the key: anything but a number, or one
// outside [min, max] (every number must be finite). Throws std::runtime_error.
nlohmann::json optionalNumber(const std::optional<double>& v);
std::optional<double> numberOrNothing(const nlohmann::json& j, const char* key,
                                      double min = -std::numeric_limits<double>::max(),
                                      double max = std::numeric_limits<double>::max());
// A report's count or size: a whole number of 0 or more (nlohmann would turn -5 into
// 18446744073709551611). Throws std::runtime_error naming the key.
std::uint64_t unsignedAt(const nlohmann::json& j, const char* key);
// θ and its mean lie in [0°, 90°], a signal in [0, 1].
inline constexpr double kThetaMax = 90.0;

// The sample as reports write it: a number, or "all".
nlohmann::json sampleJson(const ZParams& params);
// The opening of organ's JSON reports ("format", "version", "z_measure", "parameters.sample"),
// checked: throws std::runtime_error naming `what` when it is another document or version, or
// another Z-measure; nlohmann's exceptions when a field is missing or mistyped. Returns the sample.
ZParams readReportPreamble(const nlohmann::json& document, const char* format, int version, const char* what);

std::string measurementsCsv(const std::vector<MeasuredModel>& models);
std::string measurementsMarkdown(const std::vector<MeasuredModel>& models);

// Plain text for the terminal: a headline with the version and parameters, the tensor
// table, the per-system summary, the ranking.
std::string measurementHeadline(const ModelMeasurement& m);
std::string tensorThetaTable(const MeasuredModel& m);
std::string systemThetaTable(const MeasuredModel& m);
std::string rankingTable(const std::vector<MeasuredModel>& models);

} // namespace organ
