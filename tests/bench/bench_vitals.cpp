// Vital signs' forward pass on models with the shape of Llama-3.2-1B (16 blocks, embedding 2048,
// FFN 8192, vocabulary 128 256) in Q8_0, Q4_K_M (Q4_K with Q6_K where llama-quantize puts it) and
// F16: tokens per second of the perplexity pass (a chunk of N tokens in one batch, the logits of
// its second half: what `organ vitals --chunk N` scores) and of greedy generation with the
// key/value cache, per kernel (instruction set) and number of threads, and peak memory. The models
// carry a made-up vocabulary so that llama.cpp runs the same files: with ORGAN_LLAMA_CPP_BIN naming
// the folder of its tools, the same passes run there (llama-perplexity -c N --chunks 1 -b N: one
// batch of N tokens, the second half's logits; llama-completion -n G: generation) and the table
// gives the ratio of our time to llama.cpp's.
// Every time is the best of --repeat runs; with llama.cpp the runs go in turns (one of theirs, then
// one of ours), and beside the ratio of the bests the lowest and highest ratio of a turn is printed:
// the host's speed moves over minutes, less within a turn (llama.cpp runs for each kernel named).
// A short untimed pass first touches the weights, so that no timed run pays the page faults. The
// machine's load average is printed too.
// Usage: bench_vitals [FOLDER] [--types q8_0,q4_k_m,f16] [--tokens 128,512] [--generate 16]
//                     [--kernels active|all|NAME,…] [--threads 1,2] [--repeat 2]
// (about 5 GB of free disk in FOLDER for the three models; they are deleted afterwards unless
// ORGAN_BENCH_KEEP is set, and a kept one is used again.) ORGAN_CPU forces the kernel as
// everywhere; --kernels all runs each SIMD one this CPU has (portable only when named).
#include "bench_models.h"
#include "proc_status.h"
#include "support/instruction_set.h"
#include "vitals/forward.h"
#include "vitals/vital_signs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

using namespace organ;
using namespace organ::bench;

namespace {

double seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

std::vector<std::string> splitList(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        out.push_back(item);
    }
    return out;
}

struct Options {
    std::filesystem::path folder = std::filesystem::temp_directory_path();
    std::vector<std::string> types{"q8_0", "q4_k_m", "f16"};
    std::vector<std::size_t> tokens{128, 512};
    std::size_t generated = 16;
    std::string kernels = "active";
    std::vector<unsigned> threads{std::max(1u, std::thread::hardware_concurrency())};
    int repeat = 2;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const std::string value = i + 1 < argc ? argv[i + 1] : "";
        if (arg == "--types") {
            o.types = splitList(value);
        } else if (arg == "--tokens") {
            o.tokens.clear();
            for (const std::string& n : splitList(value)) {
                o.tokens.push_back(std::stoul(n));
            }
        } else if (arg == "--generate") {
            o.generated = std::stoul(value);
        } else if (arg == "--kernels") {
            o.kernels = value;
        } else if (arg == "--threads") {
            o.threads.clear();
            for (const std::string& n : splitList(value)) {
                o.threads.push_back(static_cast<unsigned>(std::stoul(n)));
            }
        } else if (arg == "--repeat") {
            o.repeat = std::max(1, std::stoi(value));
        } else {
            o.folder = arg;
            continue;
        }
        ++i;
    }
    return o;
}

GgufWriteSpec specOf(const std::string& type) {
    if (type == "q4_k_m") {
        return llama1bShapeQ4KM();
    }
    return llama1bShape(type == "f16" ? TensorType::F16 : TensorType::Q8_0);
}

// "t300 t301 …": each word one token of the made-up vocabulary (▁t300 …).
std::string textOf(const std::vector<std::int32_t>& tokens) {
    std::string text;
    for (const std::int32_t t : tokens) {
        text += (text.empty() ? "t" : " t") + std::to_string(t);
    }
    return text;
}

// The output of `command`, or nothing when it could not run.
std::optional<std::string> run(const std::string& command) {
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
    if (pipe == nullptr) {
        return std::nullopt;
    }
    std::string out;
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
        out += buffer;
    }
    return ::pclose(pipe) == 0 ? std::optional(out) : std::nullopt;
}

