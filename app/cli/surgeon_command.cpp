// organ surgeon: searches prune, merge and organ plans against the user's text (docs/auto-surgeon.md)
// and writes the best as a graft plan.
#include "cli.h"
#include "merge/merge_method.h"
#include "organs/organ_directory.h"
#include "plan_run.h"
#include "support/errors.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "surgeon/surgeon.h"
#include "vitals/quant_pareto.h"

#include <charconv>
#include <filesystem>
#include <iostream>

namespace organ::cli {
namespace {

// A whole number of `name` from `low` to `high`, or `fallback` without it. Throws UsageError.
std::uint64_t boundedOption(const Arguments& parsed, const char* name, std::uint64_t fallback,
                            std::uint64_t low, std::uint64_t high) {
    const std::uint64_t value = parsed.unsignedOption(name, fallback);
    if (value < low || value > high) {
        throw UsageError{std::string(name) + " is " + std::to_string(low) + " to " + std::to_string(high)};
    }
    return value;
}

// --budget E (candidates) and/or --budget Ns (seconds).
void budgetFrom(const Arguments& parsed, SurgeonRequest& request) {
    for (const std::string& text : parsed.all("--budget")) {
        const bool seconds = text.ends_with('s');
        const std::string_view digits(text.data(), text.size() - (seconds ? 1 : 0));
        std::uint64_t value = 0;
        const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (error != std::errc() || end != digits.data() + digits.size() || value == 0) {
            throw UsageError{"--budget is a number of candidates (200) or of seconds (60s), not '" + text +
                             "'"};
        }
        if (seconds) {
            request.maxSeconds = double(value);
        } else {
            request.maxEvaluations = value;
        }
    }
}

// The goal and its donors: --prune N, or --merge/--organs DONOR with more donors after the recipient.
SurgeonGoal goalFrom(const Arguments& parsed, SurgeonRequest& request, std::vector<std::string>& donors) {
    const bool prune = parsed.option("--prune").has_value();
    const auto merge = parsed.all("--merge");
    const auto organs = parsed.all("--organs");
    if (int(prune) + int(!merge.empty()) + int(!organs.empty()) != 1) {
        throw UsageError{"surgeon needs one goal: --prune N, --merge DONOR… or --organs DONOR…"};
    }
    const auto& positional = parsed.positional();
    if (positional.empty() || (prune && positional.size() != 1)) {
        throw UsageError{
            "surgeon needs one recipient model (and, with --merge or --organs, donors after it)"};
    }
    if (prune) {
        const std::uint64_t n = parsed.unsignedOption("--prune", 0);
        request.prune = static_cast<std::uint32_t>(std::min<std::uint64_t>(n, kMaxChimeraLayers));
        return SurgeonGoal::Prune;
    }
    donors = merge.empty() ? organs : merge;
    donors.insert(donors.end(), positional.begin() + 1, positional.end());
    return merge.empty() ? SurgeonGoal::Organs : SurgeonGoal::Merge;
}

SurgeonRequest requestFrom(const Arguments& parsed, std::vector<std::string>& donors) {
    SurgeonRequest request;
    request.goal = goalFrom(parsed, request, donors);
    request.chunk = chunkFrom(parsed);
    request.beam = boundedOption(parsed, "--beam", 1, 1, kMaxSurgeonBeam);
    request.controlPoints = static_cast<std::uint32_t>(
        boundedOption(parsed, "--points", request.controlPoints, 1, kMaxSurgeonControlPoints));
    request.offspring = boundedOption(parsed, "--offspring", request.offspring, 1, kMaxSurgeonOffspring);
    request.generations = static_cast<std::uint32_t>(
        boundedOption(parsed, "--generations", request.generations, 0, kMaxSurgeonGenerations));
    request.sweeps =
        static_cast<std::uint32_t>(boundedOption(parsed, "--sweeps", request.sweeps, 1, kMaxSurgeonSweeps));
    request.seed = parsed.unsignedOption("--seed", 0);
    request.threads =
        static_cast<unsigned>(std::min<std::uint64_t>(parsed.unsignedOption("--threads", 0), 1024));
    if (const auto method = parsed.option("--method")) {
        const auto m = mergeMethodFromName(*method);
        if (!m || (*m != MergeMethod::TaskArithmetic && *m != MergeMethod::Ties)) {
            throw UsageError{"--method is task_arithmetic or ties, not '" + *method + "'"};
        }
        request.method = *m;
    }
    budgetFrom(parsed, request);
    if (parsed.option("--max-bytes")) {
        request.constraints.maxBytes = parsed.unsignedOption("--max-bytes", 0);
    }
    if (parsed.option("--max-bpw")) {
        request.constraints.maxBitsPerWeight = parsed.numberOption("--max-bpw", 0);
    }
    if (parsed.option("--max-layers")) {
        request.constraints.maxLayers = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(parsed.unsignedOption("--max-layers", 0), kMaxChimeraLayers));
    }
    return request;
}

} // namespace

