#include "graft/graft_plan.h"

#include "support/bounded_json.h"
#include "support/errors.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

namespace organ {
namespace {

struct KindName {
    GraftOperation::Kind kind;
    std::string_view name;
};
constexpr KindName kKinds[] = {
    {GraftOperation::Kind::Replace, "replace"},
    {GraftOperation::Kind::MapLayer, "map_layer"},
    {GraftOperation::Kind::StackLayers, "stack_layers"},
    {GraftOperation::Kind::DuplicateLayer, "duplicate_layer"},
    {GraftOperation::Kind::RemoveLayer, "remove_layer"},
    {GraftOperation::Kind::SetMetadata, "set_metadata"},
    {GraftOperation::Kind::RemoveMetadata, "remove_metadata"},
    {GraftOperation::Kind::Purify, "purify"},
    {GraftOperation::Kind::Quantize, "quantize"},
    {GraftOperation::Kind::Merge, "merge"},
};

// Reads the fields of one JSON object, refusing unknown ones so that a typo is an error.
class Fields {
public:
    Fields(const nlohmann::json& object, std::string where, std::string label)
        : m_object(object), m_where(std::move(where)), m_label(std::move(label)) {
        if (!object.is_object()) {
            fail("must be an object");
        }
    }
    [[noreturn]] void fail(const std::string& problem) const {
        throw FormatError(m_label + ": " + m_where + ": " + problem);
    }
    const nlohmann::json* optional(const char* key) {
        m_used.insert(key);
        const auto it = m_object.find(key);
        return it == m_object.end() ? nullptr : &*it;
    }
    const nlohmann::json& required(const char* key) {
        const nlohmann::json* value = optional(key);
        if (value == nullptr) {
            fail(std::string("lacks \"") + key + "\"");
        }
        return *value;
    }
    std::string string(const char* key) {
        const nlohmann::json& v = required(key);
        if (!v.is_string()) {
            fail(std::string("\"") + key + "\" must be a string");
        }
        return v.get<std::string>();
    }
    std::uint32_t layer(const char* key) {
        const nlohmann::json& v = required(key);
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max()) {
            fail(std::string("\"") + key + "\" must be a layer number (0 or more)");
        }
        return v.get<std::uint32_t>();
    }
    std::optional<double> number(const char* key) {
        const nlohmann::json* v = optional(key);
        if (v != nullptr && !v->is_number()) {
            fail(std::string("\"") + key + "\" must be a number");
        }
        return v != nullptr ? std::optional<double>(v->get<double>()) : std::nullopt;
    }
    bool flag(const char* key) {
        const nlohmann::json* v = optional(key);
        if (v != nullptr && !v->is_boolean()) {
            fail(std::string("\"") + key + "\" must be true or false");
        }
        return v != nullptr && v->get<bool>();
    }
    std::optional<std::string> optionalString(const char* key) {
        return optional(key) != nullptr ? std::optional(string(key)) : std::nullopt;
    }
    std::vector<std::string> strings(const char* key) {
        const nlohmann::json* v = optional(key);
        if (v == nullptr) {
            return {};
        }
        if (!v->is_array() || !std::all_of(v->begin(), v->end(), [](const auto& s) {
                return s.is_string() && !s.template get<std::string>().empty();
            })) {
            fail(std::string("\"") + key + "\" must be an array of strings, none empty");
        }
        return v->get<std::vector<std::string>>();
    }
    void finish() const {
        for (const auto& [key, value] : m_object.items()) {
            if (m_used.count(key) == 0) {
                fail("unknown field \"" + key + "\"");
            }
        }
    }
    const std::string& where() const { return m_where; }

private:
    const nlohmann::json& m_object;
    std::string m_where;
    std::string m_label;
    std::set<std::string> m_used;
};

// One scalar of a GGUF type from JSON. Throws FormatError with the problem.
MetaValue scalarFromJson(const std::string& type, const nlohmann::json& v) {
    auto integer = [&](auto lo, auto hi) {
        if (!v.is_number_integer() || v.get<long double>() < lo || v.get<long double>() > hi) {
            throw FormatError("\"value\" does not fit a " + type);
        }
    };
    if (type == "string" && v.is_string()) {
        return MetaValue::fromString(v.get<std::string>());
    }
    if (type == "bool" && v.is_boolean()) {
        return MetaValue::fromBool(v.get<bool>());
    }
    if ((type == "f32" || type == "f64") && v.is_number()) {
        return type == "f32" ? MetaValue::fromF32(v.get<float>()) : MetaValue::fromF64(v.get<double>());
    }
    if (type == "u8") {
        integer(0, 255);
        return MetaValue::fromU8(v.get<std::uint8_t>());
    }
    if (type == "i8") {
        integer(-128, 127);
        return MetaValue::fromI8(v.get<std::int8_t>());
    }
    if (type == "u16") {
        integer(0, 65535);
        return MetaValue::fromU16(v.get<std::uint16_t>());
    }
    if (type == "i16") {
        integer(-32768, 32767);
        return MetaValue::fromI16(v.get<std::int16_t>());
    }
    if (type == "u32") {
        integer(0.0L, 4294967295.0L);
        return MetaValue::fromU32(v.get<std::uint32_t>());
    }
    if (type == "i32") {
        integer(-2147483648.0L, 2147483647.0L);
        return MetaValue::fromI32(v.get<std::int32_t>());
    }
    if (type == "u64") {
        integer(0.0L, 18446744073709551615.0L);
        return MetaValue::fromU64(v.get<std::uint64_t>());
    }
    if (type == "i64") {
        integer(-9223372036854775808.0L, 9223372036854775807.0L);
        return MetaValue::fromI64(v.get<std::int64_t>());
    }
    throw FormatError(
        "\"value\" is not a " + type +
        " (types: string, bool, u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, and T[] for an array of T)");
}

} // namespace

