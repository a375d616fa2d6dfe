// Merging speed: two fine-tunes of a base merged with ties (weight 1, density 0.5 each) into Q8_0,
// from F16 and from Q8_0 inputs, on the Llama-3.2-1B shape (heavy-tailed random weights, the
// fine-tunes the base moved a little each: bench_models' variants). The whole run is what organ
// merge does (check, merge each tensor as it is written, verify and validate the file): GB of
// inputs per second and the peak resident memory. Then each piece of it alone on the same files,
// one thread unless said, to say what bounds the run:
//   read      decoding every value of the three inputs once (the merge reads them twice: ties'
//             radix pass over |δ| and the pass that merges)
//   merge     TensorMerger's arithmetic over values already in memory (2048 × 8192 floats, read
//             from 1 MiB per input repeated, which stays in the cache: decoding is `read`'s): on
//             one thread in its CPU time, and on every core in wall time
//   quantize  the output's values to Q8_0 from memory, on every core as the writer does
//   write     the base copied through the writer (partial file, fsync, verification)
// And from a cold page cache (the inputs' pages evicted with posix_fadvise, no root needed; not
// measured where they stay, as on a tmpfs): the whole merge again, and the three inputs read from
// the disk alone, one after the other as `cat` does: how much the merge adds to the disk's time.
//
//   bench_merge [--blocks N] [--dir D]    (default 4 of the shape's 16 blocks; files in D or /tmp)
#include "bench_models.h"
#include "gguf/gguf_model.h"
#include "graft/assembly.h"
#include "merge/tensor_merger.h"
#include "proc_status.h"
#include "quant/dequant.h"
#include "quant/quantize.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace organ;
using namespace organ::bench;

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The process's CPU time, every thread's.
double processSeconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// This thread's CPU time: what a one-thread piece costs, whatever else the machine runs.
double threadSeconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

std::uint64_t fileBytes(const std::string& path) {
    return std::filesystem::file_size(path);
}

// Every tensor of the model decoded to floats once, a few MiB at a time.
std::uint64_t decodeAll(const std::string& path) {
    const auto model = GgufModel::open(RootedPath(path));
    constexpr std::size_t kChunk = 1u << 20;
    std::vector<float> out(kChunk);
    std::uint64_t values = 0;
    for (const TensorInfo& t : model->tensors()) {
        const auto data = model->tensorData(t);
        for (std::uint64_t first = 0; first < t.elements; first += kChunk) {
            const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, t.elements - first));
            dequantizeRange(t.type, data, first, count, out.data());
        }
        values += t.elements;
    }
    return values;
}

// Drops the file's pages from the page cache (written back first), so that the next read comes
// from the disk: false, with why in `error`, when it cannot, or when pages stay (a tmpfs keeps them).
bool evict(const std::string& path, std::string& error) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) {
        error = path + ": " + std::strerror(errno);
        return false;
    }
    bool evicted = false;
    if (::fdatasync(fd) != 0) {
        error = path + ": fdatasync: " + std::strerror(errno);
    } else if (const int advised = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); advised != 0) {
        error = path + ": posix_fadvise: " + std::strerror(advised);
    } else {
        const std::size_t size = fileBytes(path);
        const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        std::vector<unsigned char> resident((size + page - 1) / page);
        void* mapped = size == 0 ? MAP_FAILED : ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
        if (mapped == MAP_FAILED || ::mincore(mapped, size, resident.data()) != 0) {
            error = path + ": cannot tell which pages are in memory: " + std::strerror(errno);
        } else if (std::any_of(resident.begin(), resident.end(),
                               [](unsigned char r) { return (r & 1) != 0; })) {
            error = path + ": its pages stay in memory (a tmpfs?)";
        } else {
            evicted = true;
        }
        if (mapped != MAP_FAILED) {
            ::munmap(mapped, size);
        }
    }
    ::close(fd);
    return evicted;
}

// Reads the files one after the other, as `cat` does: the disk's time for them. Nothing when one
// cannot be read (why in `error`).
std::optional<double> readFromDisk(const std::vector<std::string>& paths, std::string& error) {
    std::vector<char> buffer(1u << 20);
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& path : paths) {
        const int fd = ::open(path.c_str(), O_RDONLY);
        if (fd < 0) {
            error = path + ": " + std::strerror(errno);
            return std::nullopt;
        }
        for (;;) {
            const ssize_t n = ::read(fd, buffer.data(), buffer.size());
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0) {
                error = path + ": " + std::strerror(errno);
                ::close(fd);
                return std::nullopt;
            }
            if (n == 0) {
                break;
            }
        }
        ::close(fd);
    }
    return secondsSince(start);
}

