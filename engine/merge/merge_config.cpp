#include "merge/merge_config.h"

#include "gguf/gguf_model.h"

#include "support/errors.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <filesystem>
#include <limits>
#include <set>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

namespace organ {
namespace {

// A passthrough's stack has at most as many runs as a plan's stack_layers, each of at most the
// layers a chimera may have (graft/graft_plan.h; the plan refuses more).
constexpr std::size_t kMaxSlices = 1024;
constexpr std::uint32_t kMaxLayerRange = 65536;
constexpr std::size_t kMaxModels = 64;
// All the numbers of the parameters, an alias counted as often as it is used: each limit above
// holds alone, and aliases would otherwise multiply them (64 models × 256 rules × 1024 points).
constexpr std::size_t kMaxNumbers = 65536;

class Reader {
public:
    explicit Reader(std::string label) : m_label(std::move(label)) {}
    // The line where each model was first named.
    const std::map<std::string, int>& lines() const { return m_lines; }

    [[noreturn]] void fail(const YAML::Node& node, const std::string& problem) const {
        const YAML::Mark mark = node.Mark();
        if (mark.is_null()) {
            throw FormatError(m_label + ": " + problem);
        }
        throw FormatError(m_label + ": line " + std::to_string(mark.line + 1) + ": " + problem);
    }

    // The keys of a mapping, each once, all of them known; `what` names the mapping.
    void checkKeys(const YAML::Node& map, const std::set<std::string>& known, const std::string& what) const {
        if (!map.IsMap()) {
            fail(map, what + " must be a mapping");
        }
        std::set<std::string> seen;
        for (const auto& entry : map) {
            if (!entry.first.IsScalar()) {
                fail(entry.first, what + ": keys must be names");
            }
            const std::string key = entry.first.Scalar();
            if (!seen.insert(key).second) {
                fail(entry.first, what + ": '" + key + "' is given twice");
            }
            if (known.count(key) == 0) {
                std::string names;
                for (const std::string& k : known) {
                    names += (names.empty() ? "" : ", ") + k;
                }
                fail(entry.first,
                     what + ": '" + key + "' is not supported (organ merge reads " + names + ")");
            }
        }
    }

    std::string string(const YAML::Node& node, const std::string& what) const {
        if (!node.IsScalar() || node.Scalar().empty()) {
            fail(node, what + " must be a name or a path");
        }
        // A path is cut at its first NUL when opened: "a.gguf\0x" would open a.gguf.
        if (node.Scalar().find('\0') != std::string::npos) {
            fail(node, what + " holds a NUL character, which no name or path has");
        }
        return node.Scalar();
    }

    double number(const YAML::Node& node, const std::string& what) const {
        double value = 0;
        if (!node.IsScalar() || !YAML::convert<double>::decode(node, value)) {
            fail(node, what + " must be a number");
        }
        return value;
    }

    bool flag(const YAML::Node& node, const std::string& what) const {
        bool value = false;
        if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
            fail(node, what + " must be true or false");
        }
        return value;
    }

    std::uint64_t whole(const YAML::Node& node, const std::string& what) const {
        std::uint64_t value = 0;
        if (!node.IsScalar() || node.Scalar().starts_with('-') ||
            !YAML::convert<std::uint64_t>::decode(node, value)) {
            fail(node, what + " must be a whole number of 0 or more");
        }
        return value;
    }

    // A number, or a gradient: a list of numbers.
    std::vector<double> points(const YAML::Node& node, const std::string& what) const {
        m_numbers += node.IsSequence() ? node.size() : 1;
        if (m_numbers > kMaxNumbers) {
            fail(node, "the parameters come to more than " + std::to_string(kMaxNumbers) +
                           " numbers (an alias counted each time it is used)");
        }
        if (node.IsScalar()) {
            return {number(node, what)};
        }
        if (!node.IsSequence() || node.size() == 0) {
            fail(node, what + " must be a number or a list of numbers (a gradient)");
        }
        if (node.size() > kMaxGradientPoints) {
            fail(node, what + ": a gradient of " + std::to_string(node.size()) + " points, more than the " +
                           std::to_string(kMaxGradientPoints) + " allowed");
        }
        std::vector<double> out;
        for (const auto& item : node) {
            out.push_back(number(item, what));
        }
        return out;
    }