MetaValue metadataValueFromJson(const std::string& type, const nlohmann::json& v) {
    if (!type.ends_with("[]")) {
        return scalarFromJson(type, v);
    }
    const std::string element = type.substr(0, type.size() - 2);
    if (!v.is_array()) {
        throw FormatError("\"value\" of a " + type + " must be a JSON array");
    }
    std::vector<MetaValue> elements;
    elements.reserve(v.size());
    for (const nlohmann::json& item : v) {
        elements.push_back(scalarFromJson(element, item));
    }
    if (elements.empty()) {
        // The element type of an empty array is the name's.
        const MetaValue probe = scalarFromJson(element, element == "string" ? nlohmann::json("")
                                                        : element == "bool" ? nlohmann::json(false)
                                                                            : nlohmann::json(0));
        return MetaValue::fromArray(probe.type(), {});
    }
    return MetaValue::fromArray(elements.front().type(), elements);
}

namespace {

// A scalar as its JSON value, an array as the JSON array of its elements.
nlohmann::json valueToJson(const MetaValue& v) {
    if (!v.isArray()) {
        return v.toJson(0);
    }
    nlohmann::json items = nlohmann::json::array();
    v.forEachElement([&](const MetaValue& e) {
        items.push_back(e.toJson(0));
        return true;
    });
    return items;
}

TensorSelector selectorFromJson(Fields& f) {
    TensorSelector s;
    s.names = f.strings("names");
    s.roles = f.strings("roles");
    if (const auto* system = f.optional("system")) {
        if (!system->is_string() || !systemFromName(system->get<std::string>())) {
            f.fail("\"system\" must be one of embed, skeleton, organ, norm, adapter, other");
        }
        s.system = systemFromName(system->get<std::string>());
    }
    if (const auto* layers = f.optional("layers")) {
        std::uint32_t first = 0;
        std::uint32_t last = 0;
        if (!layers->is_string() || !parseLayerRange(layers->get<std::string>(), first, last)) {
            f.fail("\"layers\" must be a range such as \"5-20\" or \"3\"");
        }
        s.firstLayer = first;
        s.lastLayer = last;
    }
    return s;
}

void selectorToJson(const TensorSelector& s, nlohmann::json& out) {
    if (!s.names.empty()) {
        out["names"] = s.names;
    }
    if (!s.roles.empty()) {
        out["roles"] = s.roles;
    }
    if (s.system) {
        out["system"] = systemName(*s.system);
    }
    if (s.firstLayer) {
        out["layers"] = *s.firstLayer == *s.lastLayer
                            ? std::to_string(*s.firstLayer)
                            : std::to_string(*s.firstLayer) + "-" + std::to_string(*s.lastLayer);
    }
}

// A quantize operation: organ quantize's options under the names of the schema.
QuantizeRecipe quantizeRecipeFromJson(Fields& f) {
    QuantizeRecipe recipe;
    const std::string type = f.string("type");
    const auto fileType = quantFileTypeFromName(type);
    if (!fileType) {
        f.fail("\"type\" '" + type + "' is not a file type organ quantize writes");
    }
    recipe.fileType = *fileType;
    for (const std::string& option : f.strings("tensor_types")) {
        std::pair<std::string, TensorType> entry;
        if (!parseTensorTypeOption(option, entry)) {
            f.fail("\"tensor_types\" entries are \"REGEX=TYPE\", not '" + option + "'");
        }
        recipe.tensorTypes.push_back(std::move(entry));
    }
    const auto typeField = [&](const char* key) -> std::optional<TensorType> {
        const auto name = f.optionalString(key);
        if (!name) {
            return std::nullopt;
        }
        const auto t = tensorTypeFromAnyCase(*name);
        if (!t) {
            f.fail(std::string("\"") + key + "\" '" + *name + "' is not a tensor type");
        }
        return t;
    };
    recipe.outputTensorType = typeField("output_tensor_type");
    recipe.tokenEmbeddingType = typeField("token_embedding_type");
    recipe.pure = f.flag("pure");
    recipe.leaveOutputTensor = f.flag("leave_output_tensor");
    recipe.imatrix = f.optionalString("imatrix").value_or("");
    if (const auto problem = quantizeRecipeProblem(recipe)) {
        f.fail(*problem);
    }
    return recipe;
}

void quantizeRecipeToJson(const QuantizeRecipe& recipe, nlohmann::json& out) {
    out["type"] = quantFileTypeName(recipe.fileType);
    if (!recipe.tensorTypes.empty()) {
        out["tensor_types"] = nlohmann::json::array();
        for (const auto& [pattern, type] : recipe.tensorTypes) {
            out["tensor_types"].push_back(pattern + "=" + std::string(tensorTypeName(type)));
        }
    }
    if (recipe.outputTensorType) {
        out["output_tensor_type"] = tensorTypeName(*recipe.outputTensorType);
    }
    if (recipe.tokenEmbeddingType) {
        out["token_embedding_type"] = tensorTypeName(*recipe.tokenEmbeddingType);
    }
    if (recipe.pure) {
        out["pure"] = true;
    }
    if (recipe.leaveOutputTensor) {
        out["leave_output_tensor"] = true;
    }
    if (!recipe.imatrix.empty()) {
        out["imatrix"] = recipe.imatrix;
    }
}

GraftOperation operationFromJson(const nlohmann::json& j, std::size_t index, const std::string& label) {
    Fields f(j, "operation " + std::to_string(index + 1), label);
    const std::string op = f.string("op");
    const auto kind =
        std::find_if(std::begin(kKinds), std::end(kKinds), [&](const KindName& k) { return k.name == op; });
    if (kind == std::end(kKinds)) {
        f.fail("unknown op \"" + op +
               "\" (ops: replace, map_layer, stack_layers, duplicate_layer, remove_layer, set_metadata, "
               "remove_metadata, purify, quantize, merge)");
    }
    GraftOperation o;
    o.kind = kind->kind;
    switch (o.kind) {
    case GraftOperation::Kind::Replace:
        o.donor = f.string("donor");
        o.select = selectorFromJson(f);
        break;
    case GraftOperation::Kind::MapLayer:
        o.donor = f.string("donor");
        o.fromLayer = f.layer("from");
        o.toLayer = f.layer("to");
        o.select = selectorFromJson(f);
        if (o.select.firstLayer) {
            f.fail("map_layer takes \"from\" and \"to\", not \"layers\"");
        }
        break;
    case GraftOperation::Kind::StackLayers: {
        const nlohmann::json& stack = f.required("stack");
        if (!stack.is_array() || stack.empty()) {
            f.fail("\"stack\" must be a non-empty array of layer ranges");
        }
        if (stack.size() > kMaxStackRuns) {
            f.fail("\"stack\" has " + std::to_string(stack.size()) + " runs, more than the " +
                   std::to_string(kMaxStackRuns) + " a plan may stack");
        }
        for (std::size_t i = 0; i < stack.size(); ++i) {
            Fields r(stack[i], f.where() + " stack " + std::to_string(i + 1), label);
            LayerRange range;
            range.model = r.string("model");
            std::uint32_t first = 0;
            std::uint32_t last = 0;
            if (!parseLayerRange(r.string("layers"), first, last)) {
                r.fail("\"layers\" must be a range such as \"0-4\"");
            }
            range.first = first;
            range.last = last;
            r.finish();
            o.stack.push_back(range);
        }
        break;
    }
    case GraftOperation::Kind::DuplicateLayer:
    case GraftOperation::Kind::RemoveLayer:
        o.toLayer = f.layer("layer");
        break;
    case GraftOperation::Kind::SetMetadata: {
        o.key = f.string("key");
        const std::string type = f.string("type");
        try {
            o.value = metadataValueFromJson(type, f.required("value"));
        } catch (const FormatError& problem) {
            f.fail(problem.what());
        }
        break;
    }
    case GraftOperation::Kind::RemoveMetadata:
        o.key = f.string("key");
        break;
    case GraftOperation::Kind::Purify: {
        o.select = selectorFromJson(f);
        if (o.select.isEmpty()) {
            f.fail("purify needs a selection (\"names\", \"roles\", \"system\" or \"layers\")");
        }
        const std::string method = f.string("method");
        if (method != "fft" && method != "haar") {
            f.fail("\"method\" must be \"fft\" or \"haar\"");
        }
        o.purify.method = method == "fft" ? PurifyParams::Method::Fft : PurifyParams::Method::Haar;
        const auto keep = f.number("keep");
        const auto threshold = f.number("threshold");
        const auto attenuation = f.number("attenuation");
        if (o.purify.method == PurifyParams::Method::Fft ? (threshold || attenuation) : keep.has_value()) {
            f.fail(method == "fft" ? "fft takes \"keep\", not \"threshold\" or \"attenuation\""
                                   : "haar takes \"threshold\" and \"attenuation\", not \"keep\"");
        }
        o.purify.keep = keep.value_or(o.purify.keep);
        o.purify.threshold = threshold.value_or(o.purify.threshold);
        o.purify.attenuation = attenuation.value_or(o.purify.attenuation);
        if (const auto problem = purifyParamsProblem(o.purify)) {
            f.fail(*problem);
        }
        break;
    }
    case GraftOperation::Kind::Quantize:
        o.quantize = quantizeRecipeFromJson(f);
        break;
    case GraftOperation::Kind::Merge:
        o.select = selectorFromJson(f);
        for (const char* key : {"method", "base", "models", "parameters", "seed"}) {
            f.optional(key);
        }
        o.merge = mergeSpecFromJson(j, label + ": " + f.where());
        break;
    }
    if ((o.kind == GraftOperation::Kind::SetMetadata || o.kind == GraftOperation::Kind::RemoveMetadata) &&
        o.key.starts_with(kProvenancePrefix)) {
        f.fail("keys under \"" + std::string(kProvenancePrefix) + "\" are written by the assembler");
    }
    f.finish();
    return o;
}

} // namespace

