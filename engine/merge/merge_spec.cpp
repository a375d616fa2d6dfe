#include "merge/merge_spec.h"

#include "support/errors.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace organ {
namespace {

// A merge combines at most this many models: each is read for every tensor.
constexpr std::size_t kMaxMergeModels = 64;

bool perModel(std::string_view name) {
    return name == "weight" || name == "density" || name == "gamma";
}

bool isSwitch(std::string_view name) {
    return name == "normalize" || name == "rescale";
}

std::optional<std::string> valueProblem(const std::string& name, const ParamValue& value) {
    if (auto problem = paramValueProblem(value)) {
        return "'" + name + "' " + *problem;
    }
    if (name == "density" || name == "gamma") {
        for (const ParamRule& rule : value.rules) {
            for (const double v : rule.points) {
                if (v < 0 || v > 1) {
                    char text[32];
                    const auto end = std::to_chars(text, text + sizeof text, v).ptr;
                    return "'" + name + "' is a share from 0 to 1, not " + std::string(text, end);
                }
            }
        }
    }
    return std::nullopt;
}

std::optional<std::string> parametersProblem(const MergeSpec& spec,
                                             const std::map<std::string, ParamValue>& values,
                                             const std::string& where) {
    for (const auto& [name, value] : values) {
        if (auto problem = mergeParameterProblem(spec.method, name, value)) {
            return where + *problem;
        }
    }
    return std::nullopt;
}

std::optional<double> lookUp(const std::map<std::string, ParamValue>& values, const std::string& name,
                             const TensorPlace& place) {
    const auto it = values.find(name);
    return it != values.end() ? resolveParam(it->second, place) : std::nullopt;
}

} // namespace

std::optional<std::string> mergeParameterProblem(MergeMethod method, const std::string& name,
                                                 const ParamValue& value) {
    if (method == MergeMethod::Passthrough) {
        return std::string("passthrough takes no parameters");
    }
    if (!takesParameter(method, name) || isSwitch(name)) {
        return "'" + name + "' is not a parameter of " + std::string(mergeMethodName(method)) +
               " (it takes " + parameterNamesOf(method) + ")";
    }
    return valueProblem(name, value);
}

std::vector<std::size_t> MergeSpec::mergedModels() const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < models.size(); ++i) {
        if (method == MergeMethod::Linear || models[i].model != base) {
            out.push_back(i);
        }
    }
    return out;
}

std::vector<std::string> MergeSpec::modelIds() const {
    std::vector<std::string> out;
    if (!base.empty()) {
        out.push_back(base);
    }
    for (const MergeModel& m : models) {
        out.push_back(m.model);
    }
    return out;
}

void MergeSpec::renameModels(const std::function<std::string(const std::string&)>& rename) {
    if (!base.empty()) {
        base = rename(base);
    }
    for (MergeModel& m : models) {
        m.model = rename(m.model);
    }
}

std::vector<std::string> mergeSpecNoOps(const MergeSpec& spec) {
    // Whether the parameter, as the model has it or the merge does, is 0 for every tensor.
    auto zeroEverywhere = [&](const MergeModel* model, const char* name) {
        const ParamValue* value = nullptr;
        if (model != nullptr) {
            if (const auto it = model->parameters.find(name); it != model->parameters.end()) {
                value = &it->second;
            }
        }
        if (value == nullptr) {
            if (const auto it = spec.parameters.find(name); it != spec.parameters.end()) {
                value = &it->second;
            }
        }
        return value != nullptr && !value->rules.empty() &&
               std::ranges::all_of(value->rules, [](const ParamRule& r) {
                   return std::ranges::all_of(r.points, [](double p) { return p == 0; });
               });
    };
    std::vector<std::string> out;
    for (const std::size_t i : spec.mergedModels()) {
        const MergeModel& m = spec.models[i];
        if (takesParameter(spec.method, "weight") && zeroEverywhere(&m, "weight")) {
            out.push_back(m.model + " contributes nothing: its weight is 0 everywhere");
        } else if (sparsifyOf(spec.method) != Sparsify::None && zeroEverywhere(&m, "density")) {
            out.push_back(m.model + " contributes nothing: its density is 0 everywhere, so none of its "
                                    "differences is kept");
        }
    }
    if (takesParameter(spec.method, "t") && zeroEverywhere(nullptr, "t")) {
        out.push_back("t is 0 everywhere: slerp gives the base as it stands");
    }
    return out;
}

