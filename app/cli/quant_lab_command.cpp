// The quantization lab of organ quantize: --report (what each tensor loses in each type),
// --sensitivity (how much the model minds, one group at a time) and --target-bpw (the mix with
// the least predicted KL under a size, written and measured).
#include "cli.h"
#include "measure/quant_error.h"
#include "organs/organ_directory.h"
#include "plan_run.h"
#include "quant/quantize.h"
#include "quant/quantize_model.h"
#include "report_run.h"
#include "support/errors.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "vitals/quant_pareto.h"

#include <charconv>
#include <cmath>
#include <iostream>

namespace organ::cli {
namespace {

// The widest type the lab measures is F32's 32 bits; a mix below one bit per weight fits nothing.
constexpr double kMaxBitsPerWeight = 32.0;

// --types A,B,… (tensor types the engine writes), or `fallback`.
std::vector<TensorType> typesFrom(const Arguments& parsed, std::vector<TensorType> fallback) {
    const auto text = parsed.option("--types");
    if (!text) {
        return fallback;
    }
    std::vector<TensorType> types;
    std::string_view rest = *text;
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        const std::string name(rest.substr(0, comma));
        const auto type = tensorTypeFromAnyCase(name);
        if (!type || !canQuantizeTo(*type)) {
            throw UsageError{"--types: '" + name + "' is not a type the engine writes (" +
                             writableTypesText() + ")"};
        }
        if (std::find(types.begin(), types.end(), *type) == types.end()) {
            types.push_back(*type);
        }
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    if (types.empty()) {
        throw UsageError{"--types needs at least one type"};
    }
    return types;
}

unsigned threadsFrom(const Arguments& parsed) {
    return static_cast<unsigned>(std::min<std::uint64_t>(parsed.unsignedOption("--threads", 0), 1024));
}

// The model and, with --imatrix, its importance matrix. Throws.
struct LabInputs {
    std::shared_ptr<const GgufModel> model;
    std::unique_ptr<ImatrixData> importance;
    std::string imatrix;
};
LabInputs openInputs(const Arguments& parsed) {
    LabInputs in;
    in.imatrix = parsed.option("--imatrix").value_or("");
    in.model = openModel(parsed.positional().front());
    if (!in.imatrix.empty()) {
        in.importance = std::make_unique<ImatrixData>(readImatrix(in.imatrix));
    }
    return in;
}

// The request of --sensitivity and --target-bpw: --text, --chunk, --types, --groups, --threads.
SensitivityRequest sensitivityFrom(const Arguments& parsed, std::vector<TensorType> defaultTypes) {
    SensitivityRequest request;
    request.chunk = chunkFrom(parsed);
    request.types = typesFrom(parsed, std::move(defaultTypes));
    request.threads = threadsFrom(parsed);
    if (const auto groups = parsed.option("--groups")) {
        const auto grouping = quantGroupingFromName(*groups);
        if (!grouping) {
            throw UsageError{"--groups is tensor, layer or role, not '" + *groups + "'"};
        }
        request.grouping = *grouping;
    }
    return request;
}

std::optional<SensitivityReport> runSensitivity(const LabInputs& in, const SensitivityRequest& request,
                                                const StopToken& stop) {
    ProgressPrinter printer(fileLabel(in.model->path()));
    auto report =
        measureSensitivity(in.model, in.importance.get(), in.imatrix, request, printingTo(printer), &stop);
    printer.finish();
    return report;
}

// --target-bpw B: a number of bits per weight, or a file type (the size organ quantize --type
// writes the model in, with the same matrix). Throws UsageError.
std::uint64_t budgetFrom(const std::string& text, const GgufModel& model, bool hasImportance) {
    if (const auto fileType = quantFileTypeFromName(text)) {
        QuantizeRecipe recipe;
        recipe.fileType = *fileType;
        return quantizedSize(model, recipe, hasImportance).tensorBytes;
    }
    double bits = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), bits);
    if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(bits) || bits <= 0 ||
        bits > kMaxBitsPerWeight) {
        throw UsageError{"--target-bpw is a number of bits per weight above 0 and at most 32, or a file type "
                         "(Q4_K_M…), not '" +
                         text + "'"};
    }
    return budgetBytesOf(modelSize(model), bits);
}

// The written mix's vital signs against the model it came from, on `text`.
VitalsReport measureMix(const std::string& output, const GgufModel& model, const std::string& text,
                        std::size_t chunk, const StopToken& stop) {
    VitalsRequest request;
    request.text = text;
    request.chunk = chunk;
    request.continuation = 0;
    request.layerImportance = false;
    const ModelWeights mixed = ModelWeights::ofModel(openModel(output));
    const ModelWeights original = ModelWeights::ofModel(openModel(model.path()));
    auto report = takeVitals(mixed, {&original}, request, {}, &stop);
    if (!report) {
        throw FormatError("cancelled");
    }
    return std::move(*report);
}

