#include "measure/model_diff.h"

#include "anatomy/anatomy.h"
#include "quant/dequant.h"
#include "support/parallel_items.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

namespace organ {
namespace {

// Values decoded per model at a time: 1 MiB of floats each.
constexpr std::size_t kValuesPerRead = 1u << 18;

bool sameShape(const TensorInfo& a, const TensorInfo& b) {
    return a.ne == b.ne;
}

bool sameBytes(std::span<const std::byte> a, std::span<const std::byte> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

TensorDiff diffTensor(const GgufModel& a, const TensorInfo& ta, const GgufModel& b, const TensorInfo& tb,
                      const StopToken* stop) {
    TensorDiff out;
    out.name = ta.name;
    out.typeA = ta.type;
    out.typeB = tb.type;
    const auto bytesA = a.tensorData(ta);
    const auto bytesB = b.tensorData(tb);
    out.identical = ta.type == tb.type && sameBytes(bytesA, bytesB);
    std::vector<float> x(static_cast<std::size_t>(std::min<std::uint64_t>(kValuesPerRead, ta.elements)));
    std::vector<float> y(x.size());
    for (std::uint64_t first = 0; first < ta.elements; first += kValuesPerRead) {
        if (stop != nullptr && stop->stopRequested()) {
            return out;
        }
        const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(kValuesPerRead, ta.elements - first));
        dequantizeRange(ta.type, bytesA, first, count, x.data());
        dequantizeRange(tb.type, bytesB, first, count, y.data());
        out.sums.addValues(x.data(), y.data(), count);
    }
    return out;
}

std::string groupOfLayer(const std::optional<std::uint32_t>& layer) {
    return layer ? "layer " + std::to_string(*layer) : "no layer";
}

nlohmann::json orNull(const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string diffCell(const std::optional<double>& v, int digits, const char* none) {
    return v ? fixedDecimals(*v, digits) : none;
}

nlohmann::json sumsToJson(const DiffSums& s) {
    return {{"relative_error", orNull(s.relativeError())},
            {"cosine", orNull(s.cosine())},
            {"sqnr_db", orNull(s.sqnrDb())},
            {"max_abs", s.maxAbs},
            {"changed_share", s.values > 0 ? double(s.changed) / double(s.values) : 0.0}};
}

} // namespace

void DiffSums::addValues(const float* a, const float* b, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
        const double u = a[i];
        const double v = b[i];
        const double d = v - u;
        aa += u * u;
        bb += v * v;
        ab += u * v;
        dd += d * d;
        maxAbs = std::max(maxAbs, std::abs(d));
        const bool bothNaN = std::isnan(a[i]) && std::isnan(b[i]);
        changed += a[i] != b[i] && !bothNaN ? 1 : 0;
    }
    values += count;
}

void DiffSums::add(const DiffSums& other) {
    aa += other.aa;
    bb += other.bb;
    ab += other.ab;
    dd += other.dd;
    maxAbs = std::max(maxAbs, other.maxAbs);
    changed += other.changed;
    values += other.values;
}

std::optional<double> DiffSums::relativeError() const {
    if (!std::isfinite(dd) || !std::isfinite(aa)) {
        return std::nullopt;
    }
    if (dd == 0) {
        return 0.0;
    }
    return aa > 0 ? std::optional<double>(std::sqrt(dd / aa)) : std::nullopt;
}

std::optional<double> DiffSums::cosine() const {
    if (!std::isfinite(aa) || !std::isfinite(bb) || !std::isfinite(ab)) {
        return std::nullopt;
    }
    if (aa == 0 || bb == 0) {
        return aa == bb ? 1.0 : 0.0;
    }
    return ab / std::sqrt(aa * bb);
}

std::optional<double> DiffSums::sqnrDb() const {
    if (!std::isfinite(dd) || !std::isfinite(aa) || dd == 0 || aa == 0) {
        return std::nullopt;
    }
    return 10 * std::log10(aa / dd);
}

std::optional<ModelDiff> diffModels(const GgufModel& a, const GgufModel& b, const TensorSelector& select,
                                    const ProgressFn& progress, const StopToken* stop, unsigned threads) {
    ModelDiff diff;
    diff.a = fileLabel(a.path());
    diff.b = fileLabel(b.path());
    std::vector<std::pair<const TensorInfo*, const TensorInfo*>> pairs;
    for (const TensorInfo& t : a.tensors()) {
        if (!select.matches(t.name, classifyTensor(t.name))) {
            continue;
        }
        const TensorInfo* other = b.findTensor(t.name);
        if (other == nullptr) {
            diff.onlyInA.push_back(t.name);
        } else if (!sameShape(t, *other)) {
            diff.shapes.push_back({t.name, t.shapeText(), other->shapeText()});
        } else {
            pairs.emplace_back(&t, other);
        }
    }
    for (const TensorInfo& t : b.tensors()) {
        if (select.matches(t.name, classifyTensor(t.name)) && a.findTensor(t.name) == nullptr) {
            diff.onlyInB.push_back(t.name);
        }
    }
    std::uint64_t total = 0;
    for (const auto& [ta, tb] : pairs) {
        total += ta->elements;
    }
    diff.tensors.resize(pairs.size());
    std::mutex progressMutex;
    std::uint64_t done = 0;
    ProgressThrottle throttle(progress);
    const bool finished = forEachItem(pairs.size(), threads, stop, [&](std::size_t i) {
        diff.tensors[i] = diffTensor(a, *pairs[i].first, b, *pairs[i].second, stop);
        std::lock_guard lock(progressMutex);
        done += pairs[i].first->elements;
        throttle.report(done, total, "comparing");
    });
    if (!finished || (stop != nullptr && stop->stopRequested())) {
        return std::nullopt;
    }
    std::map<System, DiffGroup> systems;
    std::map<std::optional<std::uint32_t>, DiffGroup> layers;
    for (const TensorDiff& t : diff.tensors) {
        const TensorAnatomy anatomy = classifyTensor(t.name);
        for (DiffGroup* g : {&systems[anatomy.system], &layers[anatomy.layer]}) {
            ++g->tensors;
            g->identical += t.identical ? 1 : 0;
            g->sums.add(t.sums);
        }
        systems[anatomy.system].label = systemName(anatomy.system);
        layers[anatomy.layer].label = groupOfLayer(anatomy.layer);
    }
    for (auto& [system, group] : systems) {
        diff.bySystem.push_back(std::move(group));
    }
    // Layers in order, then the tensors outside them (std::nullopt sorts first).
    for (auto& [layer, group] : layers) {
        if (layer) {
            diff.byLayer.push_back(std::move(group));
        }
    }
    if (const auto outside = layers.find(std::nullopt); outside != layers.end()) {
        diff.byLayer.push_back(std::move(outside->second));
    }
    throttle.report(total, total, "done", true);
    return diff;
}

nlohmann::json modelDiffToJson(const ModelDiff& diff) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const TensorDiff& t : diff.tensors) {
        nlohmann::json j = {{"name", t.name},
                            {"type_a", tensorTypeName(t.typeA)},
                            {"type_b", tensorTypeName(t.typeB)},
                            {"elements", t.sums.values},
                            {"identical", t.identical}};
        j.update(sumsToJson(t.sums));
        tensors.push_back(std::move(j));
    }
    auto groups = [](const std::vector<DiffGroup>& list) {
        nlohmann::json out = nlohmann::json::array();
        for (const DiffGroup& g : list) {
            nlohmann::json j = {{"group", g.label}, {"tensors", g.tensors}, {"identical", g.identical}};
            j.update(sumsToJson(g.sums));
            out.push_back(std::move(j));
        }
        return out;
    };
    nlohmann::json shapes = nlohmann::json::array();
    for (const ShapeMismatch& m : diff.shapes) {
        shapes.push_back({{"name", m.name}, {"shape_a", m.shapeA}, {"shape_b", m.shapeB}});
    }
    return {{"format", "organ-diff"},
            {"version", 1},
            {"a", diff.a},
            {"b", diff.b},
            {"tensors", std::move(tensors)},
            {"only_in_a", diff.onlyInA},
            {"only_in_b", diff.onlyInB},
            {"other_shapes", std::move(shapes)},
            {"by_system", groups(diff.bySystem)},
            {"by_layer", groups(diff.byLayer)}};
}