const std::string* GraftPlan::donorPath(const std::string& id) const {
    for (const auto& [donorId, path] : donors) {
        if (donorId == id) {
            return &path;
        }
    }
    return nullptr;
}

std::string GraftPlan::ensureDonor(const std::string& path) {
    for (const auto& [id, donorPath] : donors) {
        if (donorPath == path) {
            return id;
        }
    }
    // The file's name up to its last '.', as a person reads it ("model.Q4_K.gguf" → "model.Q4_K").
    const std::string name = std::filesystem::path(path).filename().string();
    std::string stem;
    for (const char c : std::string_view(name).substr(0, name.rfind('.'))) {
        const auto byte = static_cast<unsigned char>(c);
        if ((byte & 0xC0) == 0x80) {
            continue; // one '-' per character, not per UTF-8 byte
        }
        stem += byte < 128 && std::isalnum(byte) ? c : '-';
    }
    if (stem.empty() || stem == "base") {
        stem = "donor";
    }
    std::string id = stem;
    for (int k = 2; donorPath(id) != nullptr; ++k) {
        id = stem + "-" + std::to_string(k);
    }
    donors.emplace_back(id, path);
    return id;
}

std::string GraftPlan::modelId(const std::string& path) {
    return path == base ? std::string("base") : ensureDonor(path);
}