std::string measuredLine(const std::string& label, const VitalsReport& r) {
    const Divergence& d = r.parents.front().divergence;
    return "  " + padText(escapeText(label), 24) + " KL mean " + fixedDecimals(d.meanKl, 5) + ", p99 " +
           fixedDecimals(d.p99Kl, 4) + ", top-1 " + fixedDecimals(100 * d.topAgreement, 1) +
           " %, perplexity " + fixedDecimals(r.perplexity.perplexity, 4) + " (the model's " +
           fixedDecimals(r.parents.front().perplexity.perplexity, 4) + ")\n";
}

nlohmann::json measuredJson(const std::string& text, const VitalsReport& r) {
    const Divergence& d = r.parents.front().divergence;
    return {{"text", jsonText(text)},
            {"kl_mean", d.meanKl},
            {"kl_p99", d.p99Kl},
            {"top1_agreement", d.topAgreement},
            {"perplexity", r.perplexity.perplexity},
            {"model_perplexity", r.parents.front().perplexity.perplexity}};
}

} // namespace

int runQuantizeReport(const std::vector<std::string>& args) {
    const Arguments parsed(args, {"--report"}, {"--imatrix", "--types", "--threads", "--json"});
    if (parsed.positional().size() != 1) {
        throw UsageError{"quantize --report needs one model"};
    }
    const std::vector<TensorType> types =
        typesFrom(parsed, std::vector<TensorType>(defaultLabTypes().begin(), defaultLabTypes().end()));
    const std::string& path = parsed.positional().front();
    return runReport(
        "quantize", parsed, {path, parsed.option("--imatrix").value_or(path)},
        [&](const StopToken& stop) {
            const LabInputs in = openInputs(parsed);
            ProgressPrinter printer(fileLabel(path));
            auto report = measureQuantErrors(*in.model, types, in.importance.get(), in.imatrix,
                                             printingTo(printer), &stop, threadsFrom(parsed));
            printer.finish();
            return report;
        },
        quantErrorsText, quantErrorsToJson);
}

int runQuantizeSensitivity(const std::vector<std::string>& args) {
    const Arguments parsed(args, {"--sensitivity"},
                           {"--text", "--chunk", "--types", "--groups", "--imatrix", "--threads", "--json"});
    const auto text = parsed.option("--text");
    if (parsed.positional().size() != 1 || !text) {
        throw UsageError{"quantize --sensitivity needs one model and --text FILE"};
    }
    SensitivityRequest request = sensitivityFrom(parsed, {TensorType::Q2_K});
    const std::string& path = parsed.positional().front();
    return runReport(
        "quantize", parsed, {path, *text, parsed.option("--imatrix").value_or(path)},
        [&](const StopToken& stop) {
            const LabInputs in = openInputs(parsed);
            request.text = readLabText(*text);
            return runSensitivity(in, request, stop);
        },
        sensitivityText, sensitivityToJson);
}

