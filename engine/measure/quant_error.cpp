#include "measure/quant_error.h"

#include "measure/model_diff.h"
#include "measure/model_measure.h"
#include "measure/zmeasure.h"
#include "quant/dequant.h"
#include "quant/quant_mix.h"
#include "quant/quantize.h"
#include "quant/quantize_model.h"
#include "support/errors.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

namespace organ {
namespace {

constexpr TensorType kLabTypes[] = {TensorType::Q2_K,   TensorType::Q3_K,   TensorType::Q4_K,
                                    TensorType::Q5_K,   TensorType::Q6_K,   TensorType::Q8_0,
                                    TensorType::IQ4_NL, TensorType::IQ4_XS, TensorType::F16};

// Sums over a tensor in double precision: the error, the values, the quantized values and their
// products (DiffSums), and the error and values weighed by the importance of each value's column.
struct ErrorSums {
    DiffSums plain;
    double weightedDiff = 0, weightedX = 0;
};

ErrorSums errorSums(const std::vector<float>& x, const std::vector<float>& q, std::uint64_t rowLength,
                    std::uint64_t rowsPerExpert, const std::vector<float>& weights) {
    ErrorSums s;
    s.plain.addValues(x.data(), q.data(), x.size());
    for (std::size_t i = 0; i < x.size() && !weights.empty(); ++i) {
        const double a = x[i];
        const double d = double(q[i]) - a;
        const std::uint64_t row = i / rowLength;
        const double w = weights[(row / rowsPerExpert) * rowLength + i % rowLength];
        s.weightedDiff += w * d * d;
        s.weightedX += w * a * a;
    }
    return s;
}

double ratio(double a, double b) {
    return b > 0 ? a / b : 0.0;
}

// One tensor in every candidate type whose block fits its rows.
TensorErrors measureTensorErrors(const GgufModel& model, const TensorInfo& t,
                                 std::span<const TensorType> types, const std::vector<float>& weights,
                                 const StopToken* stop) {
    TensorErrors out;
    out.name = t.name;
    out.from = t.type;
    out.elements = t.elements;
    out.rowLength = t.ne[0];
    out.weighted = !weights.empty();
    std::vector<float> values(static_cast<std::size_t>(t.elements));
    dequantizeRange(t.type, model.tensorData(t), 0, values.size(), values.data());
    if (auto z = measureTensor(t.type, model.tensorData(t), t.elements, ZParams{}, 1, stop)) {
        out.thetaBefore = z->theta;
    }
    const std::uint64_t rows = t.elements / t.ne[0];
    const std::uint64_t rowsPerExpert = std::max<std::uint64_t>(1, t.ne[1]);
    std::vector<std::byte> bytes;
    std::vector<float> decoded(values.size());
    for (TensorType type : types) {
        if (t.ne[0] % traitsOf(type).blockSize != 0 || (stop != nullptr && stop->stopRequested())) {
            continue;
        }
        TypeError e;
        e.type = type;
        e.bytes = storedBytes(type, t.elements);
        bytes.resize(static_cast<std::size_t>(e.bytes));
        const bool weigh = !weights.empty() && takesImportance(type);
        const std::uint64_t rowBytes = storedBytes(type, t.ne[0]);
        for (std::uint64_t expert = 0; expert * rowsPerExpert < rows; ++expert) {
            const std::uint64_t first = expert * rowsPerExpert;
            const std::uint64_t count = std::min(rowsPerExpert, rows - first);
            quantizeRows(type, values.data() + first * t.ne[0], count, t.ne[0],
                         weigh ? weights.data() + expert * t.ne[0] : nullptr,
                         bytes.data() + first * rowBytes);
        }
        dequantizeRange(type, bytes, 0, decoded.size(), decoded.data());
        const ErrorSums s = errorSums(values, decoded, t.ne[0], rowsPerExpert, weights);
        const DiffSums& p = s.plain;
        e.relativeRms = std::sqrt(ratio(p.dd, p.aa));
        e.cosine = p.aa > 0 && p.bb > 0 ? p.ab / std::sqrt(p.aa * p.bb) : (p.aa == p.bb ? 1.0 : 0.0);
        if (!weights.empty()) {
            e.weightedRelativeRms = std::sqrt(ratio(s.weightedDiff, s.weightedX));
        }
        if (auto z = measureTensor(type, bytes, t.elements, ZParams{}, 1, stop)) {
            e.theta = z->theta;
        }
        out.types.push_back(e);
    }
    return out;
}

} // namespace

std::span<const TensorType> defaultLabTypes() {
    return kLabTypes;
}

std::vector<const TensorInfo*> quantizableTensors(const GgufModel& model) {
    std::vector<MixTensor> mix;
    for (const TensorInfo& t : model.tensors()) {
        mix.push_back({t.name, t.type, t.ne});
    }
    std::vector<const TensorInfo*> out;
    for (std::size_t i : llamaTensorOrder(mix)) {
        if (allowsQuantization(mix[i], QuantizeRecipe{})) {
            out.push_back(&model.tensors()[i]);
        }
    }
    return out;
}

std::optional<QuantErrorReport> measureQuantErrors(const GgufModel& model, std::span<const TensorType> types,
                                                   const ImatrixData* importance,
                                                   const std::string& imatrixFile, const ProgressFn& progress,
                                                   const StopToken* stop, unsigned threads) {
    for (TensorType type : types) {
        if (!canQuantizeTo(type)) {
            throw FormatError(std::string(tensorTypeName(type)) + ": the engine writes " +
                              writableTypesText());
        }
    }
    QuantErrorReport report;
    report.model = fileLabel(model.path());
    report.types.assign(types.begin(), types.end());
    report.importance = importance != nullptr;
    const std::vector<const TensorInfo*> tensors = quantizableTensors(model);
    // The weights are checked (and their notes made) before any work, as organ quantize does.
    std::vector<std::vector<float>> weights(tensors.size());
    if (importance != nullptr) {
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            weights[i] = importanceWeightsOf(*importance, imatrixFile, *tensors[i], report.notes);
        }
    }
    report.tensors.resize(tensors.size());
    std::atomic<std::size_t> next{0};
    std::atomic<std::size_t> finished{0};
    std::mutex progressMutex;
    ProgressThrottle throttle(progress);
    std::exception_ptr failure;
    auto worker = [&] {
        try {
            for (std::size_t i = next++; i < tensors.size(); i = next++) {
                if (stop != nullptr && stop->stopRequested()) {
                    return;
                }
                report.tensors[i] = measureTensorErrors(model, *tensors[i], types, weights[i], stop);
                weights[i] = {};
                std::lock_guard lock(progressMutex);
                throttle.report(++finished, tensors.size(), "measuring");
            }
        } catch (...) {
            std::lock_guard lock(progressMutex);
            failure = std::current_exception();
            next = tensors.size();
        }
    };
    {
        std::vector<std::jthread> pool;
        const unsigned workers = threads == 0 ? defaultThreadCount() : threads;
        for (unsigned w = 1; w < workers; ++w) {
            pool.emplace_back(worker);
        }
        worker();
    }
    if (failure) {
        std::rethrow_exception(failure);
    }
    if (stop != nullptr && stop->stopRequested()) {
        return std::nullopt;
    }
    throttle.report(tensors.size(), tensors.size(), "done", true);
    return report;
}

