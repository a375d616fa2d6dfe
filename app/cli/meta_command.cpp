// organ meta: a model's metadata edited, its tensors copied as they are (a graft plan of
// set_metadata and remove_metadata operations, checked before anything is written).
#include "cli.h"
#include "graft/graft_plan.h"
#include "organs/organ_directory.h"
#include "plan_run.h"
#include "support/errors.h"
#include "support/safe_files.h"
#include "support/text_format.h"

#include <nlohmann/json.hpp>

namespace organ::cli {
namespace {

// A value read from a file (--set-file): a chat template, a license text.
constexpr std::uint64_t kMaxValueFileBytes = 16u << 20;

// The type names --set takes after the last ':'.
bool isTypeName(std::string_view name) {
    static constexpr std::string_view kScalars[] = {"string", "bool", "u8",  "i8",  "u16", "i16",
                                                    "u32",    "i32",  "u64", "i64", "f32", "f64"};
    if (name.ends_with("[]")) {
        name.remove_suffix(2);
    }
    return std::find(std::begin(kScalars), std::end(kScalars), name) != std::end(kScalars);
}

// KEY=VALUE[:TYPE]. Without a type the key keeps the type the model gives it (a string when it
// has no such key). A string is the text as it is; other types are read as JSON (arrays as JSON
// arrays). Throws UsageError.
GraftOperation setOperation(const std::string& argument, const GgufModel& model) {
    const auto equals = argument.find('=');
    if (equals == std::string::npos || equals == 0) {
        throw UsageError{"--set needs KEY=VALUE[:TYPE], not '" + argument + "'"};
    }
    GraftOperation o;
    o.kind = GraftOperation::Kind::SetMetadata;
    o.key = argument.substr(0, equals);
    std::string value = argument.substr(equals + 1);
    std::string type;
    if (const auto colon = value.rfind(':');
        colon != std::string::npos && isTypeName(value.substr(colon + 1))) {
        type = value.substr(colon + 1);
        value.resize(colon);
    } else if (const MetaValue* existing = model.find(o.key)) {
        type = metadataTypeName(*existing);
    } else {
        type = "string";
    }
    try {
        if (type == "string") {
            o.value = MetaValue::fromString(value);
        } else {
            o.value = metadataValueFromJson(type, nlohmann::json::parse(value));
        }
    } catch (const std::exception& problem) {
        throw UsageError{"--set " + o.key + ": '" + value + "' is not a " + type + " (" + problem.what() +
                         ")"};
    }
    return o;
}

} // namespace

int runMeta(const std::vector<std::string>& args) {
    const Arguments parsed(args, {"--keep-invalid"},
                           {"--set", "--set-file", "--delete", "-o", "--output", "--json"});
    const auto output = parsed.option("-o", "--output");
    const auto sets = parsed.all("--set");
    const auto files = parsed.all("--set-file");
    const auto deletes = parsed.all("--delete");
    if (parsed.positional().size() != 1 || !output || (sets.empty() && files.empty() && deletes.empty())) {
        throw UsageError{"meta needs one model, -o OUT and at least one --set, --set-file or --delete"};
    }
    const std::string& path = parsed.positional().front();
    GraftPlan plan;
    plan.base = path;
    plan.output = *output;
    const std::shared_ptr<const GgufModel> model = openOrSay("meta", path);
    if (!model) {
        return kExitInvalid;
    }
    for (const std::string& set : sets) {
        plan.operations.push_back(setOperation(set, *model));
    }
    for (const std::string& file : files) {
        const auto equals = file.find('=');
        if (equals == std::string::npos || equals == 0 || equals + 1 == file.size()) {
            throw UsageError{"--set-file needs KEY=FILE, not '" + file + "'"};
        }
        GraftOperation o;
        o.kind = GraftOperation::Kind::SetMetadata;
        o.key = file.substr(0, equals);
        try {
            o.value =
                MetaValue::fromString(readSmallFile(RootedPath(file.substr(equals + 1)), kMaxValueFileBytes));
        } catch (const std::exception& error) {
            std::cerr << "organ meta: " << escapeText(error.what()) << "\n";
            return kExitInvalid;
        }
        plan.operations.push_back(std::move(o));
    }
    for (const std::string& key : deletes) {
        if (model->find(key) == nullptr) {
            std::cerr << "organ meta: " << escapeText(fileLabel(path)) << " has no key '" << escapeText(key)
                      << "'\n";
            return kExitInvalid;
        }
        GraftOperation o;
        o.kind = GraftOperation::Kind::RemoveMetadata;
        o.key = key;
        plan.operations.push_back(std::move(o));
    }
    PlanRun run;
    run.options.keepInvalid = parsed.flag("--keep-invalid");
    run.json = parsed.option("--json");
    return runPlan(plan, *output, "meta", run);
}

} // namespace organ::cli
