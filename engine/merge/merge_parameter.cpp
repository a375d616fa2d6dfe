#include "merge/merge_parameter.h"

#include "gguf/tensor_name.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace organ {

ParamValue ParamValue::number(double value) {
    return ParamValue{{ParamRule{"", {value}}}};
}

TensorPlace TensorPlace::of(std::string name, std::uint32_t blocks) {
    TensorPlace place;
    place.anatomy = classifyTensor(name);
    place.name = std::move(name);
    place.blocks = blocks;
    return place;
}

double gradientAt(std::span<const double> points, double p) {
    if (points.empty()) {
        return 0;
    }
    const std::size_t k = points.size() - 1;
    if (k == 0 || p <= 0) {
        return points.front();
    }
    if (p >= 1) {
        return points.back();
    }
    const double x = p * static_cast<double>(k);
    const std::size_t j = std::min(static_cast<std::size_t>(x), k - 1);
    const double fraction = x - static_cast<double>(j);
    return points[j] + (points[j + 1] - points[j]) * fraction;
}

double gradientPosition(const TensorPlace& place) {
    if (place.anatomy.layer) {
        return place.blocks > 1 ? static_cast<double>(*place.anatomy.layer) / (place.blocks - 1) : 0.0;
    }
    return place.name.starts_with("output") ? 1.0 : 0.0;
}

std::string ggufFilter(std::string_view filter) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kNames{{
        {"post_attention_layernorm", "ffn_norm"},
        {"input_layernorm", "attn_norm"},
        {"self_attn", "attn_"},
        {"mlp", "ffn_"},
        {"embed_tokens", "token_embd"},
        {"lm_head", "output"},
    }};
    std::string out(filter);
    for (const auto& [from, to] : kNames) {
        for (std::size_t at = out.find(from); at != std::string::npos; at = out.find(from, at + to.size())) {
            out.replace(at, from.size(), to);
        }
    }
    return out;
}

bool filterMatches(std::string_view filter, const TensorPlace& place) {
    if (filter.empty()) {
        return true;
    }
    if (const auto system = systemFromName(filter)) {
        return place.anatomy.system == *system;
    }
    return place.name.find(ggufFilter(filter)) != std::string::npos;
}

std::optional<double> resolveParam(const ParamValue& value, const TensorPlace& place) {
    for (const ParamRule& rule : value.rules) {
        if (filterMatches(rule.filter, place)) {
            return gradientAt(rule.points, gradientPosition(place));
        }
    }
    return std::nullopt;
}

nlohmann::json paramValueToJson(const ParamValue& value) {
    auto points = [](const ParamRule& rule) {
        return rule.points.size() == 1 ? nlohmann::json(rule.points.front()) : nlohmann::json(rule.points);
    };
    if (value.rules.size() == 1 && value.rules.front().filter.empty()) {
        return points(value.rules.front());
    }
    nlohmann::json list = nlohmann::json::array();
    for (const ParamRule& rule : value.rules) {
        nlohmann::json entry = {{"value", points(rule)}};
        if (!rule.filter.empty()) {
            entry["filter"] = rule.filter;
        }
        list.push_back(std::move(entry));
    }
    return list;
}

namespace {

// A number or a gradient (a non-empty array of numbers).
std::optional<std::string> pointsFromJson(const nlohmann::json& json, std::vector<double>& out) {
    if (json.is_number()) {
        out = {json.get<double>()};
        return std::nullopt;
    }
    if (!json.is_array() || json.empty() ||
        !std::all_of(json.begin(), json.end(), [](const nlohmann::json& v) { return v.is_number(); })) {
        return "must be a number or a list of numbers (a gradient)";
    }
    if (json.size() > kMaxGradientPoints) {
        return "a gradient of " + std::to_string(json.size()) + " points, more than the " +
               std::to_string(kMaxGradientPoints) + " allowed";
    }
    out = json.get<std::vector<double>>();
    return std::nullopt;
}

} // namespace

std::optional<std::string> paramValueFromJson(const nlohmann::json& json, ParamValue& out) {
    out = {};
    const bool filtered = json.is_array() && !json.empty() && json.front().is_object();
    if (!filtered) {
        ParamRule rule;
        if (auto problem = pointsFromJson(json, rule.points)) {
            return problem;
        }
        out.rules.push_back(std::move(rule));
        return paramValueProblem(out);
    }
    if (json.size() > kMaxParamRules) {
        return std::to_string(json.size()) + " filtered values, more than the " +
               std::to_string(kMaxParamRules) + " allowed";
    }
    for (const nlohmann::json& entry : json) {
        if (!entry.is_object()) {
            return "a list of filtered values holds only {\"filter\", \"value\"} objects";
        }
        ParamRule rule;
        for (const auto& [key, item] : entry.items()) {
            if (key == "filter") {
                if (!item.is_string()) {
                    return "\"filter\" must be a string";
                }
                rule.filter = item.get<std::string>();
            } else if (key == "value") {
                if (auto problem = pointsFromJson(item, rule.points)) {
                    return "\"value\" " + *problem;
                }
            } else {
                return "unknown field \"" + key + "\" in a filtered value (fields: filter, value)";
            }
        }
        if (rule.points.empty()) {
            return "a filtered value lacks \"value\"";
        }
        out.rules.push_back(std::move(rule));
    }
    return paramValueProblem(out);
}

std::optional<std::string> paramValueProblem(const ParamValue& value) {
    if (value.rules.empty()) {
        return std::string("has no value");
    }
    if (value.rules.size() > kMaxParamRules) {
        return std::to_string(value.rules.size()) + " filtered values, more than the " +
               std::to_string(kMaxParamRules) + " allowed";
    }
    for (const ParamRule& rule : value.rules) {
        if (rule.filter.size() > kMaxFilterBytes) {
            return "a filter of " + std::to_string(rule.filter.size()) + " bytes, more than the " +
                   std::to_string(kMaxFilterBytes) + " allowed";
        }
        if (rule.points.empty() || rule.points.size() > kMaxGradientPoints) {
            return "a gradient has 1 to " + std::to_string(kMaxGradientPoints) + " points";
        }
        if (!std::all_of(rule.points.begin(), rule.points.end(), [](double v) { return std::isfinite(v); })) {
            return std::string("values must be finite numbers");
        }
    }
    return std::nullopt;
}

} // namespace organ
