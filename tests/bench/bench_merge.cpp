// Merging speed: two fine-tunes of a base merged with ties (weight 1, density 0.5 each) into Q8_0,
// from F16 and from Q8_0 inputs, on the Llama-3.2-1B shape (heavy-tailed random weights, the
// fine-tunes the base moved a little each: bench_models' variants). The whole run is what organ
// merge does (check, merge each tensor as it is written, verify and validate the file): GB of
// inputs per second and the peak resident memory. Then each stage alone on the same files in the
// page cache, on every core, in CPU seconds, to say what bounds the run:
//   read      the inputs decoded twice as the merger reads them (ties' radix pass over |δ|, then the
//             pass that merges), their pages given back behind each batch as the merger does
//   merge     TensorMerger on every tensor as the writer asks for it, less the reading: the merge's
//             own arithmetic
//   encode    the same with each merged piece encoded to Q8_0 as the writer does, less the merge
//   the rest  of the whole run: the writer (copying into the file, digests, verification), checking
//             the plan and validating the output; of it, the kernel's copy of the output's bytes
//             into a new file, measured alone (on a virtual machine that hands freed memory back to
//             its host, mostly the host's faults for the pages the copy lands in)
// Also Q8_0 quantization from memory on its own (values per second on one thread and every core).
// And from a cold page cache (the inputs' pages evicted with posix_fadvise, no root needed; not
// measured where they stay, as on a tmpfs): the whole merge again, the three inputs read from the
// disk alone, one after the other as `cat` does, and a new file of the output's size written and
// fsynced as the writer does: how much the merge adds to the disk's time.
// During the cold merge, how long the disk was busy (/proc/diskstats' time doing I/O, of the device
// that holds the files) and how much of the cores' time the merge used: which of the two bounds it.
//
//   bench_merge [--blocks N] [--dir D]    (default 4 of the shape's 16 blocks; files in D or /tmp)
#include "bench_models.h"
#include "gguf/gguf_model.h"
#include "graft/assembly.h"
#include "merge/merged_source.h"
#include "merge/tensor_merger.h"
#include "page_cache.h"
#include "proc_status.h"
#include "quant/dequant.h"
#include "quant/quantize.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

std::uint64_t fileBytes(const std::string& path) {
    return std::filesystem::file_size(path);
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
    } else if (const std::optional<std::size_t> resident = testing::residentPages(path, fileBytes(path));
               !resident) {
        error = path + ": cannot tell which pages are in memory: " + std::strerror(errno);
    } else if (*resident != 0) {
        error = path + ": its pages stay in memory (a tmpfs?)";
    } else {
        evicted = true;
    }
    ::close(fd);
    return evicted;
}

// The milliseconds the device holding `path` has spent doing I/O (/proc/diskstats' tenth figure);
// nothing where the device is not listed (a network, overlay or in-memory file system).
std::optional<std::uint64_t> diskBusyMs(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        return std::nullopt;
    }
    std::ifstream in("/proc/diskstats");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        unsigned majorNumber = 0;
        unsigned minorNumber = 0;
        std::string name;
        fields >> majorNumber >> minorNumber >> name;
        if (majorNumber != major(st.st_dev) || minorNumber != minor(st.st_dev)) {
            continue;
        }
        std::uint64_t figure = 0;
        for (int i = 0; i < 10 && fields >> figure; ++i) {
        }
        return fields ? std::optional<std::uint64_t>(figure) : std::nullopt;
    }
    return std::nullopt;
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

// Writes `bytes` bytes into a new file at `path` as the writer does (8 MiB at a time), fsynced when
// `sync` says so, and removes it: what the kernel's copy into the page cache costs alone, or the
// disk's time for the output. False when it cannot.
bool writeNewFile(const std::string& path, std::uint64_t bytes, bool sync) {
    const std::vector<char> chunk(8u << 20, 'x');
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        return false;
    }
    bool ok = true;
    for (std::uint64_t at = 0; ok && at < bytes;) {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), bytes - at));
        const ssize_t put = ::write(fd, chunk.data(), n);
        ok = put > 0 || (put < 0 && errno == EINTR);
        at += put > 0 ? static_cast<std::uint64_t>(put) : 0;
    }
    ok = (!sync || ::fsync(fd) == 0) && ok;
    ok = ::close(fd) == 0 && ok;
    std::filesystem::remove(path);
    return ok;
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

