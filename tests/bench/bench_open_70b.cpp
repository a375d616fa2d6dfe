// Opens a file with the layout of a 70B model (80 blocks, 723 tensors in Q4_K/Q6_K, a
// 128 256-token vocabulary with merges) whose tensor data is a sparse hole, and reports
// the time and memory to open it and classify its anatomy. A second file with the same
// header and a 4 times wider embedding (about 250 GB) shows that memory does not grow
// with the file size.
#include "anatomy/anatomy.h"
#include "bench_models.h"
#include "gguf/gguf_model.h"
#include "gguf/gguf_writer.h"
#include "proc_status.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace organ;
using namespace organ::bench;

namespace {

void measure(const std::string& path, std::uint64_t size) {
    constexpr int kRuns = 20;
    std::vector<double> times;
    long peakGrowth = 0;
    std::size_t tensors = 0;
    for (int run = 0; run < kRuns; ++run) {
        resetPeakResident();
        const long before = processStatusKiB("VmRSS:");
        const auto start = std::chrono::steady_clock::now();
        const auto model = GgufModel::open(path);
        const ModelAnatomy anatomy = analyzeAnatomy(*model);
        const auto stop = std::chrono::steady_clock::now();
        peakGrowth = std::max(peakGrowth, processStatusKiB("VmHWM:") - before);
        tensors = anatomy.tensors.size();
        times.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }
    std::sort(times.begin(), times.end());
    std::printf(
        "%-28s %9.1f GB  %zu tensors  open+anatomy: best %.2f ms, median %.2f ms  peak RSS growth %.1f MiB\n",
        std::filesystem::path(path).filename().c_str(), size / 1e9, tensors, times.front(),
        times[times.size() / 2], peakGrowth / 1024.0);
}

} // namespace

int main(int argc, char** argv) {
    const std::string folder = argc > 1 ? argv[1] : std::filesystem::temp_directory_path().string();
    const std::string a = folder + "/bench-70b-layout.gguf";
    const std::string b = folder + "/bench-70b-layout-wide.gguf";
    const std::uint64_t sizeA = writeSparse(a, seventyBLayout(1));
    const std::uint64_t sizeB = writeSparse(b, seventyBLayout(4));
    std::printf("header %.1f MiB (tokenizer included); tensor data is a sparse hole\n",
                GgufFile::open(a)->headerSize() / 1048576.0);
    measure(a, sizeA);
    measure(b, sizeB);
    std::filesystem::remove(a);
    std::filesystem::remove(b);
    return 0;
}
