// Opens a file with the layout of a 70B model (80 blocks, 723 tensors in Q4_K/Q6_K, a
// 128 256-token vocabulary with merges) whose tensor data is a sparse hole, and reports
// the time and memory to open it and classify its anatomy. A second file with the same
// header and a 4 times wider embedding (about 250 GB) shows that memory does not grow
// with the file size.
#include "anatomy.h"
#include "gguf_model.h"
#include "gguf_writer.h"
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

namespace {

std::string token(std::size_t i) {
    static const char* const pieces[] = {"the", "ing", "er", "Ġ", "tion", "al", "re", "on", "st", "ed"};
    std::string t;
    for (std::size_t x = i + 1; x != 0; x /= 10) {
        t += pieces[x % 10];
    }
    return t;
}

GgufWriteSpec seventyB(std::uint64_t scale) {
    const std::uint64_t e = 8192 * scale;
    const std::uint64_t f = 28672;
    const std::uint64_t kv = 1024;
    const std::uint64_t vocab = 128256;
    GgufWriteSpec spec;
    spec.set("general.architecture", MetaValue::fromString("llama"));
    spec.set("general.name", MetaValue::fromString("bench-70b-layout"));
    spec.set("general.file_type", MetaValue::fromU32(15));
    spec.set("general.quantization_version", MetaValue::fromU32(2));
    spec.set("llama.block_count", MetaValue::fromU32(80));
    spec.set("llama.context_length", MetaValue::fromU32(131072));
    spec.set("llama.embedding_length", MetaValue::fromU32(static_cast<std::uint32_t>(e)));
    spec.set("llama.feed_forward_length", MetaValue::fromU32(static_cast<std::uint32_t>(f)));
    spec.set("llama.attention.head_count", MetaValue::fromU32(64));
    spec.set("llama.attention.head_count_kv", MetaValue::fromU32(8));
    spec.set("llama.rope.freq_base", MetaValue::fromF32(500000.0f));
    spec.set("llama.attention.layer_norm_rms_epsilon", MetaValue::fromF32(1e-5f));
    spec.set("tokenizer.ggml.model", MetaValue::fromString("gpt2"));
    spec.set("tokenizer.ggml.pre", MetaValue::fromString("llama-bpe"));
    std::vector<std::string> tokens(vocab);
    std::vector<std::int32_t> types(vocab, 1);
    for (std::size_t i = 0; i < vocab; ++i) {
        tokens[i] = token(i);
    }
    std::vector<std::string> merges(280147);
    for (std::size_t i = 0; i < merges.size(); ++i) {
        merges[i] = token(i % 5000) + " " + token(i / 5000);
    }
    spec.set("tokenizer.ggml.tokens", MetaValue::fromStrings(tokens));
    spec.set("tokenizer.ggml.token_type", MetaValue::fromI32s(types));
    spec.set("tokenizer.ggml.merges", MetaValue::fromStrings(merges));
    spec.set("tokenizer.ggml.bos_token_id", MetaValue::fromU32(128000));
    spec.set("tokenizer.ggml.eos_token_id", MetaValue::fromU32(128009));
    auto tensor = [&](std::string name, TensorType type, std::vector<std::uint64_t> dims) {
        TensorToWrite t;
        t.name = std::move(name);
        t.type = type;
        t.nDims = static_cast<std::uint32_t>(dims.size());
        std::copy(dims.begin(), dims.end(), t.ne.begin());
        t.source.generate = [](std::uint64_t, std::span<std::byte>) {}; // never called: data stays a hole
        spec.tensors.push_back(std::move(t));
    };
    tensor("token_embd.weight", TensorType::Q4_K, {e, vocab});
    for (int b = 0; b < 80; ++b) {
        const std::string blk = "blk." + std::to_string(b) + ".";
        tensor(blk + "attn_norm.weight", TensorType::F32, {e});
        tensor(blk + "attn_q.weight", TensorType::Q4_K, {e, e});
        tensor(blk + "attn_k.weight", TensorType::Q4_K, {e, kv});
        tensor(blk + "attn_v.weight", TensorType::Q6_K, {e, kv});
        tensor(blk + "attn_output.weight", TensorType::Q4_K, {e, e});
        tensor(blk + "ffn_norm.weight", TensorType::F32, {e});
        tensor(blk + "ffn_gate.weight", TensorType::Q4_K, {e, f});
        tensor(blk + "ffn_up.weight", TensorType::Q4_K, {e, f});
        tensor(blk + "ffn_down.weight", TensorType::Q6_K, {f, e});
    }
    tensor("output_norm.weight", TensorType::F32, {e});
    tensor("output.weight", TensorType::Q6_K, {e, vocab});
    return spec;
}

// Header written for real, the data left as a hole by ftruncate.
std::uint64_t writeSparse(const std::string& path, const GgufWriteSpec& spec) {
    const GgufLayout layout = layoutGguf(spec, path);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 ||
        ::write(fd, layout.header.data(), layout.header.size()) !=
            static_cast<ssize_t>(layout.header.size()) ||
        ::ftruncate(fd, static_cast<off_t>(layout.fileSize)) != 0 || ::close(fd) != 0) {
        std::perror(path.c_str());
        std::exit(1);
    }
    return layout.fileSize;
}

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
    const std::uint64_t sizeA = writeSparse(a, seventyB(1));
    const std::uint64_t sizeB = writeSparse(b, seventyB(4));
    std::printf("header %.1f MiB (tokenizer included); tensor data is a sparse hole\n",
                GgufFile::open(a)->headerSize() / 1048576.0);
    measure(a, sizeA);
    measure(b, sizeB);
    std::filesystem::remove(a);
    std::filesystem::remove(b);
    return 0;
}
