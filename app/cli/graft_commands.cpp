#include "anatomy/model_validation.h"
#include "cli.h"
#include "graft/assembly.h"
#include "organs/organ_directory.h"
#include "plan_run.h"
#include "support/errors.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <iostream>

namespace organ::cli {
namespace {

int printFindings(const std::vector<Finding>& findings, const std::string& label) {
    std::cout << findingsText(findings, label);
    return countFindings(findings).ok() ? kExitOk : kExitInvalid;
}

// The files a plan reads: never a place to write.
std::vector<std::string> inputsOf(const GraftPlan& plan) {
    std::vector<std::string> inputs{plan.base};
    for (const auto& donor : plan.donors) {
        inputs.push_back(donor.second);
    }
    return inputs;
}

} // namespace

void writeRefusedReport(const std::string& command, const std::string& json, const std::string& output,
                        const std::string& why, const std::vector<std::string>& inputs,
                        const std::function<void(nlohmann::json&)>& more) {
    if (json == output) {
        return; // refused with the run: the output's name is never a report's
    }
    GraftOutcome refused;
    refused.written = JobResult::failed(why);
    nlohmann::json document = graftOutcomeToJson(refused, output);
    if (more) {
        more(document);
    }
    writeReport(command.c_str(), json, dumpJson(document, 2) + "\n", inputs);
}

int runPlan(const GraftPlan& plan, const std::string& output, const std::string& command,
            const PlanRun& run) {
    std::vector<std::string> inputs = run.inputs;
    try {
        const std::vector<std::string> sources = inputsOf(plan);
        inputs.insert(inputs.end(), sources.begin(), sources.end());
        checkOutputTarget(output, inputs);
        if (run.json) {
            std::vector<std::string> taken = inputs;
            taken.push_back(output);
            checkOutputTarget(*run.json, taken);
        }
    } catch (const std::exception& error) {
        std::cerr << "organ " << command << ": " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
    std::optional<GraftModels> models;
    try {
        models = GraftModels::open(plan);
    } catch (const std::exception& error) {
        std::cerr << "organ " << command << ": " << escapeText(error.what()) << "\n";
        // --json F says why nothing was written, as when the check or the writer stops it.
        if (run.json) {
            writeRefusedReport(command, *run.json, output, error.what(), inputs, run.moreJson);
        }
        return kExitInvalid;
    }
    ProgressPrinter printer(fileLabel(output));
    bool checkFailed = false;
    std::optional<std::string> stoppedBefore; // why, when beforeWriting stopped the job
    StopToken stop;
    const StopOnInterrupt interrupt(stop);
    const GraftOutcome outcome = graftChimera(
        plan, *models, output, run.options,
        [&](const CompatibilityReport& report) {
            GraftPlan withOutput = plan;
            withOutput.output = output;
            std::cout << reportText(report, withOutput) << std::flush;
            checkFailed = std::any_of(report.findings.begin(), report.findings.end(), [&](const Finding& f) {
                return f.severity == Finding::Severity::Error &&
                       !(run.options.keepInvalid && f.fromValidation);
            });
            if (!checkFailed && run.beforeWriting) {
                stoppedBefore = run.beforeWriting(report, *models);
                if (stoppedBefore) {
                    std::cerr << "organ " << command << ": " << escapeText(*stoppedBefore) << "\n";
                    stop.requestStop();
                }
            }
        },
        printingTo(printer), &stop);
    printer.finish();
    const bool written = !checkFailed && !stoppedBefore && outcome.written.isOk();
    // The outcome to --json, whatever it is, after what was said on the terminal; its own failure
    // fails the command, the output kept when it was written.
    auto reported = [&](int status) {
        if (!run.json) {
            return status;
        }
        nlohmann::json document = graftOutcomeToJson(outcome, output);
        // What stopped the job here, before the writer: graftOutcomeToJson knows only the writer's.
        if (checkFailed) {
            document["error"] = "the plan has errors";
        } else if (stoppedBefore) {
            document["error"] = *stoppedBefore;
        }
        if (run.moreJson) {
            run.moreJson(document);
        }
        if (writeReport(command.c_str(), *run.json, dumpJson(document, 2) + "\n", inputs)) {
            return status;
        }
        if (written) {
            std::cerr << "organ " << command << ": " << escapeText(fileLabel(output))
                      << " was written; its report was not\n";
        }
        return kExitInvalid;
    };
    if (checkFailed || stoppedBefore) {
        std::cerr << "organ " << command << ": " << escapeText(fileLabel(output))
                  << (checkFailed ? " not written: the plan has errors\n" : " not written\n");
        return reported(kExitInvalid);
    }
    for (const auto& warning : outcome.written.warnings) {
        std::cerr << "organ " << command << ": warning: " << escapeText(warning) << "\n";
    }
    if (outcome.written.status == JobResult::Status::Cancelled) {
        std::cerr << "organ " << command << ": cancelled; nothing written\n";
        return reported(kExitInvalid);
    }
    if (!outcome.written.isOk()) {
        std::cerr << "organ " << command << ": " << escapeText(outcome.written.message) << "\n";
        return reported(kExitInvalid);
    }
    std::cout << "wrote " << escapeText(output)
              << (isOrganDirectoryTarget(output) ? " (an organ directory)" : "") << "\n";
    if (!outcome.purified.empty() && outcome.report.layout.purify) {
        std::cout << "purified " << outcome.purified.size() << " tensors ("
                  << purifyMethodName(outcome.report.layout.purify->method) << ", "
                  << purifyParamsText(*outcome.report.layout.purify) << "):\n";
        printPurified(outcome.purified, *outcome.report.layout.purify);
    }
    const int status = printFindings(outcome.validation, "validation of " + fileLabel(output));
    if (status != kExitOk) {
        std::cerr << "organ " << command << ": " << escapeText(fileLabel(output))
                  << " is invalid (llama.cpp will not load it) and was kept because of --keep-invalid\n";
    }
    return reported(status);
}

TensorSelector selectorFrom(const Arguments& args) {
    TensorSelector s;
    if (const auto layers = args.option("--layers")) {
        std::uint32_t first = 0;
        std::uint32_t last = 0;
        if (!parseLayerRange(*layers, first, last)) {
            throw UsageError{"--layers needs a range such as 5-20, not '" + *layers + "'"};
        }
        s.firstLayer = first;
        s.lastLayer = last;
    }
    if (const auto system = args.option("--system")) {
        s.system = systemFromName(*system);
        if (!s.system) {
            throw UsageError{"--system needs embed, skeleton, organ, norm, adapter or other"};
        }
    }
    s.roles = args.all("--role");
    s.names = args.all("--tensor");
    return s;
}

int runGraft(const std::vector<std::string>& args) {
    const Arguments parsed(args, {"--keep-invalid"},
                           {"--base", "--donor", "--layers", "--system", "--role", "--tensor", "--map", "-o",
                            "--output", "--save-plan", "--purify", "--keep", "--threshold", "--attenuation",
                            "--quantize", "--imatrix", "--json"});
    const auto base = parsed.option("--base");
    const auto donor = parsed.option("--donor");
    const auto output = parsed.option("-o", "--output");
    if (!base || !donor || !output || !parsed.positional().empty()) {
        throw UsageError{"graft needs --base A.gguf|DIR --donor B.gguf|DIR -o OUT.gguf|DIR and a selection"};
    }
    GraftPlan plan;
    plan.base = *base;
    plan.donors.emplace_back("donor", *donor);
    plan.output = *output;
    const TensorSelector selector = selectorFrom(parsed);
    const auto purify = purifyParamsFrom(parsed, "--purify");
    // With --purify, what each graft operation brings is purified in the same assembly.
    auto purifyToo = [&](const TensorSelector& select) {
        if (purify) {
            GraftOperation p;
            p.kind = GraftOperation::Kind::Purify;
            p.select = select;
            p.purify = *purify;
            plan.operations.push_back(std::move(p));
        }
    };
    const auto maps = parsed.all("--map");
    if (!maps.empty()) {
        if (selector.firstLayer) {
            throw UsageError{"--map and --layers do not go together: --map names the layers"};
        }
        for (const auto& map : maps) {
            const auto colon = map.find(':');
            GraftOperation o;
            o.kind = GraftOperation::Kind::MapLayer;
            o.donor = "donor";
            o.select = selector;
            if (colon == std::string::npos ||
                !parseLayerRange(map.substr(0, colon), o.fromLayer, o.fromLayer) ||
                !parseLayerRange(map.substr(colon + 1), o.toLayer, o.toLayer)) {
                throw UsageError{"--map needs DONOR_LAYER:RECIPIENT_LAYER, such as 3:7"};
            }
            plan.operations.push_back(o);
            TensorSelector grafted = o.select; // the mapped tensors of the recipient's layer
            grafted.firstLayer = o.toLayer;
            grafted.lastLayer = o.toLayer;
            purifyToo(grafted);
        }
    } else {
        if (selector.isEmpty()) {
            throw UsageError{"say what to graft: --layers, --system, --role, --tensor or --map"};
        }
        GraftOperation o;
        o.kind = GraftOperation::Kind::Replace;
        o.donor = "donor";
        o.select = selector;
        plan.operations.push_back(std::move(o));
        purifyToo(selector);
    }
    // With --quantize, the chimera is quantized as organ quantize would quantize it.
    if (const auto type = parsed.option("--quantize")) {
        GraftOperation q;
        q.kind = GraftOperation::Kind::Quantize;
        const auto fileType = quantFileTypeFromName(*type);
        if (!fileType) {
            throw UsageError{"--quantize needs a file type of organ quantize (Q4_K_M, Q6_K, IQ4_XS…), not '" +
                             *type + "'"};
        }
        q.quantize.fileType = *fileType;
        q.quantize.imatrix = parsed.option("--imatrix").value_or("");
        plan.operations.push_back(std::move(q));
    } else if (parsed.option("--imatrix")) {
        throw UsageError{"--imatrix goes with --quantize"};
    }
    // The plan is saved only once both targets are known to be safe to write: neither is one
    // of the models, a special file, or the other target.
    if (const auto save = parsed.option("--save-plan")) {
        try {
            std::error_code ec;
            if (std::filesystem::weakly_canonical(*save, ec) ==
                std::filesystem::weakly_canonical(*output, ec)) {
                throw UsageError{"--save-plan and -o name the same file: " + escapeText(*save)};
            }
            checkOutputTarget(*output, inputsOf(plan));
            saveGraftPlan(plan, *save);
        } catch (const std::exception& error) {
            std::cerr << "organ graft: " << escapeText(error.what()) << "\n";
            return kExitInvalid;
        }
        std::cout << "plan saved to " << escapeText(*save) << "\n";
    }
    PlanRun run;
    run.options.keepInvalid = parsed.flag("--keep-invalid");
    run.json = parsed.option("--json");
    return runPlan(plan, *output, "graft", run);
}

int runPlanCommand(const std::vector<std::string>& args) {
    if (args.empty() || args.front() != "check") {
        throw UsageError{"plan has one subcommand: organ plan check PLAN.json"};
    }
    const Arguments parsed(std::vector<std::string>(args.begin() + 1, args.end()), {"--json"}, {});
    if (parsed.positional().size() != 1) {
        throw UsageError{"plan check needs one plan file"};
    }
    try {
        const GraftPlan plan = loadGraftPlan(parsed.positional().front());
        const GraftModels models = GraftModels::open(plan);
        CompatibilityReport report = checkGraft(plan, models);
        // What organ assemble --plan would refuse besides the models (which checkGraft compares
        // with the output): the plan itself as its output, a folder or special file there.
        if (!plan.output.empty()) {
            try {
                checkOutputTarget(plan.output, {parsed.positional().front()});
            } catch (const IoError& error) {
                report.findings.push_back({Finding::Severity::Error, error.what(), {}, -1, false});
            }
        }
        if (parsed.flag("--json")) {
            nlohmann::json document = findingsToJson(report.findings);
            document["plan"] = parsed.positional().front();
            std::cout << dumpJson(document, 2) << "\n";
        } else {
            std::cout << reportText(report, plan);
        }
        return report.hasErrors() ? kExitInvalid : kExitOk;
    } catch (const std::exception& error) {
        std::cerr << "organ plan check: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
}

int runAssemble(const std::vector<std::string>& args) {
    const Arguments parsed(args, {"--keep-invalid"}, {"--plan", "--organs", "-o", "--output", "--json"});
    const auto planPath = parsed.option("--plan");
    const auto organs = parsed.option("--organs");
    const auto output = parsed.option("-o", "--output");
    if (organs) {
        if (planPath || !parsed.positional().empty() || !output) {
            throw UsageError{"assemble --organs DIR needs -o OUT.gguf (and no plan)"};
        }
        return runAssembleOrgans(*organs, *output, parsed.flag("--keep-invalid"));
    }
    if (!planPath || !parsed.positional().empty()) {
        throw UsageError{"assemble needs --plan PLAN.json [-o OUT.gguf], or --organs DIR -o OUT.gguf"};
    }
    GraftPlan plan;
    try {
        plan = loadGraftPlan(*planPath);
    } catch (const std::exception& error) {
        std::cerr << "organ assemble: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
    const std::string target = output ? *output : plan.output;
    if (target.empty()) {
        throw UsageError{"the plan names no output: give -o OUT.gguf"};
    }
    PlanRun run;
    run.options.keepInvalid = parsed.flag("--keep-invalid");
    run.json = parsed.option("--json");
    run.inputs = {*planPath};
    return runPlan(plan, target, "assemble", run);
}

int runValidate(const std::vector<std::string>& args) {
    const Arguments parsed(args, {"--json"}, {});
    if (parsed.positional().empty()) {
        throw UsageError{"validate needs at least one GGUF file or organ directory"};
    }
    const bool json = parsed.flag("--json");
    return forEachModel("validate", parsed.positional(),
                        [&](const std::string& path, const GgufModel& model, nlohmann::json& documents) {
                            const std::vector<Finding> findings = validateModel(model);
                            if (!json) {
                                return printFindings(findings, fileLabel(path));
                            }
                            documents.push_back(validationToJson(path, findings));
                            return countFindings(findings).ok() ? kExitOk : kExitInvalid;
                        });
}

} // namespace organ::cli