// The number before `unit` on the line holding `key`.
std::optional<double> numberBefore(const std::string& text, const std::string& key, const std::string& unit) {
    const std::size_t line = text.find(key);
    if (line == std::string::npos) {
        return std::nullopt;
    }
    const std::size_t end = text.find(unit, line + key.size());
    if (end == std::string::npos) {
        return std::nullopt;
    }
    std::size_t start = end;
    while (start > 0 &&
           (std::isdigit(static_cast<unsigned char>(text[start - 1])) || text[start - 1] == '.')) {
        --start;
    }
    return start < end ? std::optional(std::stod(text.substr(start, end - start))) : std::nullopt;
}

// llama.cpp's time for the same passes (seconds), one run.
struct LlamaCpp {
    std::string bin;
    std::optional<double> perplexityPass(const std::string& model, const std::string& textFile, std::size_t n,
                                         unsigned threads) const {
        const auto out = run(bin + "/llama-perplexity -m '" + model + "' -f '" + textFile + "' -c " +
                             std::to_string(n) + " -b " + std::to_string(n) + " -ub " + std::to_string(n) +
                             " --chunks 1 -t " + std::to_string(threads));
        return out ? numberBefore(*out, "perplexity:", " seconds per pass") : std::nullopt;
    }
    // Seconds per generated token.
    std::optional<double> generation(const std::string& model, const std::string& prompt, std::size_t n,
                                     unsigned threads) const {
        const auto out =
            run(bin + "/llama-completion -m '" + model + "' -p '" + prompt + "' -n " + std::to_string(n) +
                " -t " + std::to_string(threads) + " --temp 0 --ignore-eos -no-cnv");
        const std::size_t at = out ? out->find("       eval time =") : std::string::npos;
        const auto ms = at != std::string::npos ? numberBefore(out->substr(at), "eval time", " ms per token")
                                                : std::nullopt;
        return ms ? std::optional(*ms / 1000) : std::nullopt;
    }
};

// The best of each side's runs, and the ratio ours / theirs of each turn (a run of theirs and one of
// ours, one after the other): the host's load moves between turns more than within one.
struct Turns {
    double ours = 1e30;
    std::optional<double> theirs;
    std::vector<double> ratios;
    void add(double o, std::optional<double> t) {
        ours = std::min(ours, o);
        if (t) {
            theirs = std::min(theirs.value_or(*t), *t);
            ratios.push_back(o / *t);
        }
    }
};

