#include "cli.h"
#include "graft/assembly.h"
#include "organs/organ_directory.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "vitals/tokenizer.h"
#include "vitals/vitals_report.h"

#include <iostream>
#include <memory>

namespace organ::cli {
namespace {

constexpr std::uint64_t kMaxTextBytes = 4u << 20;
constexpr std::uint64_t kMaxContinuation = 1024;

} // namespace

std::size_t chunkFrom(const Arguments& args) {
    const std::uint64_t chunk = args.unsignedOption("--chunk", 0);
    if (args.option("--chunk") && (chunk < kMinVitalsChunk || chunk > kMaxVitalsTokens)) {
        throw UsageError{"--chunk is " + std::to_string(kMinVitalsChunk) + " to " +
                         std::to_string(kMaxVitalsTokens) + " tokens"};
    }
    return static_cast<std::size_t>(chunk);
}

int runVitals(const std::vector<std::string>& args) {
    const Arguments parsed(args, {},
                           {"--text", "--prompt", "--tokens", "--parent", "--plan", "--json", "--chunk"});
    const auto planPath = parsed.option("--plan");
    if (planPath ? !parsed.positional().empty() : parsed.positional().size() != 1) {
        throw UsageError{"vitals needs one model, or --plan PLAN.json"};
    }
    VitalsRequest request;
    request.continuation = parsed.unsignedOption("--tokens", request.continuation);
    if (request.continuation > kMaxContinuation) {
        throw UsageError{"--tokens is at most " + std::to_string(kMaxContinuation)};
    }
    if (const auto prompt = parsed.option("--prompt")) {
        request.prompt = *prompt;
    }
    request.chunk = chunkFrom(parsed);
    std::vector<std::string> inputs;
    try {
        if (const auto text = parsed.option("--text")) {
            request.text = readSmallFile(*text, kMaxTextBytes);
            inputs.push_back(*text);
            checkScoredText(fileLabel(*text), request.text);
        }
        // The model: a file, or the chimera a plan would write (never written); a plan's base
        // and donors are its parents.
        std::optional<ModelWeights> model;
        std::vector<ModelWeights> parents;
        std::optional<GraftModels> planModels;
        if (planPath) {
            const GraftPlan plan = loadGraftPlan(*planPath);
            planModels = GraftModels::open(plan);
            const CompatibilityReport report = checkGraft(plan, *planModels);
            if (report.hasErrors()) {
                std::cout << reportText(report, plan);
                std::cerr << "organ vitals: " << escapeText(fileLabel(*planPath))
                          << ": the plan has errors; nothing to run\n";
                return kExitInvalid;
            }
            model = ModelWeights::ofPlan(plan, *planModels, report);
            parents.push_back(ModelWeights::ofModel(openModel(plan.base)));
            for (const auto& donor : plan.donors) {
                parents.push_back(ModelWeights::ofModel(openModel(donor.second)));
            }
            inputs.push_back(*planPath);
        } else {
            model = ModelWeights::ofModel(openModel(parsed.positional().front()));
            inputs.push_back(parsed.positional().front());
        }
        for (const auto& parent : parsed.all("--parent")) {
            parents.push_back(ModelWeights::ofModel(openModel(parent)));
            inputs.push_back(parent);
        }
        const auto json = parsed.option("--json");
        if (json) {
            checkOutputTarget(*json, inputs);
        }
        std::vector<const ModelWeights*> parentPointers;
        for (const auto& p : parents) {
            parentPointers.push_back(&p);
        }
        ProgressPrinter printer(model->label());
        const auto report = takeVitals(*model, parentPointers, request, printingTo(printer));
        printer.finish();
        std::cout << vitalsText(*report);
        if (json) {
            std::vector<std::string> warnings;
            writeFileSafely(*json, dumpJson(vitalsToJson(*report), 2) + "\n", inputs, &warnings);
            for (const auto& warning : warnings) {
                std::cerr << "organ vitals: warning: " << escapeText(warning) << "\n";
            }
        }
        return kExitOk;
    } catch (const std::exception& error) {
        std::cerr << "organ vitals: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
}

} // namespace organ::cli