GraftPlan tiesPlan(const std::string& base, const std::string& a, const std::string& b, bool toQ8) {
    GraftPlan plan;
    plan.base = base;
    plan.donors = {{"a", a}, {"b", b}};
    GraftOperation merge;
    merge.kind = GraftOperation::Kind::Merge;
    merge.merge.method = MergeMethod::Ties;
    merge.merge.base = "base";
    for (const char* id : {"a", "b"}) {
        merge.merge.models.push_back(
            {id, {{"weight", ParamValue::number(1.0)}, {"density", ParamValue::number(0.5)}}});
    }
    plan.operations.push_back(merge);
    if (toQ8) {
        GraftOperation quantize;
        quantize.kind = GraftOperation::Kind::Quantize;
        quantize.quantize.fileType = QuantFileType::Q8_0;
        quantize.quantize.pure = true;
        plan.operations.push_back(quantize);
    }
    return plan;
}

// The arithmetic of one 2048 × 8192 tensor merged with ties from values in memory: values per second
// of the thread's CPU time on one thread, of wall time on `threads` (0: every core). Each input is
// 1 MiB of values repeated, so that copying it costs what reading from the cache does: a copy from
// main memory (12 bytes per value, twice) would bound it, not the arithmetic.
double mergeArithmetic(unsigned threads) {
    constexpr std::uint64_t kColumns = 2048;
    constexpr std::uint64_t kRows = 8192;
    constexpr std::size_t kRepeated = std::size_t{1} << 18;
    std::vector<std::vector<float>> inputs(3, std::vector<float>(kRepeated));
    Noise noise(5);
    for (std::size_t i = 0; i < kRepeated; ++i) {
        inputs[0][i] = 0.02f * noise.next();
        inputs[1][i] = inputs[0][i] + 0.002f * noise.next();
        inputs[2][i] = inputs[0][i] + 0.002f * noise.next();
    }
    auto reader = [](const std::vector<float>& v) -> ValueReader {
        return [&v](std::uint64_t first, std::size_t count, float* out) {
            for (std::size_t done = 0; done < count;) {
                const auto at = static_cast<std::size_t>((first + done) % kRepeated);
                const std::size_t n = std::min(count - done, kRepeated - at);
                std::copy_n(v.data() + at, n, out + done);
                done += n;
            }
        };
    };
    TensorMergeParams params;
    params.method = MergeMethod::Ties;
    params.models = {{1.0, 0.5, 0.01}, {1.0, 0.5, 0.01}};
    params.normalize = true;
    TensorMergeInputs in;
    in.elements = kColumns * kRows;
    in.base = reader(inputs[0]);
    in.models = {reader(inputs[1]), reader(inputs[2])};
    const double cpuStart = threadSeconds();
    const auto start = std::chrono::steady_clock::now();
    TensorMerger merger(params, std::move(in));
    merger.setThreads(threads);
    merger.prepare();
    std::vector<float> out(1u << 20);
    for (std::uint64_t at = 0; at < kColumns * kRows; at += out.size()) {
        merger.next(out.size(), out.data());
    }
    const double seconds = threads == 1 ? threadSeconds() - cpuStart : secondsSince(start);
    return double(kColumns * kRows) / seconds;
}

double quantizeQ8(unsigned threads) {
    constexpr std::size_t kColumns = 2048;
    constexpr std::size_t kRows = 8192;
    std::vector<float> values(kColumns * kRows);
    Noise noise(7);
    for (float& v : values) {
        v = 0.02f * noise.next();
    }
    std::vector<std::byte> out(storedBytes(TensorType::Q8_0, values.size()));
    const auto start = std::chrono::steady_clock::now();
    requantizeRowsParallel(TensorType::F32, std::as_bytes(std::span(values)), 0, kRows, kColumns,
                           TensorType::Q8_0, nullptr, out.data(), threads);
    return double(values.size()) / secondsSince(start);
}

} // namespace