    // A number, a gradient, or filtered values [{filter, value}, …].
    ParamValue value(const YAML::Node& node, const std::string& what) const {
        ParamValue out;
        if (node.IsSequence() && node.size() > 0 && node[0].IsMap()) {
            if (node.size() > kMaxParamRules) {
                fail(node, what + ": " + std::to_string(node.size()) + " filtered values, more than the " +
                               std::to_string(kMaxParamRules) + " allowed");
            }
            for (const auto& item : node) {
                checkKeys(item, {"filter", "value"}, what);
                ParamRule rule;
                if (item["filter"]) {
                    rule.filter = string(item["filter"], what + ": filter");
                }
                if (!item["value"]) {
                    fail(item, what + ": a filtered value lacks 'value'");
                }
                rule.points = points(item["value"], what);
                out.rules.push_back(std::move(rule));
            }
        } else {
            out.rules.push_back({"", points(node, what)});
        }
        if (auto problem = paramValueProblem(out)) {
            fail(node, what + " " + *problem);
        }
        return out;
    }

    // The parameters of a model (per model) or of the merge (global: also its switches), each
    // value checked against `method` where it stands.
    void parameters(const YAML::Node& node, MergeMethod method, std::map<std::string, ParamValue>& out,
                    MergeConfig* global, const std::string& what) const {
        if (!node.IsMap()) {
            fail(node, what + "parameters must be a mapping");
        }
        std::set<std::string> known{"weight", "density", "gamma"};
        if (global != nullptr) {
            known.insert({"t", "normalize", "rescale", "int8_mask"});
        }
        checkKeys(node, known, what + "parameters");
        for (const auto& entry : node) {
            const std::string name = entry.first.Scalar();
            if (name == "normalize") {
                global->spec.normalize = flag(entry.second, "normalize");
            } else if (name == "rescale") {
                global->spec.rescale = flag(entry.second, "rescale");
            } else if (name == "int8_mask") {
                flag(entry.second, "int8_mask");
                global->notes.push_back("int8_mask: mergekit's way to save memory, no effect here");
            } else {
                out[name] = value(entry.second, what + "'" + name + "'");
                if (auto problem = mergeParameterProblem(method, name, out[name])) {
                    fail(entry.first, what + *problem);
                }
            }
        }
    }

    MergeModel model(const YAML::Node& node, MergeMethod method, const std::set<std::string>& keys) const {
        checkKeys(node, keys, "a model");
        if (!node["model"]) {
            fail(node, "a model lacks 'model' (its path)");
        }
        MergeModel m;
        m.model = string(node["model"], "'model'");
        m_lines.emplace(m.model, node["model"].Mark().line + 1);
        if (node["parameters"]) {
            parameters(node["parameters"], method, m.parameters, nullptr, "model '" + m.model + "': ");
        }
        return m;
    }

    void slices(const YAML::Node& node, MergeConfig& config) const {
        if (!node.IsSequence() || node.size() == 0) {
            fail(node, "'slices' must be a list of {sources: [{model, layer_range}]}");
        }
        if (node.size() > kMaxSlices) {
            fail(node, std::to_string(node.size()) + " slices, more than the " + std::to_string(kMaxSlices) +
                           " allowed");
        }
        const bool passthrough = config.spec.method == MergeMethod::Passthrough;
        for (const auto& slice : node) {
            checkKeys(slice, {"sources"}, "a slice");
            const YAML::Node sources = slice["sources"];
            if (!sources || !sources.IsSequence() || sources.size() == 0 ||
                (passthrough && sources.size() != 1) || sources.size() > kMaxModels) {
                fail(slice, passthrough ? "a passthrough slice has one source: {model, layer_range}"
                                        : "a slice needs 'sources': [{model, layer_range, parameters}]");
            }
            for (const auto& source : sources) {
                MergeModel m = model(source, config.spec.method, {"model", "layer_range", "parameters"});
                const YAML::Node range = source["layer_range"];
                if (!range || !range.IsSequence() || range.size() != 2) {
                    fail(source, "'layer_range' must be [first, end) (two numbers)");
                }
                const std::uint64_t first = whole(range[0], "layer_range");
                const std::uint64_t end = whole(range[1], "layer_range");
                if (end > std::numeric_limits<std::uint32_t>::max()) {
                    fail(range, "'layer_range' [" + std::to_string(first) + ", " + std::to_string(end) +
                                    ") goes past the largest layer number, " +
                                    std::to_string(std::numeric_limits<std::uint32_t>::max()));
                }
                if (end <= first || end - first > kMaxLayerRange) {
                    fail(range, "'layer_range' [" + std::to_string(first) + ", " + std::to_string(end) +
                                    ") is empty or too long");
                }
                if (passthrough) {
                    if (!m.parameters.empty()) {
                        fail(source, "passthrough takes no parameters");
                    }
                    config.stack.push_back(
                        {m.model, static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(end - 1)});
                    continue;
                }
                const std::pair<std::uint32_t, std::uint32_t> whole{static_cast<std::uint32_t>(first),
                                                                    static_cast<std::uint32_t>(end)};
                if (node.size() != 1 || (config.wholeRange && *config.wholeRange != whole)) {
                    fail(source, "slices that cut or stack layers are for passthrough: " +
                                     std::string(mergeMethodName(config.spec.method)) +
                                     " takes one slice whose sources share one layer_range (every block)");
                }
                config.wholeRange = whole;
                config.spec.models.push_back(std::move(m));
            }
        }
    }

