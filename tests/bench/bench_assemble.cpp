// Assembles a chimera from two generated models of about 1 GB each (half the layers'
// organs from the donor) and reports its throughput against `cp` of the same bytes on the
// same disk, and peak memory. Usage: bench_assemble [FOLDER]   (needs about 4 GB of disk)
#include "gguf/gguf_writer.h"
#include "graft/assembly.h"
#include "proc_status.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

using namespace organ;

namespace {

double seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// 24 blocks of F16 matrices, about 1 GB; `seed` changes the bytes, not the layout.
GgufWriteSpec model(std::uint8_t seed) {
    GgufWriteSpec spec;
    spec.set("general.architecture", MetaValue::fromString("llama"));
    spec.set("llama.block_count", MetaValue::fromU32(24));
    spec.set("llama.embedding_length", MetaValue::fromU32(2048));
    spec.set("llama.feed_forward_length", MetaValue::fromU32(5632));
    auto tensor = [&](const std::string& name, std::uint64_t cols, std::uint64_t rows) {
        TensorToWrite t;
        t.name = name;
        t.type = TensorType::F16;
        t.nDims = 2;
        t.ne = {cols, rows, 1, 1};
        t.source.generate = [seed](std::uint64_t offset, std::span<std::byte> out) {
            for (std::size_t i = 0; i < out.size(); i += 2) {
                const auto h =
                    static_cast<std::uint16_t>(0x2000 + ((offset + i) * 2654435761u + seed) % 0x1000);
                std::memcpy(out.data() + i, &h, 2);
            }
        };
        spec.tensors.push_back(std::move(t));
    };
    for (int b = 0; b < 24; ++b) {
        const std::string blk = "blk." + std::to_string(b) + ".";
        tensor(blk + "attn_q.weight", 2048, 2048);
        tensor(blk + "ffn_up.weight", 2048, 5632);
        tensor(blk + "ffn_down.weight", 5632, 2048);
    }
    return spec;
}

} // namespace

int main(int argc, char** argv) {
    const std::string folder = argc > 1 ? argv[1] : std::filesystem::temp_directory_path().string();
    const std::string base = folder + "/bench-base.gguf";
    const std::string donor = folder + "/bench-donor.gguf";
    const std::string chimera = folder + "/bench-chimera.gguf";
    const std::string copy = folder + "/bench-copy.gguf";
    if (!writeGguf(base, model(1)).isOk() || !writeGguf(donor, model(2)).isOk()) {
        std::fprintf(stderr, "cannot write the models in %s\n", folder.c_str());
        return 1;
    }
    const auto bytes = std::filesystem::file_size(base);
    std::printf("models: 2 × %.2f GB\n", bytes / 1e9);

    GraftPlan plan;
    plan.base = base;
    plan.donors.emplace_back("donor", donor);
    GraftOperation o;
    o.kind = GraftOperation::Kind::Replace;
    o.donor = "donor";
    o.select.system = System::Organ;
    o.select.firstLayer = 0;
    o.select.lastLayer = 11;
    plan.operations.push_back(o);

    resetPeakResident();
    const long before = processStatusKiB("VmRSS:");
    auto start = std::chrono::steady_clock::now();
    {
        const GraftModels models = GraftModels::open(plan);
        const CompatibilityReport report = checkGraft(plan, models);
        std::string stage;
        auto stageStart = std::chrono::steady_clock::now();
        const JobResult result = assembleChimera(plan, models, report, chimera, {}, [&](const Progress& p) {
            if (p.stage != stage) {
                if (!stage.empty()) {
                    std::printf("  %-10s %.2f s\n", stage.c_str(), seconds(stageStart));
                }
                stage = std::string(p.stage);
                stageStart = std::chrono::steady_clock::now();
            }
        });
        if (!result.isOk()) {
            std::fprintf(stderr, "%s\n", result.message.c_str());
            return 1;
        }
    }
    const double assembly = seconds(start);
    const long peak = processStatusKiB("VmHWM:");

    start = std::chrono::steady_clock::now();
    const std::string command = "cp '" + base + "' '" + copy + "' && sync '" + copy + "'";
    if (std::system(command.c_str()) != 0) {
        return 1;
    }
    const double cp = seconds(start);
    std::printf("assembly (write, fsync, re-read and verify): %.2f s, %.0f MB/s\n", assembly,
                bytes / assembly / 1e6);
    std::printf("cp + sync of the same bytes:                %.2f s, %.0f MB/s\n", cp, bytes / cp / 1e6);
    std::printf("assembly / cp throughput: %.0f %%; peak RSS %.1f MiB (%.1f MiB above the start)\n",
                100.0 * cp / assembly, peak / 1024.0, (peak - before) / 1024.0);
    for (const auto& f : {base, donor, chimera, copy}) {
        std::filesystem::remove(f);
    }
    return 0;
}