nlohmann::json typeNamesJson(const std::vector<TensorType>& types) {
    nlohmann::json names = nlohmann::json::array();
    for (TensorType type : types) {
        names.push_back(tensorTypeName(type));
    }
    return names;
}

nlohmann::json quantErrorsToJson(const QuantErrorReport& report) {
    auto optional = [](const std::optional<double>& v) {
        return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    nlohmann::json tensors = nlohmann::json::array();
    for (const TensorErrors& t : report.tensors) {
        nlohmann::json types = nlohmann::json::array();
        for (const TypeError& e : t.types) {
            types.push_back({{"type", tensorTypeName(e.type)},
                             {"bytes", e.bytes},
                             {"bits_per_weight", 8.0 * double(e.bytes) / double(t.elements)},
                             {"relative_rms", e.relativeRms},
                             {"cosine", e.cosine},
                             {"weighted_relative_rms", optional(e.weightedRelativeRms)},
                             {"theta", optional(e.theta)}});
        }
        tensors.push_back({{"name", jsonText(t.name)},
                           {"from", tensorTypeName(t.from)},
                           {"elements", t.elements},
                           {"importance", t.weighted},
                           {"theta", optional(t.thetaBefore)},
                           {"types", types}});
    }
    return {{"format", "organ-quantize-report"},
            {"version", 1},
            {"model", jsonText(report.model)},
            {"importance", report.importance},
            {"types", typeNamesJson(report.types)},
            {"tensors", tensors},
            {"notes", report.notes}};
}

std::string quantErrorsText(const QuantErrorReport& report) {
    std::size_t nameWidth = 8;
    for (const TensorErrors& t : report.tensors) {
        nameWidth = std::max(nameWidth, t.name.size() + 2);
    }
    auto table = [&](const std::string& title, bool theta) {
        std::string out =
            title + "\n  " + padText("tensor", nameWidth) + (theta ? padText("before", 8, true) : "");
        for (TensorType type : report.types) {
            out += padText(std::string(tensorTypeName(type)), 8, true);
        }
        out += "\n";
        for (const TensorErrors& t : report.tensors) {
            out += "  " + padText(escapeText(t.name), nameWidth) +
                   (theta ? padText(t.thetaBefore ? fixedDecimals(*t.thetaBefore, 2) : "—", 8, true) : "");
            for (TensorType type : report.types) {
                const auto e = std::find_if(t.types.begin(), t.types.end(),
                                            [&](const TypeError& x) { return x.type == type; });
                std::string cell = "—";
                if (e != t.types.end() && theta) {
                    cell = e->theta ? fixedDecimals(*e->theta, 2) : "—";
                } else if (e != t.types.end()) {
                    cell = fixedDecimals(100 * e->weightedRelativeRms.value_or(e->relativeRms), 2);
                }
                out += padText(cell, 8, true);
            }
            out += "\n";
        }
        return out;
    };
    std::string out = escapeText(report.model) + ": " + std::to_string(report.tensors.size()) +
                      " tensors llama-quantize would quantize" +
                      (report.importance ? ", with an importance matrix" : "") + "\n\n";
    out += table(report.importance ? "relative RMS error, columns weighed by the importance matrix (%)"
                                   : "relative RMS error ‖q − x‖ / ‖x‖ (%)",
                 false);
    out += "\n" + table("θ after quantization (degrees; Z-measure v1)", true);
    return out;
}

} // namespace organ