const GraftOperation* GraftPlan::quantizeOperation() const {
    const auto it = std::find_if(operations.begin(), operations.end(), [](const GraftOperation& o) {
        return o.kind == GraftOperation::Kind::Quantize;
    });
    return it != operations.end() ? &*it : nullptr;
}

bool parseLayerRange(const std::string& text, std::uint32_t& first, std::uint32_t& last) {
    const auto dash = text.find('-');
    auto number = [](std::string_view s, std::uint32_t& out) {
        const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), out);
        return error == std::errc() && end == s.data() + s.size() && !s.empty();
    };
    if (dash == std::string::npos) {
        return number(text, first) && (last = first, true);
    }
    return number(std::string_view(text).substr(0, dash), first) &&
           number(std::string_view(text).substr(dash + 1), last) && first <= last;
}

std::string_view operationKindName(GraftOperation::Kind kind) {
    for (const auto& k : kKinds) {
        if (k.kind == kind) {
            return k.name;
        }
    }
    return "?";
}

GraftPlan graftPlanFromJson(const nlohmann::json& json, const std::string& label) {
    Fields f(json, "plan", label);
    if (f.string("format") != "organ-graft-plan") {
        f.fail("\"format\" must be \"organ-graft-plan\"");
    }
    const nlohmann::json& version = f.required("version");
    if (!version.is_number_integer() || version.get<int>() != kGraftPlanVersion) {
        f.fail("unsupported plan version " + version.dump() + " (this build reads version 1)");
    }
    GraftPlan plan;
    plan.base = f.string("base");
    if (const auto* donors = f.optional("donors")) {
        if (!donors->is_object()) {
            f.fail("\"donors\" must be an object of id: path");
        }
        for (const auto& [id, path] : donors->items()) {
            if (!path.is_string() || id == "base" || id.empty()) {
                f.fail("donor \"" + id + "\" must be a path, and not be called \"base\"");
            }
            plan.donors.emplace_back(id, path.get<std::string>());
        }
    }
    if (const auto* output = f.optional("output")) {
        if (!output->is_string() || output->get<std::string>().empty()) {
            f.fail("\"output\" must be a path");
        }
        plan.output = output->get<std::string>();
    }
    const nlohmann::json& operations = f.required("operations");
    if (!operations.is_array()) {
        f.fail("\"operations\" must be an array");
    }
    if (operations.size() > kMaxPlanOperations) {
        f.fail("\"operations\" has " + std::to_string(operations.size()) + " entries, more than the " +
               std::to_string(kMaxPlanOperations) + " a plan may have");
    }
    for (std::size_t i = 0; i < operations.size(); ++i) {
        plan.operations.push_back(operationFromJson(operations[i], i, label));
        const GraftOperation& o = plan.operations.back();
        auto known = [&](const std::string& id) { return id == "base" || plan.donorPath(id) != nullptr; };
        if (!o.donor.empty() && !known(o.donor)) {
            throw FormatError(label + ": operation " + std::to_string(i + 1) + ": no donor called \"" +
                              o.donor + "\"");
        }
        for (const std::string& id : o.merge.modelIds()) {
            if (!known(id)) {
                throw FormatError(label + ": operation " + std::to_string(i + 1) + ": no model called \"" +
                                  id + "\"");
            }
        }
        for (const auto& range : o.stack) {
            if (!known(range.model)) {
                throw FormatError(label + ": operation " + std::to_string(i + 1) + ": no model called \"" +
                                  range.model + "\"");
            }
        }
    }
    f.finish();
    return plan;
}