// A run's cost: wall and CPU seconds (every thread's).
struct Cost {
    double wall = 0;
    double cpu = 0;
};

template <typename Work> Cost costOf(const Work& work) {
    const auto start = std::chrono::steady_clock::now();
    const double cpuStart = processSeconds();
    work();
    return {secondsSince(start), processSeconds() - cpuStart};
}

// Runs work(thread) on `threads` threads, this one among them.
template <typename Work> void onThreads(unsigned threads, const Work& work) {
    std::vector<std::jthread> helpers;
    for (unsigned t = 1; t < threads; ++t) {
        helpers.emplace_back(work, t);
    }
    work(0u);
}

// The three inputs' tensors of one name, as `organ merge` reads them (base first).
struct TensorInputs {
    const TensorInfo* info = nullptr;
    std::vector<MergeInput> inputs;
};

std::vector<TensorInputs> tensorsOf(const std::vector<std::shared_ptr<const GgufModel>>& models) {
    std::vector<TensorInputs> tensors;
    for (const TensorInfo& t : models[0]->tensors()) {
        TensorInputs in{&t, {}};
        for (const auto& model : models) {
            in.inputs.push_back({model->tensorSource(*model->findTensor(t.name)), t.type});
        }
        tensors.push_back(std::move(in));
    }
    return tensors;
}

// Each input's values decoded twice, as the merger reads them for ties (its radix pass over |δ|,
// then the pass that merges): batches of 2^20 values in pieces of 65 536 handed to the threads in
// turn, 2048 values of each input at a time, each batch's pages given back after it.
void readTwice(const std::vector<TensorInputs>& tensors, unsigned threads) {
    constexpr std::uint64_t kBatch = 1u << 20;
    constexpr std::uint64_t kPiece = 1u << 16;
    constexpr std::size_t kBlock = 2048;
    for (const TensorInputs& t : tensors) {
        for (int pass = 0; pass < 2; ++pass) {
            for (std::uint64_t batch = 0; batch < t.info->elements; batch += kBatch) {
                const std::uint64_t last = std::min(t.info->elements, batch + kBatch);
                const std::uint64_t pieces = (last - batch + kPiece - 1) / kPiece;
                onThreads(threads, [&](unsigned thread) {
                    std::vector<std::vector<float>> block(t.inputs.size(), std::vector<float>(kBlock));
                    for (std::uint64_t p = thread; p < pieces; p += threads) {
                        const std::uint64_t end = std::min(last, batch + (p + 1) * kPiece);
                        for (std::uint64_t at = batch + p * kPiece; at < end; at += kBlock) {
                            const auto count =
                                static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, end - at));
                            for (std::size_t i = 0; i < t.inputs.size(); ++i) {
                                dequantizeRange(t.info->type, t.inputs[i].source.bytes, at, count,
                                                block[i].data());
                            }
                        }
                    }
                });
                for (const MergeInput& input : t.inputs) {
                    releaseValues(input, batch, last - batch);
                }
            }
        }
    }
}

