// Writes a model with the shape of Llama-3.2-1B (16 blocks, embedding 2048, FFN 8192,
// vocabulary 128 256) with heavy-tailed random weights in Q8_0 and in Q4_K, then reports
// the whole-model Z-measure time at the default sample and at --sample all, and the peak
// memory (bench_dequant has the dequantization throughput of every type).
// Usage: bench_measure_1b [FOLDER]   (needs about 2 GB of free disk there; the models are
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

} // namespace

int main(int argc, char** argv) {
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
    return 0;
}
