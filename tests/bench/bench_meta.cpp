// organ meta's workflow on a generated model of a few GB (the shape of Llama-3.2-1B in F16): one
// key set, the tensors copied by the kernel (copy_file_range), then fsynced, re-read and verified
// against the source. Reports each stage, GB/s, and cp + sync of the same bytes on the same disk.
// Usage: bench_meta [FOLDER] [BLOCKS, default 16: about 3 GB]   (needs twice that much disk)
#include "bench_models.h"
#include "graft/assembly.h"
#include "proc_status.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

using namespace organ;

namespace {

double seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

} // namespace

int main(int argc, char** argv) {
    const std::string folder = argc > 1 ? argv[1] : std::filesystem::temp_directory_path().string();
    const auto blocks = static_cast<std::uint32_t>(argc > 2 ? std::stoul(argv[2]) : 16);
    const std::string source = folder + "/bench-meta-source.gguf";
    const std::string edited = folder + "/bench-meta-edited.gguf";
    const std::string copy = folder + "/bench-meta-copy.gguf";
    if (!writeGguf(source, bench::llama1bShape(TensorType::F16, blocks)).isOk()) {
        std::fprintf(stderr, "cannot write the model in %s\n", folder.c_str());
        return 1;
    }
    const auto bytes = std::filesystem::file_size(source);
    std::printf("model: %.2f GB, %u blocks in F16\n", bytes / 1e9, blocks);

    GraftPlan plan;
    plan.base = source;
    GraftOperation o;
    o.kind = GraftOperation::Kind::SetMetadata;
    o.key = "general.name";
    o.value = MetaValue::fromString("bench-meta, renamed");
    plan.operations.push_back(o);

    resetPeakResident();
    const long before = processStatusKiB("VmRSS:");
    auto start = std::chrono::steady_clock::now();
    {
        const GraftModels models = GraftModels::open(plan);
        std::string stage;
        auto stageStart = std::chrono::steady_clock::now();
        const GraftOutcome outcome = graftChimera(plan, models, edited, {}, {}, [&](const Progress& p) {
            if (p.stage != stage) {
                if (!stage.empty()) {
                    std::printf("  %-10s %.2f s\n", stage.c_str(), seconds(stageStart));
                }
                stage = std::string(p.stage);
                stageStart = std::chrono::steady_clock::now();
            }
        });
        if (!outcome.written.isOk()) {
            std::fprintf(stderr, "%s\n", outcome.written.message.c_str());
            return 1;
        }
    }
    const double meta = seconds(start);
    const long peak = processStatusKiB("VmHWM:");

    start = std::chrono::steady_clock::now();
    const std::string command = "cp '" + source + "' '" + copy + "' && sync '" + copy + "'";
    if (std::system(command.c_str()) != 0) {
        return 1;
    }
    const double cp = seconds(start);
    std::printf("organ meta, one key (check, copy, fsync, verify, validate): %.2f s, %.2f GB/s\n", meta,
                bytes / meta / 1e9);
    std::printf("cp + sync of the same bytes:                                %.2f s, %.2f GB/s\n", cp,
                bytes / cp / 1e9);
    std::printf("peak RSS %.1f MiB (%.1f MiB above the start)\n", peak / 1024.0, (peak - before) / 1024.0);
    for (const auto& f : {source, edited, copy}) {
        std::filesystem::remove(f);
    }
    return 0;
}