int runQuantizeBudget(const std::vector<std::string>& args) {
    const Arguments parsed(args, {},
                           {"--target-bpw", "--text", "--eval-text", "--chunk", "--types", "--groups",
                            "--imatrix", "--sensitivity-from", "--threads", "-o", "--output", "--json"});
    const auto output = parsed.option("-o", "--output");
    if (parsed.positional().size() != 1 || !output) {
        throw UsageError{"quantize --target-bpw needs one model and -o OUT.gguf"};
    }
    SensitivityRequest request = sensitivityFrom(parsed, defaultBudgetTypes());
    const std::string& path = parsed.positional().front();
    const auto text = parsed.option("--text");
    const auto evalText = parsed.option("--eval-text");
    std::vector<std::string> sources{path};
    const auto measured = parsed.option("--sensitivity-from");
    for (const auto& input : {text, evalText, parsed.option("--imatrix"), measured}) {
        if (input) {
            sources.push_back(*input);
        }
    }
    std::vector<std::string> inputs = sources;
    inputs.push_back(*output);
    const auto json = parsed.option("--json");
    if (json && !reportTargetsOk("quantize", parsed, inputs)) {
        return kExitInvalid;
    }
    try {
        const LabInputs in = openInputs(parsed);
        const std::uint64_t budget =
            budgetFrom(*parsed.option("--target-bpw"), *in.model, in.importance != nullptr);
        checkOutputTarget(*output, sources);
        // An earlier run's KL table decides the groups and types; else they are measured below.
        std::optional<SensitivityReport> sensitivity;
        if (measured) {
            sensitivity = readSensitivity(*measured, *in.model);
            if (sensitivity->importance != (in.importance != nullptr)) {
                throw FormatError(fileLabel(*measured) + ": measured " +
                                  (sensitivity->importance ? "with" : "without") +
                                  " an importance matrix; quantize the same way (--imatrix)");
            }
            request.grouping = sensitivity->grouping;
            request.types = sensitivity->types;
        }
        const std::uint64_t least = smallestMixBytes(*in.model, request.grouping, request.types);
        if (budget < least) {
            const double parameters = double(modelSize(*in.model).parameters);
            throw FormatError(fileLabel(path) + ": " + fixedDecimals(8.0 * double(budget) / parameters, 4) +
                              " bits per weight is below the smallest mix of those types (" +
                              fixedDecimals(8.0 * double(least) / parameters, 4) + ")");
        }
        request.text = text ? readLabText(*text) : std::string();
        const std::string held = evalText ? readLabText(*evalText) : std::string();
        StopToken stop;
        const StopOnInterrupt interrupt(stop);
        if (!sensitivity) {
            sensitivity = runSensitivity(in, request, stop);
        }
        if (!sensitivity) {
            std::cerr << "organ quantize: cancelled; nothing written\n";
            return kExitInvalid;
        }
        printNotes("quantize", sensitivity->notes);
        const BudgetMix mix = chooseBudgetMix(*in.model, *sensitivity, budget);
        const QuantizeRecipe recipe = budgetRecipe(mix, in.imatrix);
        // The mix as organ quantize would write it, checked against the budget before a byte is.
        const ModelSize written = quantizedSize(*in.model, recipe, in.importance != nullptr);
        if (written.tensorBytes != mix.size.tensorBytes || written.tensorBytes > budget) {
            throw FormatError("the mix would take " + std::to_string(written.tensorBytes) +
                              " bytes, not the " + std::to_string(mix.size.tensorBytes) + " chosen within " +
                              std::to_string(budget));
        }
        ProgressPrinter printer(fileLabel(path));
        const QuantizeOutcome outcome = quantizeModel(*in.model, recipe, in.importance.get(), *output,
                                                      printingTo(printer), &stop, request.threads);
        printer.finish();
        if (!reportJobEnd("quantize", outcome.written)) {
            return kExitInvalid;
        }
        const std::string searchLabel = text ? fileLabel(*text) : std::string("the built-in text");
        const VitalsReport searched = measureMix(*output, *in.model, request.text, request.chunk, stop);
        std::optional<VitalsReport> heldOut;
        if (evalText) {
            heldOut = measureMix(*output, *in.model, held, request.chunk, stop);
        }
        std::cout << sensitivityText(*sensitivity) << "\n"
                  << "mix: " << fixedDecimals(mix.size.bitsPerWeight(), 4) << " bits per weight ("
                  << mix.size.tensorBytes << " of the " << budget << " tensor bytes allowed, "
                  << mix.size.parameters << " parameters: every tensor counted), "
                  << (mix.exact ? "the exact optimum of the knapsack" : "the knapsack on sizes rounded up")
                  << "\n";
        for (const BudgetMix::Choice& c : mix.choices) {
            std::cout << "  " << padText(escapeText(c.group), 28)
                      << padText(std::string(tensorTypeName(c.type)), 8) << " predicted KL "
                      << fixedDecimals(1000 * c.predictedKl, 4) << " × 10⁻³\n";
        }
        std::cout << "predicted KL (the groups' sum) " << fixedDecimals(mix.predictedKl, 5) << "; measured:\n"
                  << measuredLine(searchLabel, searched);
        if (heldOut) {
            std::cout << measuredLine(fileLabel(*evalText) + " (held out)", *heldOut);
        }
        std::cout << "written to " << escapeText(fileLabel(*output)) << "; with llama.cpp:\n  llama-quantize"
                  << (in.imatrix.empty() ? "" : " --imatrix '" + escapeText(in.imatrix) + "'") << " "
                  << tensorTypeArguments(recipe) << " '" << escapeText(path) << "' '" << escapeText(*output)
                  << "' " << quantFileTypeName(recipe.fileType) << "\n";
        if (json) {
            nlohmann::json measured = nlohmann::json::array({measuredJson(searchLabel, searched)});
            if (heldOut) {
                measured.push_back(measuredJson(fileLabel(*evalText), *heldOut));
            }
            const nlohmann::json doc = {{"format", "organ-quantize-budget"},
                                        {"version", 1},
                                        {"output", jsonText(*output)},
                                        {"mix", budgetMixToJson(mix, recipe)},
                                        {"measured", measured},
                                        {"sensitivity", sensitivityToJson(*sensitivity)}};
            if (!writeReport("quantize", *json, dumpJson(doc, 2) + "\n", inputs)) {
                return kExitInvalid;
            }
        }
    } catch (const std::exception& error) {
        std::cerr << "organ quantize: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
    return kExitOk;
}

} // namespace organ::cli
