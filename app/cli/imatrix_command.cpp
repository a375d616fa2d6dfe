#include "cli.h"
#include "organs/organ_directory.h"
#include "plan_run.h"
#include "support/safe_files.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "vitals/imatrix_collector.h"

#include <iostream>

namespace organ::cli {
namespace {

// Calibration texts run to megabytes (llama.cpp's wiki.train.raw is 10 MiB).
constexpr std::uint64_t kMaxTextBytes = 64u << 20;

} // namespace

// organ imatrix MODEL --text F [--chunk N] -o OUT.gguf [--json F]: the importance matrix
// llama-imatrix -f F -c N computes, from the forward pass, in the GGUF format llama-quantize reads.
int runImatrix(const std::vector<std::string>& args) {
    const Arguments parsed(args, {}, {"--text", "--chunk", "-o", "--output", "--json"});
    const auto output = parsed.option("-o", "--output");
    const auto text = parsed.option("--text");
    if (parsed.positional().size() != 1 || !output || !text) {
        throw UsageError{"imatrix needs one model, --text FILE and -o OUT.gguf"};
    }
    ImatrixRequest request;
    request.chunk = parsed.unsignedOption("--chunk", request.chunk);
    if (request.chunk < kMinImatrixChunk || request.chunk > kMaxImatrixChunk) {
        throw UsageError{"--chunk is " + std::to_string(kMinImatrixChunk) + " to " +
                         std::to_string(kMaxImatrixChunk) + " tokens"};
    }
    const std::string& path = parsed.positional().front();
    const std::vector<std::string> inputs{path, *text};
    const auto json = parsed.option("--json");
    if (json && !reportTargetsOk("imatrix", parsed, {path, *text, *output})) {
        return kExitInvalid;
    }
    std::optional<ImatrixRun> run;
    JobResult written = JobResult::cancelled();
    try {
        checkOutputTarget(*output, inputs);
        request.text = readSmallFile(*text, kMaxTextBytes);
        request.dataset = *text;
        const ModelWeights model = ModelWeights::ofModel(openModel(path));
        StopToken stop;
        const StopOnInterrupt interrupt(stop);
        ProgressPrinter printer(model.label());
        run = collectImatrix(model, request, printingTo(printer), &stop);
        printer.finish();
        if (run) {
            written = writeImatrix(*output, run->matrix, &stop);
        }
    } catch (const std::exception& error) {
        std::cerr << "organ imatrix: " << escapeText(error.what()) << "\n";
        return kExitInvalid;
    }
    for (const std::string& warning : written.warnings) {
        std::cerr << "organ imatrix: warning: " << escapeText(warning) << "\n";
    }
    if (!run || written.status == JobResult::Status::Cancelled) {
        std::cerr << "organ imatrix: cancelled; nothing written\n";
        return kExitInvalid;
    }
    if (json && !writeReport("imatrix", *json,
                             dumpJson(imatrixRunToJson(*run, *output, written.isOk()), 2) + "\n", inputs)) {
        return kExitInvalid;
    }
    if (!written.isOk()) {
        std::cerr << "organ imatrix: " << escapeText(written.message) << "\n";
        return kExitInvalid;
    }
    std::cout << "importance matrix of " << run->matrix.entries.size() << " weights from "
              << run->matrix.chunkCount << " chunks of " << run->matrix.chunkSize << " tokens ("
              << run->tokens << " tokens in " << escapeText(fileLabel(*text)) << ") written to "
              << escapeText(fileLabel(*output))
              << "\nperplexity over the second half of each chunk: " << fixedDecimals(run->perplexity, 4)
              << "\n";
    return kExitOk;
}

} // namespace organ::cli