int runSurgeon(const std::vector<std::string>& args) {
    const Arguments parsed(
        args, {}, {"--prune",     "--merge", "--organs", "--text",      "--holdout",   "--chunk",
                   "--reference", "--beam",  "--method", "--points",    "--offspring", "--generations",
                   "--sweeps",    "--seed",  "--budget", "--max-bytes", "--max-bpw",   "--max-layers",
                   "--threads",   "-o",      "--output", "--json"});
    std::vector<std::string> donorPaths;
    SurgeonRequest request = requestFrom(parsed, donorPaths);
    const double holdout = parsed.numberOption("--holdout", 0);
    if (holdout < 0 || holdout >= 1) {
        throw UsageError{"--holdout is the share of the text held out, at least 0 and below 1"};
    }
    const auto output = parsed.option("-o", "--output");
    if (!output) {
        throw UsageError{"surgeon needs -o PLAN.json"};
    }
    if (std::filesystem::path(*output).extension() == ".gguf") {
        throw UsageError{"-o names the plan (PLAN.json); the chimera it plans is PLAN.gguf beside it"};
    }
    if (parsed.option("--json") == output) {
        throw UsageError{"-o and --json name the same file"};
    }
    const std::string recipientPath = parsed.positional().front();
    if (holdout > 0 && !parsed.option("--text")) {
        throw UsageError{"--holdout needs --text"};
    }
    std::vector<std::string> inputs{recipientPath};
    inputs.insert(inputs.end(), donorPaths.begin(), donorPaths.end());
    try {
        std::string text;
        if (const auto path = parsed.option("--text")) {
            text = readLabText(*path);
            inputs.push_back(*path);
        }
        std::tie(request.text, request.holdout) = splitHoldout(text, holdout);
        SurgeonModels models;
        models.recipient = {recipientPath, openModel(recipientPath)};
        for (const std::string& path : donorPaths) {
            models.donors.emplace_back(path, openModel(path));
        }
        if (const auto reference = parsed.option("--reference")) {
            models.reference.emplace(*reference, openModel(*reference));
            inputs.push_back(*reference);
        }
        checkOutputTarget(*output, inputs);
        const auto json = parsed.option("--json");
        if (json) {
            checkOutputTarget(*json, inputs);
        }
        // The chimera the plan writes: beside the plan, with its stem.
        request.output = std::filesystem::path(*output).replace_extension(".gguf").string();
        StopToken stop;
        SurgeonRecord record;
        {
            const StopOnInterrupt interrupt(stop);
            ProgressPrinter printer(fileLabel(recipientPath));
            record = organ::runSurgeon(models, request, printingTo(printer), &stop);
            printer.finish();
        }
        std::cout << surgeonText(record);
        if (json && !writeReport("surgeon", *json, dumpJson(surgeonToJson(record), 2) + "\n", inputs)) {
            return kExitInvalid;
        }
        if (!record.best) {
            std::cerr << "organ surgeon: no plan written: "
                      << (record.end == SurgeonRecord::End::Cancelled
                              ? "cancelled before a candidate met the goal"
                              : "no candidate met the goal and the constraints")
                      << "\n";
            return kExitInvalid;
        }
        saveGraftPlan(record.candidates[*record.best].plan, *output);
        if (record.end == SurgeonRecord::End::Cancelled) {
            std::cerr << "organ surgeon: cancelled: " << escapeText(fileLabel(*output))
                      << " is the best of the candidates scored\n";
        }
        return kExitOk;
    } catch (const UsageError&) {
        throw;
    } catch (const std::exception& error) {
        std::cerr << "organ surgeon: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
}

} // namespace organ::cli
