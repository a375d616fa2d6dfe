// Writes a model with the shape of Llama-3.2-1B (16 blocks, embedding 2048, FFN 8192,
// vocabulary 128 256) with heavy-tailed random weights in Q8_0 and in Q4_K, then reports
// the whole-model Z-measure time at the default sample and at --sample all, the peak
// memory, and the single-core dequantization throughput of every tensor type.
// Usage: bench_measure_1b [FOLDER] | --dequant-only   (needs about 2 GB of free disk there; the models are
// deleted afterwards unless ORGAN_BENCH_KEEP is set)
#include "anatomy/anatomy.h"
#include "bench_models.h"
#include "gguf/gguf_writer.h"
#include "measure/model_measure.h"
#include "proc_status.h"
#include "quant/dequant.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

using namespace organ;
using namespace organ::bench;

namespace {

double seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void measureRun(const GgufModel& model, const ModelAnatomy& anatomy, std::uint64_t sample, unsigned threads) {
    MeasureOptions options;
    options.params.sample = sample;
    options.threads = threads;
    ModelMeasurement m;
    resetPeakResident();
    const long base = processStatusKiB("VmRSS:");
    const auto start = std::chrono::steady_clock::now();
    const JobResult result = measureModel(model, anatomy, options, m);
    const double elapsed = seconds(start);
    std::printf("  measure %-13s %u thread%s  %7.2f s  θ mean %6.2f°  peak RSS %6.1f MiB (+%.1f)%s\n",
                sample == kSampleAll ? "--sample all" : "default", threads, threads == 1 ? " " : "s", elapsed,
                m.model.thetaMean, processStatusKiB("VmHWM:") / 1024.0,
                (processStatusKiB("VmHWM:") - base) / 1024.0, result.isOk() ? "" : result.message.c_str());
}

void dequantThroughput() {
    std::printf("\nsingle-core dequantization throughput (GB/s of source data):\n");
    constexpr std::size_t kBytes = 64u << 20;
    for (const auto& traits : allTensorTypes()) {
        const std::size_t blocks = kBytes / traits.bytesPerBlock;
        std::vector<std::byte> source(blocks * traits.bytesPerBlock);
        Noise noise(7);
        // Bytes in [4, 59]: every half or float scale read from them is a normal number of
        // a plausible size (subnormal scales would time the CPU's slow path, not ours).
        for (std::size_t i = 0; i < source.size(); ++i) {
            source[i] = std::byte(
                static_cast<std::uint8_t>(4 + static_cast<int>(std::abs(noise.next()) * 20.0f) % 56));
        }
        std::vector<float> out(1u << 20);
        const std::size_t blocksPerRun = out.size() / traits.blockSize;
        const auto start = std::chrono::steady_clock::now();
        for (std::size_t b = 0; b + blocksPerRun <= blocks; b += blocksPerRun) {
            dequantizeBlocks(traits.type, source.data() + b * traits.bytesPerBlock, blocksPerRun, out.data());
        }
        const double elapsed = seconds(start);
        std::printf("  %-8s %6.2f GB/s  (%6.2f G values/s)\n", traits.name.data(),
                    source.size() / elapsed / 1e9, blocks * traits.blockSize / elapsed / 1e9);
    }
}

} // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--dequant-only") {
        dequantThroughput();
        return 0;
    }
    const std::string folder = argc > 1 ? argv[1] : std::filesystem::temp_directory_path().string();
    std::printf("cores: %u\n", defaultThreadCount());
    for (TensorType type : {TensorType::Q8_0, TensorType::Q4_K}) {
        const std::string path = folder + "/bench-1b-" + std::string(tensorTypeName(type)) + ".gguf";
        auto start = std::chrono::steady_clock::now();
        const JobResult written = writeGguf(path, llama1bShape(type));
        if (!written.isOk()) {
            std::fprintf(stderr, "%s\n", written.message.c_str());
            return 1;
        }
        std::printf("%s: %.2f GB written in %.1f s\n", std::filesystem::path(path).filename().c_str(),
                    std::filesystem::file_size(path) / 1e9, seconds(start));
        {
            const auto model = GgufModel::open(path);
            const ModelAnatomy anatomy = analyzeAnatomy(*model);
            measureRun(*model, anatomy, kDefaultSample, defaultThreadCount());
            measureRun(*model, anatomy, kDefaultSample, 1);
            measureRun(*model, anatomy, kSampleAll, defaultThreadCount());
        }
        if (std::getenv("ORGAN_BENCH_KEEP") == nullptr) {
            std::filesystem::remove(path);
        }
    }
    dequantThroughput();
    return 0;
}
