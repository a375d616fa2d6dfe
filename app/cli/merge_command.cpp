// organ merge CONFIG.yaml -o OUT, or organ merge --method M --base B --model X[:W]… -o OUT: a merge
// from mergekit's configuration, run as a graft plan (check, vital signs if asked, write, validate).
#include "cli.h"
#include "graft/merge_plan.h"
#include "organs/organ_directory.h"
#include "plan_run.h"
#include "support/errors.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "vitals/vitals_report.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iostream>

namespace organ::cli {
namespace {

constexpr std::uint64_t kMaxTextBytes = 4u << 20;

// --method M [--base B] --model PATH[:WEIGHT]… [--density D] [--gamma G] [--t T] [--seed N]
// [--out-type TYPE]: a configuration of numbers.
MergeConfig quickConfig(const Arguments& parsed) {
    MergeConfig config;
    const std::string method = *parsed.option("--method");
    const auto m = mergeMethodFromName(method);
    if (!m || *m == MergeMethod::Passthrough) {
        std::string names = mergeMethodNames();
        names = names.substr(0, names.rfind(", passthrough"));
        std::string lower = method;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        const std::string hint = m ? " (passthrough takes a configuration with slices)"
                                 : lower != method && mergeMethodFromName(lower)
                                     ? " (names are lowercase: '" + lower + "')"
                                     : "";
        throw UsageError{"--method '" + method + "' is not one of " + names + hint};
    }
    config.spec.method = *m;
    config.spec.base = parsed.option("--base").value_or("");
    for (const std::string& given : parsed.all("--model")) {
        MergeModel model{given, {}};
        const auto colon = given.rfind(':');
        double weight = 1;
        if (colon != std::string::npos) {
            const std::string_view tail = std::string_view(given).substr(colon + 1);
            const std::string_view number = tail.starts_with('+') ? tail.substr(1) : tail;
            const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), weight);
            if (error == std::errc() && end == number.data() + number.size() && !number.empty() &&
                std::isfinite(weight)) {
                model.model = given.substr(0, colon);
            } else if (std::error_code ignored;
                       !tail.empty() && !std::filesystem::exists(given, ignored) &&
                       (std::filesystem::exists(given.substr(0, colon), ignored) ||
                        std::string_view("0123456789+-.").find(tail.front()) != std::string_view::npos)) {
                // A weight meant, and not a number: not a file named with a colon.
                throw UsageError{"--model " + escapeText(given) + ": the weight '" +
                                 escapeText(std::string(tail)) + "' is not a finite number in range"};
            } else {
                weight = 1;
            }
        }
        if (model.model.empty()) {
            throw UsageError{"--model '" + escapeText(given) + "' names no model"};
        }
        if (takesParameter(config.spec.method, "weight")) {
            model.parameters["weight"] = ParamValue::number(weight);
        } else if (model.model != given) {
            throw UsageError{method + " takes no weights: --model " + given};
        }
        config.spec.models.push_back(std::move(model));
    }
    for (const char* name : {"density", "gamma", "t"}) {
        const std::string option = std::string("--") + name;
        if (parsed.option(option)) {
            config.spec.parameters[name] = ParamValue::number(parsed.numberOption(option, 0));
        }
    }
    config.spec.seed = parsed.unsignedOption("--seed", 0);
    if (const auto type = parsed.option("--out-type")) {
        config.outType = quantFileTypeFromName(*type);
        if (!config.outType) {
            throw UsageError{"--out-type needs a file type of organ quantize (Q8_0, Q4_K_M, F16…), not '" +
                             *type + "'"};
        }
    }
    if (const auto problem = mergeSpecProblem(config.spec)) {
        throw UsageError{*problem};
    }
    // Each model there (the hint where one looks like a Hugging Face id), before anything opens.
    if (const auto missing =
            config.spec.base.empty() ? std::nullopt : missingModel(config.spec.base, config.spec.base)) {
        throw FormatError("--base: " + *missing);
    }
    for (const MergeModel& model : config.spec.models) {
        if (const auto missing = missingModel(model.model, model.model)) {
            throw FormatError("--model: " + *missing);
        }
    }
    return config;
}

