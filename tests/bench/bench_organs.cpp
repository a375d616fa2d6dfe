// Organ directories of the Llama-3.2-1B-shaped Q8_0 model: extraction (organ extract) and
// assembly (organ assemble --organs) against `cp` + `sync` of the same bytes on the same disk,
// and peak memory (RSS: the mapped model's pages count when read). Usage: bench_organs [FOLDER]
// (about 4 GB of free disk; everything is deleted afterwards).
#include "bench_models.h"
#include "organs/organ_directory.h"
#include "proc_status.h"

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

double copySeconds(const std::string& from, const std::string& to) {
    const auto start = std::chrono::steady_clock::now();
    const std::string command = "cp -r '" + from + "' '" + to + "' && sync";
    if (std::system(command.c_str()) != 0) {
        std::exit(1);
    }
    return seconds(start);
}

} // namespace

int main(int argc, char** argv) {
    const std::filesystem::path folder = argc > 1 ? argv[1] : std::filesystem::temp_directory_path();
    const std::string model = (folder / "bench-organs-1b-q8_0.gguf").string();
    const std::string directory = (folder / "bench-organs-1b-q8_0").string();
    const std::string back = (folder / "bench-organs-back.gguf").string();
    const std::string copy = (folder / "bench-organs-copy").string();
    if (!writeGguf(model, llama1bShape(TensorType::Q8_0)).isOk()) {
        std::fprintf(stderr, "bench_organs: cannot write %s\n", model.c_str());
        return 1;
    }
    const double bytes = double(std::filesystem::file_size(model));
    std::printf("model: %.2f GB\n", bytes / 1e9);
    std::system("sync");

    resetPeakResident();
    const long base = processStatusKiB("VmRSS:");
    auto start = std::chrono::steady_clock::now();
    {
        const auto gguf = GgufModel::open(model);
        const JobResult done = extractOrgans(*gguf, directory);
        if (!done.isOk()) {
            std::fprintf(stderr, "bench_organs: %s\n", done.message.c_str());
            return 1;
        }
    }
    const double extract = seconds(start);
    const long extractPeak = processStatusKiB("VmHWM:") - base;
    const double cpFile = copySeconds(model, copy + ".gguf");

    resetPeakResident();
    start = std::chrono::steady_clock::now();
    {
        const OrganDirectory organs = OrganDirectory::open(directory);
        const JobResult done = assembleOrgans(organs, back);
        if (!done.isOk()) {
            std::fprintf(stderr, "bench_organs: %s\n", done.message.c_str());
            return 1;
        }
    }
    const double assemble = seconds(start);
    const long assemblePeak = processStatusKiB("VmHWM:") - base;
    const double cpDirectory = copySeconds(directory, copy);
    std::printf("extract (copy, SHA-256, fsync): %.2f s, %.0f MB/s; cp + sync of the file: %.2f s, %.0f MB/s "
                "-> %.0f %% of cp; RSS +%.1f MiB\n",
                extract, bytes / extract / 1e6, cpFile, bytes / cpFile / 1e6, 100 * cpFile / extract,
                extractPeak / 1024.0);
    std::printf("assemble (check every SHA-256, write, fsync, verify): %.2f s, %.0f MB/s; cp + sync of the "
                "directory: %.2f s, %.0f MB/s -> %.0f %% of cp; RSS +%.1f MiB\n",
                assemble, bytes / assemble / 1e6, cpDirectory, bytes / cpDirectory / 1e6,
                100 * cpDirectory / assemble, assemblePeak / 1024.0);
    std::filesystem::remove_all(directory);
    std::filesystem::remove_all(copy);
    for (const auto& f : {model, back, copy + ".gguf"}) {
        std::filesystem::remove(f);
    }
    return 0;
}
