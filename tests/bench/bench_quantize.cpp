// Quantization throughput: values per second per type, with and without an importance matrix, on
// one thread and on every core. First the writers alone (requantizeRowsParallel from F32 on a 2048 × 8192
// matrix in memory); then organ quantize --pure on the Llama-3.2-1B shape (F16, heavy-tailed
// random weights, without the token embedding so that only its matrices are quantized), beside
// llama-quantize on the same file when its path is given: the whole run (read the F16 file,
// quantize, write; ours also re-reads and checks what it wrote), and the ratio of the times
// (above 1, we are faster).
//
//   bench_quantize [--blocks N] [--types Q4_K,IQ4_XS,...] [--llama-quantize PATH]
#include "bench_models.h"
#include "gguf/gguf_model.h"
#include "quant/imatrix_file.h"
#include "quant/quantize.h"
#include "quant/quantize_model.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace organ;
using namespace organ::bench;

namespace {

struct Options {
    std::uint32_t blocks = 16;
    std::vector<QuantFileType> types;
    std::string llamaQuantize;
};

std::optional<Options> parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (i + 1 >= argc) {
            return std::nullopt;
        }
        const std::string value = argv[++i];
        if (arg == "--blocks") {
            o.blocks = static_cast<std::uint32_t>(std::stoul(value));
        } else if (arg == "--llama-quantize") {
            o.llamaQuantize = value;
        } else if (arg == "--types") {
            std::stringstream list(value);
            for (std::string name; std::getline(list, name, ',');) {
                const auto type = quantFileTypeFromName(name);
                if (!type) {
                    return std::nullopt;
                }
                o.types.push_back(*type);
            }
        } else {
            return std::nullopt;
        }
    }
    if (o.types.empty()) {
        o.types = {QuantFileType::Q2_K, QuantFileType::Q3_K_S, QuantFileType::Q4_K_S, QuantFileType::Q5_K_S,
                   QuantFileType::Q6_K, QuantFileType::IQ4_NL, QuantFileType::IQ4_XS};
    }
    return o;
}

// An importance matrix in llama-imatrix's format for every matrix of the model: random positive
// sums over 100 tokens.
void writeBenchImatrix(const GgufModel& model, const std::string& path) {
    ImatrixData data;
    data.datasets = {"bench.txt"};
    data.chunkCount = 1;
    data.chunkSize = 100;
    Noise noise(5);
    for (const TensorInfo& t : model.tensors()) {
        if (t.nDims < 2) {
            continue;
        }
        ImatrixEntry& entry = data.entries[t.name];
        entry.sums.resize(static_cast<std::size_t>(t.ne[0]));
        for (float& s : entry.sums) {
            s = 100.0f * (0.1f + noise.next() * noise.next());
        }
        entry.counts = {100.0f};
    }
    if (const JobResult written = writeImatrix(RootedPath(path), data); !written.isOk()) {
        throw std::runtime_error(written.message);
    }
}

// Runs llama-quantize quietly; its wall time in seconds, or a negative number when it failed.
double runLlamaQuantize(const Options& o, const std::vector<std::string>& args) {
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(o.llamaQuantize.c_str()));
    for (const std::string& a : args) {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 1);
        ::dup2(null, 2);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? s : -1.0;
}

// The writers alone: M values per second encoding a 2048 × 8192 matrix of heavy-tailed values.
void benchWriters(const Options& o, unsigned cores) {
    constexpr std::size_t kColumns = 2048;
    constexpr std::size_t kRows = 8192;
    std::vector<float> values(kColumns * kRows);
    std::vector<float> importance(kColumns);
    Noise noise(3);
    for (float& v : values) {
        v = 0.02f * noise.next();
    }
    for (float& w : importance) {
        w = 0.1f + noise.next() * noise.next();
    }
    std::printf("the writers alone, %zu × %zu values:\n%-7s %-8s %7s %12s\n", kColumns, kRows, "type",
                "imatrix", "threads", "M values/s");
    for (const QuantFileType fileType : o.types) {
        const TensorType type = defaultTensorType(fileType);
        std::vector<std::byte> out(static_cast<std::size_t>(storedBytes(type, values.size())));
        for (const bool weighted : {false, true}) {
            for (const unsigned threads : {1u, cores}) {
                const auto start = std::chrono::steady_clock::now();
                requantizeRowsParallel(TensorType::F32, std::as_bytes(std::span(values)), 0, kRows, kColumns,
                                       type, weighted ? importance.data() : nullptr, out.data(), threads);
                const double s =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                std::printf("%-7s %-8s %7u %12.1f\n", std::string(tensorTypeName(type)).c_str(),
                            weighted ? "yes" : "no", threads, double(values.size()) / s / 1e6);
                std::fflush(stdout);
            }
        }
    }
}

} // namespace