// The vital signs of the merge (never written) and of each of its models, on `request`'s text.
std::optional<VitalsReport> mergeVitals(const GraftPlan& plan, const GraftModels& models,
                                        const CompatibilityReport& report, const VitalsRequest& request) {
    const ModelWeights merged = ModelWeights::ofPlan(plan, models, report);
    std::vector<ModelWeights> parents;
    parents.push_back(ModelWeights::ofModel(openModel(plan.base)));
    for (const auto& donor : plan.donors) {
        parents.push_back(ModelWeights::ofModel(openModel(donor.second)));
    }
    std::vector<const ModelWeights*> pointers;
    for (const ModelWeights& p : parents) {
        pointers.push_back(&p);
    }
    ProgressPrinter printer("vital signs");
    auto vitals = takeVitals(merged, pointers, request, printingTo(printer));
    printer.finish();
    return vitals;
}

} // namespace

int runMerge(const std::vector<std::string>& args) {
    const Arguments parsed(args, {"--keep-invalid"},
                           {"-o", "--output", "--json", "--vitals", "--chunk", "--method", "--base",
                            "--model", "--density", "--gamma", "--t", "--seed", "--out-type"});
    const auto output = parsed.option("-o", "--output");
    const bool quick = parsed.option("--method").has_value();
    if (!output || (quick ? !parsed.positional().empty() : parsed.positional().size() != 1)) {
        throw UsageError{"merge needs CONFIG.yaml (or --method M --model X…) and -o OUT.gguf"};
    }
    if (!quick) {
        for (const char* option :
             {"--base", "--model", "--density", "--gamma", "--t", "--seed", "--out-type"}) {
            if (parsed.option(option)) {
                throw UsageError{std::string(option) + " goes with --method; a configuration says it itself"};
            }
        }
    }
    VitalsRequest request;
    request.continuation = 0;
    request.chunk = chunkFrom(parsed);
    const auto textPath = parsed.option("--vitals");
    if (parsed.option("--chunk") && !textPath) {
        throw UsageError{"--chunk goes with --vitals TEXT"};
    }
    MergeConfig config;
    PlanRun run;
    try {
        if (quick) {
            config = quickConfig(parsed);
        } else {
            config = readMergeConfig(parsed.positional().front());
            run.inputs.push_back(parsed.positional().front());
        }
        if (textPath) {
            request.text = readSmallFile(*textPath, kMaxTextBytes);
            run.inputs.push_back(*textPath);
            checkScoredText(fileLabel(*textPath), request.text);
        }
    } catch (const UsageError&) {
        throw;
    } catch (const std::exception& error) {
        std::cerr << "organ merge: " << escapeText(error.what()) << "\n";
        // --json F says why nothing was written (never over the output it names, nor an input).
        if (const auto json = parsed.option("--json")) {
            std::vector<std::string> inputs = run.inputs;
            if (!quick) {
                inputs.push_back(parsed.positional().front());
            }
            writeRefusedReport("merge", *json, *output, error.what(), inputs, [](nlohmann::json& document) {
                document["merge"] = nullptr;
                document["notes"] = nlohmann::json::array();
                document["vitals"] = nullptr;
            });
        }
        return kExitInvalid;
    }
    for (const std::string& note : config.notes) {
        std::cerr << "organ merge: note: " << escapeText(note) << "\n";
    }
    const GraftPlan plan = mergePlanOf(config, *output);
    std::optional<VitalsReport> vitals;
    run.options.keepInvalid = parsed.flag("--keep-invalid");
    run.json = parsed.option("--json");
    run.beforeWriting = [&](const CompatibilityReport& report,
                            const GraftModels& models) -> std::optional<std::string> {
        if (auto problem = mergeConfigProblem(config, models)) {
            return problem;
        }
        if (!textPath) {
            return std::nullopt;
        }
        try {
            vitals = mergeVitals(plan, models, report, request);
        } catch (const std::exception& error) {
            return std::string("the merge's vital signs: ") + error.what();
        }
        std::cout << vitalsText(*vitals) << std::flush;
        return std::nullopt;
    };
    run.moreJson = [&](nlohmann::json& document) {
        nlohmann::json merge;
        mergeSpecToJson(config.spec, merge);
        document["merge"] = merge;
        document["notes"] = config.notes;
        document["vitals"] = vitals ? vitalsToJson(*vitals) : nlohmann::json();
    };
    return runPlan(plan, *output, "merge", run);
}

} // namespace organ::cli
