// Vital signs' forward pass on a model with the shape of Llama-3.2-1B (16 blocks, embedding
// 2048, FFN 8192, vocabulary 128 256) in Q8_0: tokens per second of the perplexity pass (128
// tokens in one batch) and of greedy generation with the key/value cache, and peak memory.
// The matrix products run on one thread per core (slices of each weight's rows); Q8_0 weights
// meet 8-bit activations with the fastest integer kernel the CPU has (quant/quant_dot.h).
// The model carries a made-up vocabulary so that llama.cpp runs the same file: keep it with
// ORGAN_BENCH_KEEP=1 and time llama.cpp on it (docs/vitals-json.md says how it compared).
// Usage: bench_vitals [FOLDER] [GENERATED]   (about 1.3 GB of free disk in FOLDER; the model is
// deleted afterwards unless ORGAN_BENCH_KEEP is set)
#include "bench_models.h"
#include "proc_status.h"
#include "support/instruction_set.h"
#include "vitals/forward.h"
#include "vitals/vital_signs.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

using namespace organ;
using namespace organ::bench;

namespace {

double seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

} // namespace

int main(int argc, char** argv) {
    const std::filesystem::path folder = argc > 1 ? argv[1] : std::filesystem::temp_directory_path();
    const std::size_t generated = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 16;
    const std::string path = (folder / "bench-vitals-1b-q8_0.gguf").string();
    std::printf("writing %s …\n", path.c_str());
    const JobResult written = writeGguf(path, llama1bShape(TensorType::Q8_0));
    if (!written.isOk()) {
        std::fprintf(stderr, "bench_vitals: %s\n", written.message.c_str());
        return 1;
    }
    {
        const Transformer transformer(GgufModel::open(path));
        std::vector<std::int32_t> tokens(128);
        Noise noise(3);
        for (auto& t : tokens) {
            t = static_cast<std::int32_t>(static_cast<std::uint32_t>(std::abs(noise.next()) * 1e6f) %
                                          transformer.shape().vocabulary);
        }
        resetPeakResident();
        const long base = processStatusKiB("VmRSS:");
        auto start = std::chrono::steady_clock::now();
        const Eigen::MatrixXf logits = transformer.logits(tokens);
        const double pass = seconds(start);
        const double perplexity = perplexityOf(logits, tokens).perplexity;
        std::printf("perplexity pass: %zu tokens in %.2f s = %.1f tokens/s (perplexity %.0f), %u threads, %s "
                    "kernel\n",
                    tokens.size(), pass, tokens.size() / pass, perplexity, transformer.threads(),
                    std::string(instructionSetName(activeInstructionSet())).c_str());
        std::printf("  peak RSS %.1f MiB (+%.1f over the open model)\n", processStatusKiB("VmHWM:") / 1024.0,
                    (processStatusKiB("VmHWM:") - base) / 1024.0);
        const std::vector<std::int32_t> prompt(tokens.begin(), tokens.begin() + 8);
        TransformerSession session(transformer);
        session.run(prompt);
        start = std::chrono::steady_clock::now();
        std::int32_t next = 0;
        for (std::size_t i = 0; i < generated; ++i) {
            const Eigen::MatrixXf step = session.run({next});
            Eigen::Index best = 0;
            step.col(0).maxCoeff(&best);
            next = static_cast<std::int32_t>(best);
        }
        const double generation = seconds(start);
        std::printf("generation: %zu tokens in %.2f s = %.2f tokens/s, %u threads\n", generated, generation,
                    generated / generation, transformer.threads());
        std::printf("  peak RSS %.1f MiB\n", processStatusKiB("VmHWM:") / 1024.0);
    }
    if (std::getenv("ORGAN_BENCH_KEEP") == nullptr) {
        std::filesystem::remove(path);
    }
    return 0;
}