std::string metadataTypeName(const MetaValue& value) {
    return value.isArray() ? std::string(valueTypeName(value.elementType())) + "[]"
                           : std::string(valueTypeName(value.type()));
}

nlohmann::json graftPlanToJson(const GraftPlan& plan) {
    nlohmann::json donors = nlohmann::json::object();
    for (const auto& [id, path] : plan.donors) {
        donors[id] = path;
    }
    nlohmann::json operations = nlohmann::json::array();
    for (const auto& o : plan.operations) {
        nlohmann::json j = {{"op", operationKindName(o.kind)}};
        switch (o.kind) {
        case GraftOperation::Kind::Replace:
            j["donor"] = o.donor;
            selectorToJson(o.select, j);
            break;
        case GraftOperation::Kind::MapLayer:
            j["donor"] = o.donor;
            j["from"] = o.fromLayer;
            j["to"] = o.toLayer;
            selectorToJson(o.select, j);
            break;
        case GraftOperation::Kind::StackLayers:
            j["stack"] = nlohmann::json::array();
            for (const auto& r : o.stack) {
                j["stack"].push_back(
                    {{"model", r.model}, {"layers", std::to_string(r.first) + "-" + std::to_string(r.last)}});
            }
            break;
        case GraftOperation::Kind::DuplicateLayer:
        case GraftOperation::Kind::RemoveLayer:
            j["layer"] = o.toLayer;
            break;
        case GraftOperation::Kind::SetMetadata:
            j["key"] = o.key;
            j["type"] = metadataTypeName(o.value);
            j["value"] = valueToJson(o.value);
            break;
        case GraftOperation::Kind::RemoveMetadata:
            j["key"] = o.key;
            break;
        case GraftOperation::Kind::Purify:
            selectorToJson(o.select, j);
            j["method"] = purifyMethodName(o.purify.method);
            if (o.purify.method == PurifyParams::Method::Fft) {
                j["keep"] = o.purify.keep;
            } else {
                j["threshold"] = o.purify.threshold;
                j["attenuation"] = o.purify.attenuation;
            }
            break;
        case GraftOperation::Kind::Quantize:
            quantizeRecipeToJson(o.quantize, j);
            break;
        case GraftOperation::Kind::Merge:
            mergeSpecToJson(o.merge, j);
            selectorToJson(o.select, j);
            break;
        }
        operations.push_back(std::move(j));
    }
    nlohmann::json out = {{"format", "organ-graft-plan"},
                          {"version", kGraftPlanVersion},
                          {"base", plan.base},
                          {"donors", donors},
                          {"operations", operations}};
    if (!plan.output.empty()) {
        out["output"] = plan.output;
    }
    return out;
}

