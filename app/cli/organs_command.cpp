#include "anatomy/model_validation.h"
#include "cli.h"
#include "measure/measure_cache.h"
#include "organs/organ_directory.h"
#include "purify/purify_model.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "vitals/tokenizer.h"
#include "vitals/vitals_report.h"

#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace organ::cli {

// organ extract MODEL -o DIR: the model as an organ directory, with its measurement when the
// cache holds one for the default parameters (nothing is measured here).
int runExtract(const std::vector<std::string>& args) {
    const Arguments parsed(args, {}, {"-o", "--output", "--json"});
    const auto output = parsed.option("-o", "--output");
    if (parsed.positional().size() != 1 || !output) {
        throw UsageError{"extract needs one model and -o DIR"};
    }
    const std::string& path = parsed.positional().front();
    const auto json = parsed.option("--json");
    if (json && !reportTargetsOk("extract", parsed, {path, *output})) {
        return kExitInvalid;
    }
    MeasuredModel m;
    try {
        m.model = openModel(path);
    } catch (const std::exception& error) {
        std::cerr << "organ extract: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
    m.anatomy = analyzeAnatomy(*m.model);
    std::optional<nlohmann::json> measurement;
    if (MeasurementCache().load(m, ZParams{})) {
        measurement = measurementToJson(m);
    }
    ProgressPrinter printer(fileLabel(path));
    const JobResult done =
        extractOrgans(*m.model, *output, measurement ? &*measurement : nullptr, printingTo(printer));
    printer.finish();
    if (!reportJobEnd("extract", done)) {
        return kExitInvalid;
    }
    std::cout << escapeText(fileLabel(*output)) << ": " << m.model->tensors().size() << " tensors"
              << (measurement ? ", with their measurement" : "") << "\n";
    if (json &&
        !writeReport("extract", *json, dumpJson(extractionToJson(*m.model, *output), 2) + "\n", {path})) {
        return kExitInvalid;
    }
    return kExitOk;
}

int runAssembleOrgans(const std::string& directory, const std::string& output, bool keepInvalid) {
    try {
        const OrganDirectory organs = OrganDirectory::open(directory);
        ProgressPrinter printer(fileLabel(directory));
        const JobResult done = assembleOrgans(organs, output, keepInvalid, printingTo(printer));
        printer.finish();
        if (!reportJobEnd("assemble", done)) {
            return kExitInvalid;
        }
        std::cout << escapeText(fileLabel(output)) << ": assembled from " << organs.tensors().size()
                  << " tensor files\n";
        // Kept although invalid only when asked for: said, and not a success.
        const std::vector<Finding> findings = validateModel(*GgufModel::open(output));
        if (!countFindings(findings).ok()) {
            std::cout << findingsText(findings, "validation of " + fileLabel(output));
            std::cerr << "organ assemble: " << escapeText(fileLabel(output))
                      << " is invalid (llama.cpp will not load it) and was kept because of --keep-invalid\n";
            return kExitInvalid;
        }
        return kExitOk;
    } catch (const std::exception& error) {
        std::cerr << "organ assemble: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
}

std::optional<PurifyParams> purifyParamsFrom(const Arguments& parsed, const char* methodOption) {
    const auto method = parsed.option(methodOption);
    if (!method) {
        for (const char* name : {"--keep", "--threshold", "--attenuation"}) {
            if (parsed.option(name)) {
                throw UsageError{std::string(name) + " needs " + methodOption + " fft|haar"};
            }
        }
        return std::nullopt;
    }
    PurifyParams params;
    if (*method == "fft") {
        params.method = PurifyParams::Method::Fft;
    } else if (*method == "haar") {
        params.method = PurifyParams::Method::Haar;
    } else {
        throw UsageError{std::string(methodOption) + " is fft or haar, not '" + *method + "'"};
    }
    auto number = [&](const char* name, double& value, bool forMethod) {
        const auto text = parsed.option(name);
        if (!text) {
            return;
        }
        if (!forMethod) {
            throw UsageError{std::string(name) + " does not apply to " + methodOption + " " + *method};
        }
        std::size_t used = 0;
        try {
            value = std::stod(*text, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != text->size() || !std::isfinite(value)) {
            throw UsageError{std::string(name) + " needs a number, not '" + *text + "'"};
        }
    };
    const bool fft = params.method == PurifyParams::Method::Fft;
    number("--keep", params.keep, fft);
    number("--threshold", params.threshold, !fft);
    number("--attenuation", params.attenuation, !fft);
    if (purifyParamsProblem(params)) {
        throw UsageError{"--keep is in (0, 1], --threshold 0 or more, --attenuation in [0, 1]"};
    }
    return params;
}

void printPurified(const std::vector<PurifiedTensor>& tensors, const PurifyParams& params) {
    const bool fft = params.method == PurifyParams::Method::Fft;
    auto theta = [](const std::optional<double>& t) {
        std::ostringstream s;
        if (t) {
            s << std::fixed << std::setprecision(2) << *t << "°";
        } else {
            s << "–";
        }
        return s.str();
    };
    std::cout << "  " << padText("tensor", 32) << padText("θ before", 10, true)
              << padText("θ after", 10, true) << padText("change", 9, true)
              << (fft ? padText("kept", 8, true) : std::string()) << "\n";
    for (const PurifiedTensor& t : tensors) {
        std::cout << "  " << padText(escapeText(t.name), 32) << padText(theta(t.thetaBefore), 10, true)
                  << padText(theta(t.thetaAfter), 10, true)
                  << padText(fixedDecimals(100 * t.relativeChange, 1) + " %", 9, true)
                  << (fft ? padText(fixedDecimals(100 * t.keptFraction, 1) + " %", 8, true) : std::string())
                  << "\n";
    }
}

// organ purify MODEL|DIR --method fft|haar [parameters] [selection] -o OUT: the selected
// tensors purified (../shared/specs/purify-v1.md), θ before → after and the change per tensor.
int runPurify(const std::vector<std::string>& args) {
    const Arguments parsed(args, {},
                           {"--method", "--keep", "--threshold", "--attenuation", "--layers", "--system",
                            "--role", "--tensor", "-o", "--output", "--json"});
    const auto output = parsed.option("-o", "--output");
    const auto given = purifyParamsFrom(parsed, "--method");
    if (parsed.positional().size() != 1 || !output || !given) {
        throw UsageError{"purify needs one model, --method fft|haar and -o OUT.gguf (or -o DIR)"};
    }
    const PurifyParams params = *given;
    const TensorSelector selector = selectorFrom(parsed);
    const std::string& path = parsed.positional().front();
    const auto json = parsed.option("--json");
    if (json && !reportTargetsOk("purify", parsed, {path, *output})) {
        return kExitInvalid;
    }
    const std::shared_ptr<const GgufModel> model = openOrSay("purify", path);
    if (!model) {
        return kExitInvalid;
    }
    ProgressPrinter printer(fileLabel(path));
    const PurifyOutcome outcome = purifyModel(*model, selector, params, *output, printingTo(printer));
    printer.finish();
    for (const std::string& finding : outcome.findings) {
        std::cerr << "organ purify: note: " << escapeText(finding) << "\n";
    }
    if (json &&
        !writeReport("purify", *json, dumpJson(purifyOutcomeToJson(outcome, *output), 2) + "\n", {path})) {
        return kExitInvalid;
    }
    if (!outcome.written.isOk()) {
        std::cerr << "organ purify: " << escapeText(outcome.written.message) << "\n";
        return kExitInvalid;
    }
    std::cout << "purified " << outcome.tensors.size() << " tensors of " << escapeText(fileLabel(path))
              << " (" << purifyMethodName(params.method) << ", " << purifyParamsText(params) << ") into "
              << escapeText(fileLabel(*output))
              << (isOrganDirectoryTarget(*output) ? " (an organ directory)" : "") << "\n\n";
    printPurified(outcome.tensors, params);
    // Whether it still speaks: the perplexity of both on the built-in text, where vital signs
    // can be taken; never a claim that was not measured.
    try {
        VitalsRequest request;
        request.continuation = 0;
        request.layerImportance = false;
        const auto before = takeVitals(ModelWeights::ofModel(model), {}, request);
        const auto after = takeVitals(ModelWeights::ofModel(openModel(*output)), {}, request);
        if (before && after) {
            std::cout << "\nperplexity on the built-in text (" << before->tokens.size()
                      << " tokens): " << fixedDecimals(before->perplexity.perplexity, 4) << " → "
                      << fixedDecimals(after->perplexity.perplexity, 4) << "\n";
        }
    } catch (const std::exception& error) {
        std::cout << "\nperplexity not measured: " << escapeText(error.what()) << "\n";
    }
    return kExitOk;
}

} // namespace organ::cli