std::string modelDiffText(const ModelDiff& diff) {
    std::size_t identical = 0;
    std::size_t nameWidth = 10;
    for (const TensorDiff& t : diff.tensors) {
        identical += t.identical ? 1 : 0;
        nameWidth = std::max(nameWidth, t.name.size() + 2);
    }
    std::string out = escapeText(diff.a) + " → " + escapeText(diff.b) + ": " +
                      std::to_string(diff.tensors.size()) + " tensors compared, " +
                      std::to_string(identical) + " identical, " +
                      std::to_string(diff.tensors.size() - identical) + " changed\n";
    auto listed = [&](const char* what, const std::vector<std::string>& names) {
        if (!names.empty()) {
            out += "  " + std::string(what) + ":";
            for (const std::string& n : names) {
                out += " " + escapeText(n);
            }
            out += "\n";
        }
    };
    listed(("only in " + escapeText(diff.a)).c_str(), diff.onlyInA);
    listed(("only in " + escapeText(diff.b)).c_str(), diff.onlyInB);
    for (const ShapeMismatch& m : diff.shapes) {
        out += "  other shape: " + escapeText(m.name) + " " + m.shapeA + " vs " + m.shapeB + "\n";
    }
    const std::string header = padText("rel. error", 12, true) + padText("cosine", 11, true) +
                               padText("SQNR dB", 9, true) + padText("max |Δ|", 11, true) +
                               padText("changed", 9, true);
    auto row = [](const DiffSums& s) {
        return padText(s.relativeError() ? fixedDecimals(100 * *s.relativeError(), 3) + " %" : "—", 12,
                       true) +
               padText(diffCell(s.cosine(), 6, "—"), 11, true) + padText(diffCell(s.sqnrDb(), 1, "∞"), 9, true) +
               padText(fixedDecimals(s.maxAbs, 5), 11, true) +
               padText(fixedDecimals(s.values > 0 ? 100.0 * double(s.changed) / double(s.values) : 0.0, 1) +
                           " %",
                       9, true);
    };
    auto groupTable = [&](const char* title, const std::vector<DiffGroup>& groups) {
        out += "\n" + std::string(title) + "\n  " + padText("", 12) + padText("tensors", 9, true) + header +
               "\n";
        for (const DiffGroup& g : groups) {
            out +=
                "  " + padText(g.label, 12) +
                padText(std::to_string(g.tensors - g.identical) + "/" + std::to_string(g.tensors), 9, true) +
                row(g.sums) + "\n";
        }
    };
    groupTable("by system (changed/all tensors)", diff.bySystem);
    groupTable("by layer (changed/all tensors)", diff.byLayer);
    if (identical < diff.tensors.size()) {
        out += "\nchanged tensors\n  " + padText("tensor", nameWidth) + padText("types", 13) + header + "\n";
        for (const TensorDiff& t : diff.tensors) {
            if (!t.identical) {
                const std::string types = t.typeA == t.typeB ? std::string(tensorTypeName(t.typeA))
                                                             : std::string(tensorTypeName(t.typeA)) + "→" +
                                                                   std::string(tensorTypeName(t.typeB));
                out +=
                    "  " + padText(escapeText(t.name), nameWidth) + padText(types, 13) + row(t.sums) + "\n";
            }
        }
    }
    return out;
}

} // namespace organ