    // The output keeps the base's tokenizer (its GGUF metadata): `base`, or the base model named
    // again, says so and is noted; another source (`union`, a model's) is refused.
    void tokenizerSource(const YAML::Node& node, MergeConfig& config, const std::string& key) const {
        const std::string source = string(node, "'" + key + "'");
        if (source != "base" && (config.spec.base.empty() || source != config.spec.base)) {
            fail(node, key + " '" + source +
                           "' is not supported: the output keeps the base's tokenizer (only 'base' is read)");
        }
        config.notes.push_back(key + " " + source +
                               ": the output keeps the base's tokenizer, as it always does");
    }

    MergeConfig config(const YAML::Node& root) const {
        if (!root.IsMap()) {
            fail(root, "not a mergekit configuration (a mapping of merge_method, models, …)");
        }
        checkKeys(root,
                  {"merge_method", "base_model", "models", "slices", "parameters", "dtype", "out_type",
                   "seed", "tokenizer_source", "tokenizer"},
                  "the configuration");
        MergeConfig config;
        if (!root["merge_method"]) {
            fail(root, "'merge_method' is missing (" + mergeMethodNames() + ")");
        }
        const std::string method = string(root["merge_method"], "'merge_method'");
        const auto parsed = mergeMethodFromName(method);
        if (!parsed) {
            fail(root["merge_method"],
                 "merge_method '" + method + "' is not supported (" + mergeMethodNames() + ")");
        }
        config.spec.method = *parsed;
        if (root["base_model"]) {
            config.spec.base = string(root["base_model"], "'base_model'");
            m_lines.emplace(config.spec.base, root["base_model"].Mark().line + 1);
        }
        if (root["models"] && root["slices"]) {
            fail(root, "give 'models' or 'slices', not both");
        }
        if (root["models"]) {
            const YAML::Node models = root["models"];
            if (!models.IsSequence() || models.size() == 0 || models.size() > kMaxModels) {
                fail(models, "'models' must be a list of 1 to " + std::to_string(kMaxModels) +
                                 " {model, parameters}");
            }
            for (const auto& m : models) {
                config.spec.models.push_back(model(m, config.spec.method, {"model", "parameters"}));
            }
        } else if (root["slices"]) {
            slices(root["slices"], config);
        } else {
            fail(root, "'models' (or 'slices') is missing");
        }
        if (root["parameters"]) {
            parameters(root["parameters"], config.spec.method, config.spec.parameters, &config, "");
        }
        if (root["dtype"]) {
            config.notes.push_back("dtype " + string(root["dtype"], "'dtype'") +
                                   " ignored: the output takes the base's types (out_type sets a file type)");
        }
        if (root["tokenizer_source"] && root["tokenizer"]) {
            fail(root["tokenizer"], "give 'tokenizer_source' or 'tokenizer', not both");
        }
        if (root["tokenizer_source"]) {
            tokenizerSource(root["tokenizer_source"], config, "tokenizer_source");
        }
        if (root["tokenizer"]) {
            checkKeys(root["tokenizer"], {"source"}, "'tokenizer'");
            if (!root["tokenizer"]["source"]) {
                fail(root["tokenizer"], "'tokenizer' without 'source'");
            }
            tokenizerSource(root["tokenizer"]["source"], config, "tokenizer.source");
        }
        if (root["out_type"]) {
            const std::string type = string(root["out_type"], "'out_type'");
            config.outType = quantFileTypeFromName(type);
            if (!config.outType) {
                fail(root["out_type"],
                     "out_type '" + type + "' is not a file type of organ quantize (Q8_0, Q4_K_M, F16…)");
            }
        }
        if (root["seed"]) {
            config.spec.seed = whole(root["seed"], "'seed'");
        }
        if (config.spec.method == MergeMethod::Passthrough) {
            if (!config.spec.parameters.empty() || config.spec.normalize || config.spec.rescale) {
                fail(root["parameters"], "passthrough takes no parameters");
            }
            if (config.stack.empty()) {
                if (config.spec.models.size() != 1) {
                    fail(root, "passthrough takes 'slices' (or one model, copied)");
                }
                const MergeModel& copied = config.spec.models.front();
                if (!copied.parameters.empty()) {
                    fail(root["models"][0], "passthrough takes no parameters");
                }
                if (!config.spec.base.empty() && config.spec.base != copied.model) {
                    fail(root["base_model"], "passthrough copies its one model: base_model '" +
                                                 config.spec.base + "' is not '" + copied.model + "'");
                }
            }
        } else if (auto problem = mergeSpecProblem(config.spec)) {
            fail(root, *problem);
        }
        return config;
    }

private:
    std::string m_label;
    mutable std::map<std::string, int> m_lines; // model() is const: it records where it read
    mutable std::size_t m_numbers = 0;
};

} // namespace