void row(const char* type, const char* kernel, unsigned threads, const std::string& what, std::size_t tokens,
         const Turns& turns) {
    std::printf("%-7s %-11s %2u  %-18s %8.2f s %8.2f tok/s", type, kernel, threads, what.c_str(), turns.ours,
                static_cast<double>(tokens) / turns.ours);
    if (turns.theirs) {
        std::printf("  %8.2f s %8.2f tok/s  %5.2f×", *turns.theirs,
                    static_cast<double>(tokens) / *turns.theirs, turns.ours / *turns.theirs);
    }
    if (turns.ratios.size() > 1) {
        const auto [low, high] = std::minmax_element(turns.ratios.begin(), turns.ratios.end());
        std::printf("  turns %.2f-%.2f×", *low, *high);
    }
    std::printf("  (load %.1f)\n", loadAverage());
    std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    std::vector<std::string> kernels;
    if (o.kernels == "active") {
        kernels.emplace_back(instructionSetName(activeInstructionSet()));
    } else if (o.kernels == "all") {
        // The SIMD ones: portable takes minutes a pass (name it to run it).
        for (const InstructionSet set : supportedInstructionSets()) {
            if (set != InstructionSet::Portable) {
                kernels.emplace_back(instructionSetName(set));
            }
        }
    } else {
        kernels = splitList(o.kernels);
    }
    std::optional<LlamaCpp> llama;
    if (const char* bin = std::getenv("ORGAN_LLAMA_CPP_BIN");
        bin != nullptr && std::filesystem::exists(std::filesystem::path(bin) / "llama-perplexity")) {
        llama = LlamaCpp{bin};
    } else {
        std::printf("llama.cpp: not run (ORGAN_LLAMA_CPP_BIN names no folder with llama-perplexity)\n");
    }
    const std::size_t longest = *std::max_element(o.tokens.begin(), o.tokens.end());
    std::printf("%-7s %-11s %2s  %-18s %19s %27s\n", "model", "kernel", "th", "pass", "ours",
                llama ? "llama.cpp        ours/theirs" : "");
    for (const std::string& type : o.types) {
        const std::string path = (o.folder / ("bench-vitals-1b-" + type + ".gguf")).string();
        if (!(std::getenv("ORGAN_BENCH_KEEP") != nullptr && std::filesystem::exists(path))) {
            const JobResult written = writeGguf(path, specOf(type));
            if (!written.isOk()) {
                std::fprintf(stderr, "bench_vitals: %s\n", written.message.c_str());
                return 1;
            }
        }
        Transformer transformer(GgufModel::open(path));
        std::vector<std::int32_t> tokens(2 * longest + 8);
        Noise noise(3);
        for (auto& t : tokens) {
            // Made-up pieces only (ids from 259): llama.cpp reads the same tokens from the text.
            t = 259 + static_cast<std::int32_t>(static_cast<std::uint32_t>(std::abs(noise.next()) * 1e6f) %
                                                (transformer.shape().vocabulary - 259));
        }
        const std::string textFile = (o.folder / "bench-vitals-text.txt").string();
        std::ofstream(textFile) << textOf(tokens);
        const std::vector<std::int32_t> prompt(tokens.begin(), tokens.begin() + 8);
        // Untimed: the weights' first touch (page faults of the mapping) is no timed run's.
        transformer.logits(prompt, nullptr, prompt.size() / 2);
        {
            // Untimed as well, but reported: the first token generated interleaves the Q4_K weights
            // for the ones after it (kept with the transformer).
            TransformerSession session(transformer);
            session.run(prompt);
            const double before = processStatusKiB("VmRSS:");
            const auto start = std::chrono::steady_clock::now();
            session.run({prompt.back()});
            std::printf(
                "%-7s first generated token %.2f s: interleaved Q4_K copies %.1f MiB, resident memory %+.1f "
                "MiB\n",
                type.c_str(), seconds(start), static_cast<double>(transformer.interleavedBytes()) / (1 << 20),
                (processStatusKiB("VmRSS:") - before) / 1024.0);
        }
        for (const unsigned threads : o.threads) {
            transformer.setThreads(threads);
            for (const std::string& kernel : kernels) {
                useInstructionSet(kernel);
                for (const std::size_t n : o.tokens) {
                    const std::vector<std::int32_t> batch(tokens.begin() + 1, tokens.begin() + 1 + n);
                    Turns turns;
                    for (int r = 0; r < o.repeat; ++r) {
                        const auto theirs =
                            llama ? llama->perplexityPass(path, textFile, n, threads) : std::nullopt;
                        const auto start = std::chrono::steady_clock::now();
                        const Eigen::MatrixXf logits = transformer.logits(batch, nullptr, n / 2);
                        turns.add(seconds(start), theirs);
                    }
                    row(type.c_str(), kernel.c_str(), threads, "pass " + std::to_string(n), n, turns);
                }
                Turns turns;
                for (int r = 0; r < o.repeat; ++r) {
                    const auto theirs =
                        llama ? llama->generation(path, textOf(prompt), o.generated, threads) : std::nullopt;
                    TransformerSession session(transformer);
                    Eigen::MatrixXf step = session.run(prompt);
                    const auto start = std::chrono::steady_clock::now();
                    for (std::size_t g = 0; g < o.generated; ++g) {
                        Eigen::Index next = 0;
                        step.col(step.cols() - 1).maxCoeff(&next);
                        step = session.run({static_cast<std::int32_t>(next)});
                    }
                    turns.add(seconds(start), theirs
                                                  ? std::optional(*theirs * static_cast<double>(o.generated))
                                                  : std::nullopt);
                }
                row(type.c_str(), kernel.c_str(), threads, "generate " + std::to_string(o.generated),
                    o.generated, turns);
            }
        }
        std::printf("  peak RSS %.1f MiB\n", processStatusKiB("VmHWM:") / 1024.0);
        if (std::getenv("ORGAN_BENCH_KEEP") == nullptr) {
            std::filesystem::remove(path);
        }
    }
    return 0;
}