std::optional<std::string> mergeSpecProblem(const MergeSpec& spec) {
    const std::string method(mergeMethodName(spec.method));
    if (spec.method == MergeMethod::Passthrough) {
        return std::string("passthrough is made of a plan's layer operations (stack_layers, remove_layer, "
                           "duplicate_layer, map_layer), not of a merge operation");
    }
    if (needsBase(spec.method) && spec.base.empty()) {
        return method + " needs a base model";
    }
    if (spec.models.size() > kMaxMergeModels) {
        return std::to_string(spec.models.size()) + " models, more than the " +
               std::to_string(kMaxMergeModels) + " a merge may combine";
    }
    const std::size_t merged = spec.mergedModels().size();
    if (spec.method == MergeMethod::Slerp && merged != 1) {
        return "slerp merges two models, the base and one other (" + std::to_string(merged) +
               " beside the base)";
    }
    if (spec.method == MergeMethod::ModelStock && merged < 2) {
        return "model_stock needs at least two models beside the base (" + std::to_string(merged) + " given)";
    }
    if (merged == 0) {
        return method + " needs at least one model" + (needsBase(spec.method) ? " beside the base" : "");
    }
    if (spec.normalize && !takesParameter(spec.method, "normalize")) {
        return "'normalize' is not a parameter of " + method + " (it takes " + parameterNamesOf(spec.method) +
               ")";
    }
    if (spec.rescale && !takesParameter(spec.method, "rescale")) {
        return "'rescale' is not a parameter of " + method + " (it takes " + parameterNamesOf(spec.method) +
               ")";
    }
    if (auto problem = parametersProblem(spec, spec.parameters, "")) {
        return problem;
    }
    for (const MergeModel& m : spec.models) {
        for (const auto& [name, value] : m.parameters) {
            if (!perModel(name) && takesParameter(spec.method, name)) {
                return "model '" + m.model + "': '" + name + "' is set for the whole merge, not per model";
            }
        }
        if (auto problem = parametersProblem(spec, m.parameters, "model '" + m.model + "': ")) {
            return problem;
        }
    }
    if (spec.method == MergeMethod::Slerp && spec.parameters.count("t") == 0) {
        return std::string("slerp needs the parameter 't'");
    }
    return std::nullopt;
}

void mergeSpecToJson(const MergeSpec& spec, nlohmann::json& out) {
    out["method"] = mergeMethodName(spec.method);
    if (!spec.base.empty()) {
        out["base"] = spec.base;
    }
    out["models"] = nlohmann::json::array();
    for (const MergeModel& m : spec.models) {
        nlohmann::json entry = {{"model", m.model}};
        if (!m.parameters.empty()) {
            entry["parameters"] = nlohmann::json::object();
            for (const auto& [name, value] : m.parameters) {
                entry["parameters"][name] = paramValueToJson(value);
            }
        }
        out["models"].push_back(std::move(entry));
    }
    const nlohmann::json parameters = mergeParametersJson(spec);
    if (!parameters.empty()) {
        out["parameters"] = parameters;
    }
    if (usesSeed(spec.method)) {
        out["seed"] = spec.seed;
    }
}

nlohmann::json mergeParametersJson(const MergeSpec& spec) {
    nlohmann::json parameters = nlohmann::json::object();
    for (const auto& [name, value] : spec.parameters) {
        parameters[name] = paramValueToJson(value);
    }
    if (spec.normalize) {
        parameters["normalize"] = *spec.normalize;
    }
    if (spec.rescale) {
        parameters["rescale"] = *spec.rescale;
    }
    return parameters;
}

namespace {

void readParameters(const nlohmann::json& json, std::map<std::string, ParamValue>& out, MergeSpec* switches,
                    const std::string& where) {
    if (!json.is_object()) {
        throw FormatError(where + "\"parameters\" must be an object");
    }
    for (const auto& [name, value] : json.items()) {
        if (switches == nullptr && isSwitch(name)) {
            throw FormatError(where + "'" + name + "' is set for the whole merge, not per model");
        }
        if (switches != nullptr && isSwitch(name)) {
            if (!value.is_boolean()) {
                throw FormatError(where + "'" + name + "' must be true or false");
            }
            (name == "normalize" ? switches->normalize : switches->rescale) = value.get<bool>();
            continue;
        }
        ParamValue parsed;
        if (auto problem = paramValueFromJson(value, parsed)) {
            throw FormatError(where + "'" + name + "' " + *problem);
        }
        out[name] = std::move(parsed);
    }
}

} // namespace