// Each tensor merged with ties (weight 1, density 0.5 each) by the engine's own merger, as the
// writer asks for it: in batches of about 2^20 values, pieces of whole rows on every core, each
// batch's pages given back after it; each piece encoded to Q8_0 where `encode` and the rows are a
// multiple of 32 long.
void mergeAll(const std::vector<TensorInputs>& tensors, bool encode) {
    for (const TensorInputs& t : tensors) {
        MergedTensor merged;
        merged.name = t.info->name;
        merged.params.method = MergeMethod::Ties;
        merged.params.models = {{1.0, 0.5, 0.01}, {1.0, 0.5, 0.01}};
        merged.params.normalize = true;
        merged.params.stream = t.info->name;
        merged.base = t.inputs[0];
        merged.models = {t.inputs[1], t.inputs[2]};
        merged.ne = t.info->ne;
        const std::unique_ptr<TensorMerger> merger = preparedMerger(merged);
        const std::uint64_t columns = t.info->ne[0];
        const bool quantized = encode && t.info->nDims >= 2 && columns % 32 == 0;
        const std::uint64_t rows = std::max<std::uint64_t>(1, (std::uint64_t{1} << 20) / columns);
        const std::size_t piece = rowsPerPiece(static_cast<std::size_t>(columns)) * columns;
        for (std::uint64_t at = 0; at < t.info->elements; at += rows * columns) {
            const auto count = static_cast<std::size_t>(std::min(rows * columns, t.info->elements - at));
            merger->next(count, piece, [&](std::uint64_t, std::size_t n, const float* values) {
                if (!quantized) {
                    return;
                }
                std::vector<std::byte> out(storedBytes(TensorType::Q8_0, n));
                quantizeRows(TensorType::Q8_0, values, static_cast<std::size_t>(n / columns),
                             static_cast<std::size_t>(columns), nullptr, out.data());
            });
        }
    }
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
    const auto usage = [] {
        std::fprintf(stderr, "usage: bench_merge [--blocks N (1-16)] [--dir D]\n");
        return 2;
    };
    if (argc % 2 == 0) {
        return usage(); // an option without its value
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        const std::string_view value = argv[i + 1];
        if (arg == "--blocks") {
            const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), blocks);
            if (error != std::errc() || end != value.data() + value.size() || blocks == 0 || blocks > 16) {
                return usage();
            }
        } else if (arg == "--dir") {
            dir = argv[i + 1];
        } else {
            return usage();
        }
    }
    std::printf("bench_merge: ties of two fine-tunes on a base, Llama-3.2-1B shape with %u blocks\n", blocks);
    const double q8One = quantizeQ8(1);
    const double q8All = quantizeQ8(0);
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
        // The whole merge as `organ merge` runs it: its cost, or nothing (`which` failed, said why).
        const auto wholeMerge = [&](const char* which) -> std::optional<Cost> {
            GraftOutcome outcome;
            const Cost cost =
                costOf([&] { outcome = graftChimera(plan, GraftModels::open(plan), RootedPath(output)); });
            if (!outcome.written.isOk() || outcome.report.hasErrors()) {
                std::string why = outcome.written.message;
                for (const Finding& f : outcome.report.findings) {
                    if (f.severity == Finding::Severity::Error) {
                        why += (why.empty() ? "" : "; ") + f.message;
                    }
                }
                std::fprintf(stderr, "the %s failed: %s\n", which, why.c_str());
                return std::nullopt;
            }
            return cost;
        };
        resetPeakResident();
        const std::optional<Cost> warm = wholeMerge("merge");
        if (!warm) {
            return 1;
        }
        const double whole = warm->wall;
        const double cpu = warm->cpu;
        const long peak = processStatusKiB("VmHWM:");
        const std::uint64_t outputBytes = fileBytes(output);

        // The same merge from a cold page cache, and the disk's time for its inputs alone.
        std::string coldError;
        const auto evictAll = [&] {
            return std::all_of(paths.begin(), paths.end(),
                               [&](const std::string& path) { return evict(path, coldError); });
        };
        double disk = 0;
        double diskWrite = 0;
        double coldWhole = 0;
        double coldCpu = 0;
        std::optional<std::uint64_t> busyBefore;
        std::optional<std::uint64_t> busyAfter;
        bool measured = false;
        if (evictAll()) {
            if (const std::optional<double> took = readFromDisk(paths, coldError)) {
                disk = *took;
                const auto start = std::chrono::steady_clock::now();
                if (!writeNewFile(output + ".copy", outputBytes, true)) {
                    coldError = output + ".copy: cannot be written";
                } else {
                    diskWrite = secondsSince(start);
                    measured = evictAll();
                }
            }
        }
        if (measured) {
            busyBefore = diskBusyMs(paths[0]);
            const std::optional<Cost> cold = wholeMerge("cold merge");
            busyAfter = diskBusyMs(paths[0]);
            if (!cold) {
                return 1;
            }
            coldWhole = cold->wall;
            coldCpu = cold->cpu;
        }

        // The stages again, each alone on the same files in the page cache, on every core: the
        // least of two runs each.
        std::vector<std::shared_ptr<const GgufModel>> models;
        for (const std::string& path : paths) {
            models.push_back(GgufModel::open(RootedPath(path)));
        }
        const std::vector<TensorInputs> tensors = tensorsOf(models);
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        auto least = [](const auto& work) {
            const Cost a = costOf(work);
            const Cost b = costOf(work);
            return Cost{std::min(a.wall, b.wall), std::min(a.cpu, b.cpu)};
        };
        const Cost read = least([&] { readTwice(tensors, cores); });
        const Cost merged = least([&] { mergeAll(tensors, false); });
        const Cost encoded = least([&] { mergeAll(tensors, true); });
        models.clear();
        bool copiedAlone = true;
        const Cost copied = costOf([&] { copiedAlone = writeNewFile(output + ".copy", outputBytes, false); });

        std::printf("\n%s inputs: 3 × %.2f GB → %.2f GB of Q8_0\n", name.c_str(), inputBytes / 3e9,
                    outputBytes / 1e9);
        std::printf("  whole merge: %.1f s (%.1f s of CPU) = %.2f GB of inputs/s, peak resident %.0f MiB "
                    "(inputs %.0f MiB)\n",
                    whole, cpu, inputBytes / 1e9 / whole, peak / 1024.0, inputBytes / 1048576.0);
        std::printf(
            "  stages alone, CPU seconds (wall): reading the inputs twice %.2f (%.2f), merge arithmetic "
            "%.2f (%.2f), Q8_0 encoding %.2f (%.2f); the rest of the whole merge (the writer, "
            "checking the plan, validating) %.2f\n",
            read.cpu, read.wall, merged.cpu - read.cpu, merged.wall - read.wall, encoded.cpu - merged.cpu,
            encoded.wall - merged.wall, cpu - encoded.cpu);
        if (copiedAlone) {
            std::printf(
                "  of the rest, the kernel's copy of the output into a new file, alone (written 8 MiB "
                "at a time, no fsync): %.2f CPU seconds (%.2f GB/s)\n",
                copied.cpu, outputBytes / 1e9 / copied.cpu);
        }
        if (measured) {
            std::printf(
                "  from a cold page cache: whole merge %.1f s; the inputs alone read from the disk %.1f s "
                "(%.2f GB/s), a file of the output's size alone written to it %.1f s (fsync): moving "
                "these bytes takes %.1f s (the longer, were they moved at once) to %.1f s (one after "
                "the other), the merge %+.1f s to %+.1f s more: %s\n",
                coldWhole, disk, inputBytes / 1e9 / disk, diskWrite, std::max(disk, diskWrite),
                disk + diskWrite, coldWhole - std::max(disk, diskWrite), coldWhole - disk - diskWrite,
                coldWhole <= std::max(disk, diskWrite) ? "no longer than the disk moving its bytes alone"
                                                       : "longer than the disk moving its bytes at once");
            const double coreShare = coldCpu / (coldWhole * cores);
            if (busyBefore && busyAfter) {
                const double busy = double(*busyAfter - *busyBefore) / 1e3;
                const double diskShare = busy / coldWhole;
                std::printf(
                    "  during the cold merge: the disk busy %.1f s of %.1f (%.0f %%), the cores %.1f s of "
                    "%.1f (%.0f %%): bound by %s\n",
                    busy, coldWhole, 100 * diskShare, coldCpu, coldWhole * cores, 100 * coreShare,
                    diskShare >= 0.9 && diskShare >= coreShare ? "the disk"
                    : coreShare >= 0.9                         ? "the cores"
                                                               : "the disk and the cores in turn");
            } else {
                std::printf(
                    "  during the cold merge: the cores %.1f s of %.1f (%.0f %%); the disk's busy time "
                    "not measured (%s is on no device /proc/diskstats lists)\n",
                    coldCpu, coldWhole * cores, 100 * coreShare, dir.c_str());
            }
        } else {
            std::printf("  from a cold page cache: not measured (%s)\n", coldError.c_str());
        }
        for (const std::string& path : paths) {
            std::filesystem::remove(path);
        }
        std::filesystem::remove(output);
    }
    return 0;
}
