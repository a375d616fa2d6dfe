// Streams a large GGUF through the writer twice — from a callback, then copied from the
// memory-mapped result — and reports throughput and peak memory, which should stay at a
// few MiB whatever the size. Usage: bench_write_stream [FOLDER] [GiB, default 4]
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "proc_status.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

using namespace organ;

namespace {

void report(const char* what, const JobResult& result, double seconds, std::uint64_t bytes, long baseKiB) {
    std::printf(
        "%-30s %s  %.2f GiB in %.2f s (%.0f MiB/s, write + verify)  RSS %.1f MiB before, peak %.1f MiB\n",
        what, result.isOk() ? "ok" : result.message.c_str(), bytes / 1073741824.0, seconds,
        bytes / 1048576.0 / seconds, baseKiB / 1024.0, processStatusKiB("VmHWM:") / 1024.0);
}

} // namespace

int main(int argc, char** argv) {
    const std::string folder = argc > 1 ? argv[1] : std::filesystem::temp_directory_path().string();
    const std::uint64_t gib = argc > 2 ? std::stoull(argv[2]) : 4;
    const std::string first = folder + "/bench-stream-a.gguf";
    const std::string second = folder + "/bench-stream-b.gguf";
    const std::uint64_t tensorBytes = 256ull << 20;

    GgufWriteSpec spec;
    spec.set("general.architecture", MetaValue::fromString("llama"));
    for (std::uint64_t i = 0; i < gib * 4; ++i) {
        TensorToWrite t;
        t.name = "blk." + std::to_string(i) + ".ffn_up.weight";
        t.type = TensorType::Q8_0;
        t.nDims = 2;
        t.ne = {4096, tensorBytes / 34 * 32 / 4096, 1, 1};
        t.source.generate = [](std::uint64_t offset, std::span<std::byte> out) {
            std::memset(out.data(), static_cast<int>(offset >> 22) & 0x3F, out.size());
        };
        spec.tensors.push_back(std::move(t));
    }
    resetPeakResident();
    const long base = processStatusKiB("VmRSS:");
    auto start = std::chrono::steady_clock::now();
    JobResult result = writeGguf(first, spec);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::uint64_t size = std::filesystem::file_size(first);
    report("from a callback", result, seconds, size, base);

    {
        const auto source = GgufFile::open(first);
        resetPeakResident();
        const long copyBase = processStatusKiB("VmRSS:");
        start = std::chrono::steady_clock::now();
        result = writeGguf(second, specFromFile(*source));
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        report("copied from the mapped file", result, seconds, size, copyBase);
    }
    std::filesystem::remove(first);
    std::filesystem::remove(second);
    return result.isOk() ? 0 : 1;
}