MergeSpec mergeSpecFromJson(const nlohmann::json& object, const std::string& where) {
    const std::string prefix = where + ": ";
    MergeSpec spec;
    const auto method = object.find("method");
    if (method == object.end() || !method->is_string()) {
        throw FormatError(prefix + "a merge needs \"method\" (" + mergeMethodNames() + ")");
    }
    const auto parsed = mergeMethodFromName(method->get<std::string>());
    if (!parsed) {
        throw FormatError(prefix + "unknown merge method \"" + method->get<std::string>() +
                          "\" (methods: " + mergeMethodNames() + ")");
    }
    spec.method = *parsed;
    if (const auto base = object.find("base"); base != object.end()) {
        if (!base->is_string() || base->get<std::string>().empty()) {
            throw FormatError(prefix + "\"base\" must be a model id");
        }
        spec.base = base->get<std::string>();
    }
    const auto models = object.find("models");
    if (models == object.end() || !models->is_array()) {
        throw FormatError(prefix + "a merge needs \"models\": [{\"model\": ID, \"parameters\": {…}}, …]");
    }
    if (models->size() > kMaxMergeModels) {
        throw FormatError(prefix + std::to_string(models->size()) + " models, more than the " +
                          std::to_string(kMaxMergeModels) + " a merge may combine");
    }
    for (const nlohmann::json& entry : *models) {
        if (!entry.is_object()) {
            throw FormatError(prefix + "each of \"models\" is {\"model\": ID, \"parameters\": {…}}");
        }
        MergeModel m;
        for (const auto& [key, value] : entry.items()) {
            if (key == "model" && value.is_string()) {
                m.model = value.get<std::string>();
            } else if (key == "parameters") {
                readParameters(value, m.parameters, nullptr, prefix + "model '" + m.model + "': ");
            } else {
                throw FormatError(prefix + "a model has \"model\" (an id) and \"parameters\", not \"" + key +
                                  "\"");
            }
        }
        if (m.model.empty()) {
            throw FormatError(prefix + "a model lacks \"model\"");
        }
        spec.models.push_back(std::move(m));
    }
    if (const auto parameters = object.find("parameters"); parameters != object.end()) {
        readParameters(*parameters, spec.parameters, &spec, prefix);
    }
    if (const auto seed = object.find("seed"); seed != object.end()) {
        if (!seed->is_number_unsigned()) {
            throw FormatError(prefix + "\"seed\" must be a whole number of 0 or more");
        }
        spec.seed = seed->get<std::uint64_t>();
    }
    if (auto problem = mergeSpecProblem(spec)) {
        throw FormatError(prefix + *problem);
    }
    return spec;
}

std::uint64_t mergeRuleLookups(const MergeSpec& spec) {
    auto rulesOf = [](const std::map<std::string, ParamValue>& values) {
        std::uint64_t n = 0;
        for (const auto& [name, value] : values) {
            n += value.rules.size();
        }
        return n;
    };
    const std::uint64_t defaults = rulesOf(spec.parameters);
    std::uint64_t n = defaults;
    for (const std::size_t i : spec.mergedModels()) {
        n += rulesOf(spec.models[i].parameters) + defaults;
    }
    return n;
}

TensorMergeParams resolveTensorParams(const MergeSpec& spec, const TensorPlace& place,
                                      const std::string& stream) {
    TensorMergeParams out;
    out.method = spec.method;
    out.normalize = spec.normalize.value_or(normalizesByDefault(spec.method));
    out.rescale = spec.rescale.value_or(true);
    out.seed = spec.seed;
    out.stream = stream;
    auto value = [&](const MergeModel& m, const std::string& name) {
        const auto own = lookUp(m.parameters, name, place);
        return own ? own : lookUp(spec.parameters, name, place);
    };
    double weights = 0;
    for (const std::size_t i : spec.mergedModels()) {
        const MergeModel& m = spec.models[i];
        ModelTensorParams p;
        if (takesParameter(spec.method, "weight")) {
            const auto weight = value(m, "weight");
            if (!weight) {
                throw FormatError("model '" + m.model + "' has no weight for " + place.name +
                                  " (no filter matches it and no default is given)");
            }
            p.weight = *weight;
        }
        p.density = value(m, "density").value_or(1.0);
        p.gamma = value(m, "gamma").value_or(0.01);
        weights += p.weight;
        out.models.push_back(p);
    }
    if (spec.method == MergeMethod::Slerp) {
        const auto t = lookUp(spec.parameters, "t", place);
        if (!t) {
            throw FormatError("slerp has no t for " + place.name +
                              " (no filter matches it and no default is given)");
        }
        out.t = *t;
    }
    if (spec.method == MergeMethod::Linear && out.normalize && std::abs(weights) < 1e-8) {
        throw FormatError("the weights of " + place.name +
                          " sum to 0, and linear's normalize divides by the sum");
    }
    return out;
}

} // namespace organ
