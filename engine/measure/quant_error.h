#pragma once

#include "gguf/gguf_model.h"
#include "quant/imatrix_file.h"
#include "support/job.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace organ {

// The types the quantization lab tries by default: the K-quants, Q8_0, the 4-bit IQ types, F16.
std::span<const TensorType> defaultLabTypes();

// The tensors of `model` that llama-quantize would quantize (allowsQuantization), in its order.
std::vector<const TensorInfo*> quantizableTensors(const GgufModel& model);

// What one tensor loses in one type: x its values, q those of its bytes in that type.
struct TypeError {
    TensorType type = TensorType::F16;
    std::uint64_t bytes = 0;
    double relativeRms = 0;                    // ‖q − x‖ / ‖x‖
    double cosine = 1;                         // x·q / (‖x‖ ‖q‖)
    std::optional<double> weightedRelativeRms; // the same with column j weighed by the matrix's w_j
    std::optional<double> theta;               // θ of the quantized bytes (Z-measure v1, default sample)
};

struct TensorErrors {
    std::string name;
    TensorType from = TensorType::F16;
    std::uint64_t elements = 0;
    std::uint64_t rowLength = 0;
    bool weighted = false;             // the importance matrix had weights for it
    std::optional<double> thetaBefore; // θ of the tensor as stored
    std::vector<TypeError> types;      // the candidate types whose block fits its rows
};

struct QuantErrorReport {
    std::string model;
    std::vector<TensorType> types;
    bool importance = false;
    std::vector<TensorErrors> tensors;
    std::vector<std::string> notes;
};

// For each quantizable tensor and each of `types` whose block fits its rows: the tensor encoded as
// organ quantize encodes it (with `importance`, read from `imatrixFile`, when given), decoded,
// and compared with its values. Nothing is written. `threads` workers (0: one per core) each hold
// one tensor at a time. Throws FormatError (a type the engine cannot write, a matrix that does not
// fit). Cancelled: nullopt.
std::optional<QuantErrorReport> measureQuantErrors(const GgufModel& model, std::span<const TensorType> types,
                                                   const ImatrixData* importance,
                                                   const std::string& imatrixFile,
                                                   const ProgressFn& progress = {},
                                                   const StopToken* stop = nullptr, unsigned threads = 0);

// The names of `types` as the lab's reports list them: ["Q2_K", …].
nlohmann::json typeNamesJson(const std::vector<TensorType>& types);

// `organ quantize --report --json`: per tensor, per type.
nlohmann::json quantErrorsToJson(const QuantErrorReport& report);
// The terminal's tables: relative RMS error and θ per tensor and type.
std::string quantErrorsText(const QuantErrorReport& report);

} // namespace organ