GraftPlan loadGraftPlan(const RootedPath& rooted) {
    const std::string& path = rooted.path;
    const std::string text = readSmallFile(rooted, kMaxPlanBytes);
    const nlohmann::json json = parseBoundedJson(text, kMaxPlanValues, fileLabel(path), "a graft plan");
    GraftPlan plan = graftPlanFromJson(json, fileLabel(path));
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    auto resolve = [&](std::string& p) {
        if (!p.empty() && std::filesystem::path(p).is_relative()) {
            p = (folder / p).lexically_normal().string();
        }
    };
    resolve(plan.base);
    for (auto& donor : plan.donors) {
        resolve(donor.second);
    }
    resolve(plan.output);
    for (auto& o : plan.operations) {
        resolve(o.quantize.imatrix);
    }
    return plan;
}

namespace {

// A model in the plan's folder, or below it, is named relative to the plan (the folder moves
// as a whole); any other by its absolute path. Either way the plan opens from anywhere.
std::string pathForPlan(const std::string& p, const std::filesystem::path& planFolder) {
    if (p.empty()) {
        return p;
    }
    const std::filesystem::path absolute = std::filesystem::absolute(p).lexically_normal();
    const std::filesystem::path relative = absolute.lexically_relative(planFolder);
    if (!relative.empty() && *relative.begin() != "..") {
        return relative.string();
    }
    return absolute.string();
}

} // namespace

void saveGraftPlan(const GraftPlan& plan, const std::string& path) {
    const std::filesystem::path folder = std::filesystem::absolute(path).lexically_normal().parent_path();
    GraftPlan stored = plan;
    stored.base = pathForPlan(plan.base, folder);
    for (auto& donor : stored.donors) {
        donor.second = pathForPlan(donor.second, folder);
    }
    stored.output = pathForPlan(plan.output, folder);
    for (auto& o : stored.operations) {
        o.quantize.imatrix = pathForPlan(o.quantize.imatrix, folder);
    }
    // The plan's own models are inputs: a plan is never saved over one of them.
    std::vector<std::string> inputs{plan.base};
    for (const auto& donor : plan.donors) {
        inputs.push_back(donor.second);
    }
    writeFileSafely(path, dumpJson(graftPlanToJson(stored), 2) + "\n", inputs);
}

} // namespace organ
