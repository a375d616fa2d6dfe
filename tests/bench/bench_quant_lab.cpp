// The quantization lab's sensitivity on the shape of Llama-3.2-1B (16 blocks, embedding 2048, FFN
// 8192, vocabulary 128 256; F16, made-up vocabulary): the model's own run, then each group quantized
// to one type and run from its first changed layer on — seconds per group and per forward pass,
// beside the seconds of a whole run, with the machine's load average.
// The text is N made-up words ("t300 t7919 …"), which the model's SentencePiece vocabulary splits
// into several tokens each: 128 words are 1 140 tokens, run as one piece.
// Usage: bench_quant_lab [FOLDER] [--words 128] [--type Q4_K] [--groups layer] [--threads 2]
// (about 2.5 GB of free disk in FOLDER for the model; deleted afterwards unless ORGAN_BENCH_KEEP
// is set, and a kept one is used again.)
#include "bench_models.h"
#include "proc_status.h"
#include "vitals/quant_sensitivity.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace organ;
using namespace organ::bench;

int main(int argc, char** argv) {
    std::filesystem::path folder = std::filesystem::temp_directory_path();
    std::size_t words = 128;
    SensitivityRequest request;
    request.types = {TensorType::Q4_K};
    request.grouping = QuantGrouping::Layer;
    request.threads = 2;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const std::string value = i + 1 < argc ? argv[i + 1] : "";
        if (arg == "--words") {
            words = std::stoul(value);
            ++i;
        } else if (arg == "--type" && tensorTypeFromName(value)) {
            request.types = {*tensorTypeFromName(value)};
            ++i;
        } else if (arg == "--groups" && quantGroupingFromName(value)) {
            request.grouping = *quantGroupingFromName(value);
            ++i;
        } else if (arg == "--threads") {
            request.threads = static_cast<unsigned>(std::stoul(value));
            ++i;
        } else if (!arg.starts_with("--")) {
            folder = arg;
        } else {
            std::fprintf(stderr, "usage: bench_quant_lab [FOLDER] [--words 128] [--type Q4_K] "
                                 "[--groups tensor|layer|role] [--threads 2]\n");
            return 2;
        }
    }
    for (std::size_t t = 0; t < words; ++t) {
        request.text += (t == 0 ? "t" : " t") + std::to_string(300 + (t * 7919) % 100000);
    }
    const std::string path = (folder / "bench-quant-lab-1b-f16.gguf").string();
    const bool keep = std::getenv("ORGAN_BENCH_KEEP") != nullptr;
    if (!(keep && std::filesystem::exists(path))) {
        std::printf("writing the 1B shape in F16 to %s …\n", path.c_str());
        if (!writeGguf(path, llama1bShape(TensorType::F16)).isOk()) {
            std::fprintf(stderr, "could not write %s\n", path.c_str());
            return 1;
        }
    }
    const auto start = std::chrono::steady_clock::now();
    const auto report = measureSensitivity(GgufModel::open(path), nullptr, {}, request);
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!keep) {
        std::filesystem::remove(path);
    }
    if (!report) {
        return 1;
    }
    std::printf("%zu tokens, %s groups, %s, %u threads, load average %.1f at the end\n", report->tokens,
                std::string(quantGroupingName(report->grouping)).c_str(),
                std::string(tensorTypeName(request.types.front())).c_str(), request.threads, loadAverage());
    std::printf("the model's own runs (perplexity, then logits and hidden states): %.1f s\n",
                report->referenceSeconds);
    double groups = 0;
    for (const GroupSensitivity& g : report->groups) {
        std::printf("  %-22s %8.1f s  KL %.6f\n", g.name.c_str(), g.seconds,
                    g.types.empty() ? 0.0 : g.types.front().klMean);
        groups += g.seconds;
    }
    std::printf("%zu groups in %.1f s (%.1f s a group); %.1f s in all\n", report->groups.size(), groups,
                groups / double(std::max<std::size_t>(1, report->groups.size())), total);
    return 0;
}