MergeConfig mergeConfigFromYaml(std::string_view text, const std::string& label) {
    std::vector<YAML::Node> documents;
    try {
        documents = YAML::LoadAll(std::string(text));
    } catch (const YAML::Exception& error) {
        const std::string where = error.mark.is_null()
                                      ? std::string()
                                      : "line " + std::to_string(error.mark.line + 1) + ", column " +
                                            std::to_string(error.mark.column + 1) + ": ";
        // yaml-cpp says "bad file" when it stops at its depth limit.
        const auto* deep = dynamic_cast<const YAML::DeepRecursion*>(&error);
        throw FormatError(label + ": not valid YAML: " + where +
                          (deep != nullptr ? "nested deeper than the " + std::to_string(deep->depth()) +
                                                 " levels the YAML reader goes"
                                           : error.msg));
    }
    if (documents.size() != 1) {
        throw FormatError(label + ": " + std::to_string(documents.size()) +
                          " YAML documents; a merge configuration is one");
    }
    try {
        Reader reader(label);
        MergeConfig config = reader.config(documents.front());
        config.lines = reader.lines();
        return config;
    } catch (const YAML::Exception& error) {
        throw FormatError(label + ": " + error.msg);
    }
}

namespace {

// "org/name" as mergekit names a model on the Hugging Face hub: relative, one slash, no .gguf.
bool isHubId(const std::string& given) {
    return std::ranges::count(given, '/') == 1 && !given.starts_with('.') && !given.starts_with('/') &&
           !hasGgufExtension(given);
}

} // namespace

std::optional<std::string> missingModel(const std::string& given, const std::string& resolved) {
    if (std::error_code error; std::filesystem::exists(resolved, error)) {
        return std::nullopt;
    }
    return "model '" + escapeText(given) + "': no such file or folder" +
           (isHubId(given) ? " (models are GGUF files or organ directories, not Hugging Face ids)" : "");
}

MergeConfig readMergeConfig(const RootedPath& path) {
    MergeConfig config = mergeConfigFromYaml(readSmallFile(path, kMaxMergeConfigBytes), fileLabel(path.path));
    const std::filesystem::path folder = std::filesystem::path(path.path).parent_path();
    // Resolved, and there: a model that is not is refused at its line (opening it later named the
    // file alone).
    auto resolve = [&](std::string& p) {
        if (p.empty()) {
            return;
        }
        const std::string given = p;
        if (std::filesystem::path(p).is_relative()) {
            p = (folder / p).lexically_normal().string();
        }
        if (const auto missing = missingModel(given, p)) {
            const auto line = config.lines.find(given);
            throw FormatError(
                fileLabel(path.path) +
                (line != config.lines.end() ? ": line " + std::to_string(line->second) : std::string()) +
                ": " + *missing);
        }
    };
    resolve(config.spec.base);
    for (MergeModel& m : config.spec.models) {
        resolve(m.model);
    }
    for (MergeConfig::LayerRun& run : config.stack) {
        resolve(run.model);
    }
    return config;
}

} // namespace organ
