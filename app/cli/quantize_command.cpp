// organ quantize MODEL --type TYPE -o OUT.gguf: the model as llama-quantize writes it.
#include "cli.h"
#include "organs/organ_directory.h"
#include "quant/quantize_model.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <algorithm>
#include <iostream>
#include <memory>

namespace organ::cli {
namespace {

TensorType typeOption(const Arguments& parsed, const char* name) {
    const std::string text = *parsed.option(name);
    const auto type = tensorTypeFromAnyCase(text);
    if (!type) {
        throw UsageError{std::string(name) + ": unknown tensor type '" + text + "'"};
    }
    return *type;
}

QuantizeRecipe recipeFrom(const Arguments& parsed) {
    QuantizeRecipe recipe;
    const auto type = parsed.option("--type");
    const auto fileType = type ? quantFileTypeFromName(*type) : std::nullopt;
    if (!fileType) {
        std::string names;
        for (QuantFileType t : allQuantFileTypes()) {
            names += (names.empty() ? "" : ", ") + std::string(quantFileTypeName(t));
        }
        throw UsageError{"--type must be one of " + names + (type ? " (not '" + *type + "')" : "")};
    }
    recipe.fileType = *fileType;
    for (const std::string& option : parsed.all("--tensor-type")) {
        std::pair<std::string, TensorType> entry;
        if (!parseTensorTypeOption(option, entry)) {
            throw UsageError{"--tensor-type takes REGEX=TYPE, not '" + option + "'"};
        }
        recipe.tensorTypes.push_back(std::move(entry));
    }
    if (parsed.option("--output-tensor-type")) {
        recipe.outputTensorType = typeOption(parsed, "--output-tensor-type");
    }
    if (parsed.option("--token-embedding-type")) {
        recipe.tokenEmbeddingType = typeOption(parsed, "--token-embedding-type");
    }
    recipe.pure = parsed.flag("--pure");
    recipe.leaveOutputTensor = parsed.flag("--leave-output-tensor");
    recipe.imatrix = parsed.option("--imatrix").value_or("");
    if (const auto problem = quantizeRecipeProblem(recipe)) {
        throw UsageError{*problem};
    }
    return recipe;
}

} // namespace

int runQuantize(const std::vector<std::string>& args) {
    const auto given = [&](std::string_view name) {
        return std::any_of(args.begin(), args.end(), [&](const std::string& a) {
            return a == name || (a.starts_with(name) && a.size() > name.size() && a[name.size()] == '=');
        });
    };
    if (given("--report")) {
        return runQuantizeReport(args);
    }
    if (given("--sensitivity")) {
        return runQuantizeSensitivity(args);
    }
    if (given("--target-bpw")) {
        return runQuantizeBudget(args);
    }
    const Arguments parsed(args, {"--pure", "--leave-output-tensor"},
                           {"--type", "-o", "--output", "--imatrix", "--tensor-type", "--output-tensor-type",
                            "--token-embedding-type", "--threads", "--json"});
    const auto output = parsed.option("-o", "--output");
    if (parsed.positional().size() != 1 || !output) {
        throw UsageError{"quantize needs one model, --type TYPE and -o OUT.gguf"};
    }
    const QuantizeRecipe recipe = recipeFrom(parsed);
    const auto threads =
        static_cast<unsigned>(std::min<std::uint64_t>(parsed.unsignedOption("--threads", 0), 1024));
    const std::string& path = parsed.positional().front();
    const auto json = parsed.option("--json");
    std::vector<std::string> inputs{path, *output};
    if (!recipe.imatrix.empty()) {
        inputs.push_back(recipe.imatrix);
    }
    if (json && !reportTargetsOk("quantize", parsed, inputs)) {
        return kExitInvalid;
    }
    std::shared_ptr<const GgufModel> model;
    std::unique_ptr<ImatrixData> importance;
    try {
        model = openModel(path);
        if (!recipe.imatrix.empty()) {
            importance = std::make_unique<ImatrixData>(readImatrix(recipe.imatrix));
        }
    } catch (const std::exception& error) {
        std::cerr << "organ quantize: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
    ProgressPrinter printer(fileLabel(path));
    const QuantizeOutcome outcome =
        quantizeModel(*model, recipe, importance.get(), *output, printingTo(printer), nullptr, threads);
    printer.finish();
    for (const std::string& note : outcome.notes) {
        std::cerr << "organ quantize: note: " << escapeText(note) << "\n";
    }
    for (const std::string& warning : outcome.written.warnings) {
        std::cerr << "organ quantize: warning: " << escapeText(warning) << "\n";
    }
    if (json && !writeReport("quantize", *json,
                             dumpJson(quantizeOutcomeToJson(outcome, recipe, *output), 2) + "\n", {path})) {
        return kExitInvalid;
    }
    if (!outcome.written.isOk()) {
        std::cerr << "organ quantize: " << escapeText(outcome.written.message) << "\n";
        return kExitInvalid;
    }
    std::uint64_t before = 0;
    std::uint64_t after = 0;
    std::uint64_t elements = 0;
    std::size_t converted = 0;
    for (const QuantizedTensor& t : outcome.tensors) {
        const TensorInfo& info = *model->findTensor(t.name);
        before += info.bytes;
        after += storedBytes(t.to, info.elements);
        elements += info.elements;
        converted += t.converted ? 1 : 0;
    }
    std::cout << "quantized " << escapeText(fileLabel(path)) << " to " << quantFileTypeName(recipe.fileType)
              << (importance ? " with an importance matrix" : "") << " into "
              << escapeText(fileLabel(*output)) << ": " << converted << " of " << outcome.tensors.size()
              << " tensors converted, " << humanBytes(before) << " → " << humanBytes(after) << " ("
              << fixedDecimals(elements != 0 ? 8.0 * double(after) / double(elements) : 0.0, 2)
              << " bits per weight)\n";
    return kExitOk;
}

} // namespace organ::cli
