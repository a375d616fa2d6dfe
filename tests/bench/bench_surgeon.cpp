// The auto-surgeon's speed: candidates scored per second by a search on a model, and how many of
// their layers the reuse of the first unchanged layers spared. Prune searches (greedy, or a beam)
// on any model; with --merge or --organs DONOR…, those searches. The machine's load average is
// printed beside the numbers.
// Usage: bench_surgeon MODEL [--text F] [--chunk N] [--prune N] [--beam W] [--merge D | --organs D]…
//                      [--budget E] [--threads T]
// e.g. bench_surgeon ../shared/models/family/family-base-f16.gguf
//          --text ../shared/models/family/texts/general.txt --chunk 128 --prune 2
#include "gguf/gguf_model.h"
#include "proc_status.h"
#include "support/safe_files.h"
#include "surgeon/surgeon.h"

#include <cstdio>
#include <fstream>
#include <string>

using namespace organ;

int main(int argc, char** argv) {
    SurgeonModels models;
    SurgeonRequest request;
    request.threads = 2;
    std::string model;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const std::string value = i + 1 < argc ? argv[i + 1] : "";
        if (!arg.starts_with("--") && model.empty()) {
            model = arg;
            continue;
        }
        if (value.empty()) {
            std::fprintf(stderr, "usage: bench_surgeon MODEL [--text F] [--chunk N] [--prune N] [--beam W] "
                                 "[--merge D | --organs D]… [--budget E] [--threads T]\n");
            return 2;
        }
        ++i;
        if (arg == "--text") {
            request.text = readSmallFile(value, 4u << 20);
        } else if (arg == "--chunk") {
            request.chunk = std::stoul(value);
        } else if (arg == "--prune") {
            request.prune = static_cast<std::uint32_t>(std::stoul(value));
        } else if (arg == "--beam") {
            request.beam = std::stoul(value);
        } else if (arg == "--merge" || arg == "--organs") {
            request.goal = arg == "--merge" ? SurgeonGoal::Merge : SurgeonGoal::Organs;
            models.donors.emplace_back(value, GgufModel::open(value));
        } else if (arg == "--budget") {
            request.maxEvaluations = std::stoull(value);
        } else if (arg == "--threads") {
            request.threads = static_cast<unsigned>(std::stoul(value));
        } else {
            std::fprintf(stderr, "bench_surgeon: unknown option %s\n", arg.c_str());
            return 2;
        }
    }
    if (model.empty()) {
        std::fprintf(stderr, "bench_surgeon: no model\n");
        return 2;
    }
    models.recipient = {model, GgufModel::open(model)};
    const double loadBefore = loadAverage();
    const SurgeonRecord record = runSurgeon(models, request);
    std::uint64_t whole = 0; // the blocks the candidates would have run from the tokens
    for (const SurgeonCandidate& c : record.candidates) {
        whole += c.score.layers;
    }
    std::printf("%s: %s on %zu tokens, %u threads\n", model.c_str(),
                std::string(surgeonGoalName(record.goal)).c_str(), record.searchTokens, request.threads);
    std::printf("  candidates run      %llu (%llu from the cache)\n", (unsigned long long)record.runs,
                (unsigned long long)record.cacheHits);
    std::printf("  seconds             %.2f\n", record.seconds);
    std::printf("  evaluations/s       %.2f\n", record.evaluationsPerSecond());
    std::printf("  blocks run          %llu of the candidates' %llu\n", (unsigned long long)record.layersRun,
                (unsigned long long)whole);
    std::printf("  load average        %.2f before, %.2f after\n", loadBefore, loadAverage());
    return 0;
}