int main(int argc, char** argv) {
    const std::optional<Options> options = parse(argc, argv);
    if (!options) {
        std::fprintf(
            stderr,
            "usage: bench_quantize [--blocks N] [--types Q4_K_S,IQ4_XS,...] [--llama-quantize PATH]\n");
        return 2;
    }
    const Options& o = *options;
    const auto dir =
        std::filesystem::temp_directory_path() / ("bench_quantize." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string modelPath = (dir / "bench-1b-f16.gguf").string();
    const std::string imatrixPath = (dir / "bench-1b.imatrix.gguf").string();
    const std::string outPath = (dir / "out.gguf").string();
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    benchWriters(o, cores);
    std::printf("\nwriting the 1B shape (%u blocks, no token embedding) in F16 …\n", o.blocks);
    GgufWriteSpec spec = llama1bShape(TensorType::F16, o.blocks);
    std::erase_if(spec.tensors, [](const TensorToWrite& t) { return t.name == "token_embd.weight"; });
    if (const JobResult w = writeGguf(modelPath, spec); !w.isOk()) {
        std::fprintf(stderr, "%s\n", w.message.c_str());
        return 1;
    }
    const auto model = GgufModel::open(modelPath);
    writeBenchImatrix(*model, imatrixPath);
    const ImatrixData matrix = readImatrix(imatrixPath);
    std::printf("whole runs, M values quantized per second:\n%-7s %-8s %7s %12s %12s %7s\n", "type",
                "imatrix", "threads", "organ", "llama", "ratio");
    for (const QuantFileType type : o.types) {
        for (const bool weighted : {false, true}) {
            for (const unsigned threads : {1u, cores}) {
                QuantizeRecipe recipe;
                recipe.fileType = type;
                recipe.pure = true;
                recipe.imatrix = weighted ? imatrixPath : "";
                const auto start = std::chrono::steady_clock::now();
                const QuantizeOutcome outcome = quantizeModel(*model, recipe, weighted ? &matrix : nullptr,
                                                              outPath, {}, nullptr, threads);
                const double ours =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                if (!outcome.written.isOk()) {
                    std::fprintf(stderr, "%s\n", outcome.written.message.c_str());
                    return 1;
                }
                std::filesystem::remove(outPath);
                double values = 0;
                for (const QuantizedTensor& t : outcome.tensors) {
                    values += t.converted && t.to != TensorType::F16
                                  ? double(model->findTensor(t.name)->elements)
                                  : 0;
                }
                double theirs = 0;
                if (!o.llamaQuantize.empty()) {
                    std::vector<std::string> args{"--pure"};
                    if (weighted) {
                        args.insert(args.end(), {"--imatrix", imatrixPath});
                    }
                    args.insert(args.end(), {modelPath, outPath, std::string(quantFileTypeName(type)),
                                             std::to_string(threads)});
                    theirs = runLlamaQuantize(o, args);
                    std::filesystem::remove(outPath);
                }
                char llama[32] = "-";
                char ratio[32] = "-";
                if (theirs > 0) {
                    std::snprintf(llama, sizeof llama, "%.1f", values / theirs / 1e6);
                    std::snprintf(ratio, sizeof ratio, "%.2f", theirs / ours);
                } else if (!o.llamaQuantize.empty()) {
                    std::snprintf(llama, sizeof llama, "failed");
                }
                std::printf("%-7s %-8s %7u %12.1f %12s %7s\n",
                            std::string(tensorTypeName(defaultTensorType(type))).c_str(),
                            weighted ? "yes" : "no", threads, values / ours / 1e6, llama, ratio);
                std::fflush(stdout);
            }
        }
    }
    std::filesystem::remove_all(dir);
    return 0;
}