int main(int argc, char** argv) {
    std::uint32_t blocks = 4;
    std::string dir = "/tmp";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        if (arg == "--blocks") {
            blocks = static_cast<std::uint32_t>(std::stoul(argv[i + 1]));
        } else if (arg == "--dir") {
            dir = argv[i + 1];
        } else {
            std::fprintf(stderr, "usage: bench_merge [--blocks N] [--dir D]\n");
            return 2;
        }
    }
    std::printf("bench_merge: ties of two fine-tunes on a base, Llama-3.2-1B shape with %u blocks\n", blocks);
    const double arithmeticOne = mergeArithmetic(1);
    const double arithmetic = mergeArithmetic(0);
    const double q8One = quantizeQ8(1);
    const double q8All = quantizeQ8(0);
    std::printf("  merge arithmetic (ties, 3 inputs in memory): %.0f M values per CPU second on 1 thread, "
                "%.0f M values/s on every core\n",
                arithmeticOne / 1e6, arithmetic / 1e6);
    std::printf("  Q8_0 quantization from memory: %.0f M values/s on 1 thread, %.0f M on every core\n",
                q8One / 1e6, q8All / 1e6);
    for (const TensorType type : {TensorType::F16, TensorType::Q8_0}) {
        const std::string name(tensorTypeName(type));
        std::vector<std::string> paths;
        for (std::uint64_t variant = 0; variant < 3; ++variant) {
            paths.push_back(dir + "/bench-merge-" + name + "-" + std::to_string(variant) + ".gguf");
            if (const JobResult w = writeGguf(RootedPath(paths.back()), llama1bShape(type, blocks, variant));
                !w.isOk()) {
                std::fprintf(stderr, "cannot write %s: %s\n", paths.back().c_str(), w.message.c_str());
                return 1;
            }
        }
        const std::uint64_t inputBytes = fileBytes(paths[0]) + fileBytes(paths[1]) + fileBytes(paths[2]);
        const std::string output = dir + "/bench-merge-" + name + "-ties-q8_0.gguf";

        const GraftPlan plan = tiesPlan(paths[0], paths[1], paths[2], type != TensorType::Q8_0);
        resetPeakResident();
        auto start = std::chrono::steady_clock::now();
        const double cpuStart = processSeconds();
        const GraftOutcome outcome = graftChimera(plan, GraftModels::open(plan), RootedPath(output));
        const double whole = secondsSince(start);
        const double cpu = processSeconds() - cpuStart;
        const long peak = processStatusKiB("VmHWM:");
        if (!outcome.written.isOk() || outcome.report.hasErrors()) {
            std::fprintf(stderr, "the merge failed: %s\n", outcome.written.message.c_str());
            return 1;
        }
        const std::uint64_t outputBytes = fileBytes(output);

        // The same merge from a cold page cache, and the disk's time for its inputs alone.
        std::string coldError;
        const auto evictAll = [&] {
            return std::all_of(paths.begin(), paths.end(),
                               [&](const std::string& path) { return evict(path, coldError); });
        };
        double disk = 0;
        double coldWhole = 0;
        bool measured = false;
        if (evictAll()) {
            if (const std::optional<double> took = readFromDisk(paths, coldError)) {
                disk = *took;
                measured = evictAll();
            }
        }
        if (measured) {
            start = std::chrono::steady_clock::now();
            const GraftOutcome cold = graftChimera(plan, GraftModels::open(plan), RootedPath(output));
            coldWhole = secondsSince(start);
            if (!cold.written.isOk() || cold.report.hasErrors()) {
                std::fprintf(stderr, "the cold merge failed: %s\n", cold.written.message.c_str());
                return 1;
            }
        }

        start = std::chrono::steady_clock::now();
        std::uint64_t values = 0;
        for (const std::string& path : paths) {
            values += decodeAll(path);
        }
        const double read = secondsSince(start);
        const double quantize = double(values / 3) / q8All;
        const double merge = double(values / 3) / arithmetic;
        start = std::chrono::steady_clock::now();
        const std::string copy = dir + "/bench-merge-" + name + "-copy.gguf";
        {
            const auto base = GgufModel::open(RootedPath(paths[0]));
            if (const JobResult w = writeGguf(RootedPath(copy), specFromFile(base->primary())); !w.isOk()) {
                std::fprintf(stderr, "cannot copy: %s\n", w.message.c_str());
                return 1;
            }
        }
        const double write = secondsSince(start) * double(outputBytes) / double(fileBytes(copy));

        std::printf("\n%s inputs: 3 × %.2f GB → %.2f GB of Q8_0\n", name.c_str(), inputBytes / 3e9,
                    outputBytes / 1e9);
        std::printf("  whole merge: %.1f s (%.1f s of CPU) = %.2f GB of inputs/s, peak resident %.0f MiB "
                    "(inputs %.0f MiB)\n",
                    whole, cpu, inputBytes / 1e9 / whole, peak / 1024.0, inputBytes / 1048576.0);
        // The merger reads the inputs twice (ties' radix pass, then the merge) on every
        // core, as it merges: each core decodes as fast as this one.
        const double reads = 2 * read / double(std::max(1u, std::thread::hardware_concurrency()));
        std::printf("  alone: read the inputs once %.1f s on 1 thread (×2 passes on every core: %.1f s), "
                    "merge arithmetic %.1f s, quantize %.1f s, write %.1f s\n",
                    read, reads, merge, quantize, write);
        std::printf("  sum of the pieces: %.1f s of the %.1f s\n", reads + merge + quantize + write, whole);
        if (measured) {
            std::printf(
                "  from a cold page cache: whole merge %.1f s; the inputs alone read from the disk %.1f s "
                "(%.2f GB/s): the merge adds %.1f s to the disk's time\n",
                coldWhole, disk, inputBytes / 1e9 / disk, coldWhole - disk);
        } else {
            std::printf("  from a cold page cache: not measured (%s)\n", coldError.c_str());
        }
        for (const std::string& path : paths) {
            std::filesystem::remove(path);
        }
        std::filesystem::remove(output);
        std::filesystem::remove(copy);
    }
    return 0;
}
