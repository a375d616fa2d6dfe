// Writes a model with the shape of Llama-3.2-1B (16 blocks, embedding 2048, FFN 8192,
// vocabulary 128 256) with heavy-tailed random weights in Q8_0 and in Q4_K, then reports
// the whole-model Z-measure time at the default sample and at --sample all, the peak
// memory, and the single-core dequantization throughput of every tensor type.
// Usage: bench_measure_1b [FOLDER] | --dequant-only   (needs about 2 GB of free disk there; the models are
// deleted afterwards unless ORGAN_BENCH_KEEP is set)
#include "anatomy.h"
#include "dequant.h"
#include "gguf_writer.h"
#include "model_measure.h"
#include "proc_status.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

using namespace organ;

namespace {

class Noise {
public:
    explicit Noise(std::uint64_t seed) : m_state(seed * 0x9E3779B97F4A7C15ull + 1) {}
    // Approximately Gaussian (sum of four uniforms) with heavier tails, like trained weights.
    float next() {
        float sum = -2.0f;
        for (int i = 0; i < 4; ++i) {
            m_state ^= m_state << 13;
            m_state ^= m_state >> 7;
            m_state ^= m_state << 17;
            sum += static_cast<float>(m_state >> 40) * 0x1.0p-24f;
        }
        return sum * (1.0f + 0.35f * sum * sum);
    }

private:
    std::uint64_t m_state;
};

void putHalf(std::byte* p, float v) {
    const std::uint16_t h = floatToHalf(v);
    std::memcpy(p, &h, 2);
}

void quantizeQ8_0(const float* x, std::byte* out) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) {
        amax = std::max(amax, std::abs(x[j]));
    }
    const float d = amax / 127.0f;
    putHalf(out, d);
    for (int j = 0; j < 32; ++j) {
        out[2 + j] = std::byte(static_cast<std::int8_t>(d == 0 ? 0 : std::lround(x[j] / d)));
    }
}

// A plain (not importance-weighted) Q4_K quantizer: per 32 values a scale and a min.
void quantizeQ4_K(const float* x, std::byte* out) {
    float scales[8];
    float mins[8];
    for (int s = 0; s < 8; ++s) {
        const float* v = x + 32 * s;
        const float lo = std::min(0.0f, *std::min_element(v, v + 32));
        const float hi = *std::max_element(v, v + 32);
        scales[s] = (hi - lo) / 15.0f;
        mins[s] = -lo;
    }
    const float d = *std::max_element(scales, scales + 8) / 63.0f;
    const float dmin = *std::max_element(mins, mins + 8) / 63.0f;
    putHalf(out, d);
    putHalf(out + 2, dmin);
    std::uint8_t sc[8];
    std::uint8_t mn[8];
    for (int s = 0; s < 8; ++s) {
        sc[s] = static_cast<std::uint8_t>(d == 0 ? 0 : std::min(63L, std::lround(scales[s] / d)));
        mn[s] = static_cast<std::uint8_t>(dmin == 0 ? 0 : std::min(63L, std::lround(mins[s] / dmin)));
    }
    auto* packed = reinterpret_cast<std::uint8_t*>(out + 4);
    for (int j = 0; j < 4; ++j) {
        packed[j] = static_cast<std::uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
        packed[j + 4] = static_cast<std::uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
        packed[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
    }
    const float dHalf = halfToFloat(floatToHalf(d));
    const float dminHalf = halfToFloat(floatToHalf(dmin));
    auto* q = reinterpret_cast<std::uint8_t*>(out + 16);
    for (int pair = 0; pair < 4; ++pair) {
        for (int l = 0; l < 32; ++l) {
            std::uint8_t nibbles[2];
            for (int h = 0; h < 2; ++h) {
                const int s = 2 * pair + h;
                const float step = dHalf * sc[s];
                const float value = x[32 * s + l] + dminHalf * mn[s];
                nibbles[h] =
                    static_cast<std::uint8_t>(step == 0 ? 0 : std::clamp(std::lround(value / step), 0L, 15L));
            }
            q[32 * pair + l] = static_cast<std::uint8_t>(nibbles[0] | (nibbles[1] << 4));
        }
    }
}

TensorToWrite randomTensor(const std::string& name, TensorType type, std::uint64_t cols, std::uint64_t rows,
                           std::uint64_t seed) {
    TensorToWrite t;
    t.name = name;
    t.type = type;
    t.nDims = rows == 1 ? 1 : 2;
    t.ne = {cols, rows, 1, 1};
    const auto& traits = traitsOf(type);
    const float scale = type == TensorType::F32 ? 1.0f : 0.02f;
    t.source.generate = [=](std::uint64_t offset, std::span<std::byte> out) {
        Noise noise(seed ^ (offset * 0x2545F4914F6CDD1Dull));
        std::vector<float> values(traits.blockSize);
        for (std::size_t b = 0; b < out.size() / traits.bytesPerBlock; ++b) {
            for (auto& v : values) {
                v = type == TensorType::F32 ? 1.0f + 0.05f * noise.next() : scale * noise.next();
            }
            std::byte* dst = out.data() + b * traits.bytesPerBlock;
            if (type == TensorType::Q8_0) {
                quantizeQ8_0(values.data(), dst);
            } else if (type == TensorType::Q4_K) {
                quantizeQ4_K(values.data(), dst);
            } else {
                std::memcpy(dst, values.data(), 4);
            }
        }
    };
    return t;
}

GgufWriteSpec llama1b(TensorType type) {
    GgufWriteSpec spec;
    spec.set("general.architecture", MetaValue::fromString("llama"));
    spec.set("general.name",
             MetaValue::fromString(std::string("bench-1b-") + std::string(tensorTypeName(type))));
    spec.set("llama.block_count", MetaValue::fromU32(16));
    spec.set("llama.embedding_length", MetaValue::fromU32(2048));
    spec.set("llama.feed_forward_length", MetaValue::fromU32(8192));
    spec.set("llama.attention.head_count", MetaValue::fromU32(32));
    spec.set("llama.attention.head_count_kv", MetaValue::fromU32(8));
    std::uint64_t seed = 1;
    spec.tensors.push_back(randomTensor("token_embd.weight", type, 2048, 128256, seed++));
    spec.tensors.push_back(randomTensor("rope_freqs.weight", TensorType::F32, 32, 1, seed++));
    for (int b = 0; b < 16; ++b) {
        const std::string blk = "blk." + std::to_string(b) + ".";
        spec.tensors.push_back(randomTensor(blk + "attn_norm.weight", TensorType::F32, 2048, 1, seed++));
        spec.tensors.push_back(randomTensor(blk + "attn_q.weight", type, 2048, 2048, seed++));
        spec.tensors.push_back(randomTensor(blk + "attn_k.weight", type, 2048, 512, seed++));
        spec.tensors.push_back(randomTensor(blk + "attn_v.weight", type, 2048, 512, seed++));
        spec.tensors.push_back(randomTensor(blk + "attn_output.weight", type, 2048, 2048, seed++));
        spec.tensors.push_back(randomTensor(blk + "ffn_norm.weight", TensorType::F32, 2048, 1, seed++));
        spec.tensors.push_back(randomTensor(blk + "ffn_gate.weight", type, 2048, 8192, seed++));
        spec.tensors.push_back(randomTensor(blk + "ffn_up.weight", type, 2048, 8192, seed++));
        spec.tensors.push_back(randomTensor(blk + "ffn_down.weight", type, 8192, 2048, seed++));
    }
    spec.tensors.push_back(randomTensor("output_norm.weight", TensorType::F32, 2048, 1, seed++));
    return spec;
}

double seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void measureRun(const GgufModel& model, const ModelAnatomy& anatomy, std::uint64_t sample, unsigned threads) {
    MeasureOptions options;
    options.params.sample = sample;
    options.threads = threads;
    ModelMeasurement m;
    resetPeakResident();
    const long base = processStatusKiB("VmRSS:");
    const auto start = std::chrono::steady_clock::now();
    const JobResult result = measureModel(model, anatomy, options, m);
    const double elapsed = seconds(start);
    std::printf("  measure %-13s %u thread%s  %7.2f s  θ mean %6.2f°  peak RSS %6.1f MiB (+%.1f)%s\n",
                sample == kSampleAll ? "--sample all" : "default", threads, threads == 1 ? " " : "s", elapsed,
                m.model.thetaMean, processStatusKiB("VmHWM:") / 1024.0,
                (processStatusKiB("VmHWM:") - base) / 1024.0, result.isOk() ? "" : result.message.c_str());
}

void dequantThroughput() {
    std::printf("\nsingle-core dequantization throughput (GB/s of source data):\n");
    constexpr std::size_t kBytes = 64u << 20;
    for (const auto& traits : allTensorTypes()) {
        const std::size_t blocks = kBytes / traits.bytesPerBlock;
        std::vector<std::byte> source(blocks * traits.bytesPerBlock);
        Noise noise(7);
        // Bytes in [4, 59]: every half or float scale read from them is a normal number of
        // a plausible size (subnormal scales would time the CPU's slow path, not ours).
        for (std::size_t i = 0; i < source.size(); ++i) {
            source[i] = std::byte(
                static_cast<std::uint8_t>(4 + static_cast<int>(std::abs(noise.next()) * 20.0f) % 56));
        }
        std::vector<float> out(1u << 20);
        const std::size_t blocksPerRun = out.size() / traits.blockSize;
        const auto start = std::chrono::steady_clock::now();
        for (std::size_t b = 0; b + blocksPerRun <= blocks; b += blocksPerRun) {
            dequantizeBlocks(traits.type, source.data() + b * traits.bytesPerBlock, blocksPerRun, out.data());
        }
        const double elapsed = seconds(start);
        std::printf("  %-8s %6.2f GB/s  (%6.2f G values/s)\n", traits.name.data(),
                    source.size() / elapsed / 1e9, blocks * traits.blockSize / elapsed / 1e9);
    }
}

} // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--dequant-only") {
        dequantThroughput();
        return 0;
    }
    const std::string folder = argc > 1 ? argv[1] : std::filesystem::temp_directory_path().string();
    std::printf("cores: %u\n", defaultThreadCount());
    for (TensorType type : {TensorType::Q8_0, TensorType::Q4_K}) {
        const std::string path = folder + "/bench-1b-" + std::string(tensorTypeName(type)) + ".gguf";
        auto start = std::chrono::steady_clock::now();
        const JobResult written = writeGguf(path, llama1b(type));
        if (!written.isOk()) {
            std::fprintf(stderr, "%s\n", written.message.c_str());
            return 1;
        }
        std::printf("%s: %.2f GB written in %.1f s\n", std::filesystem::path(path).filename().c_str(),
                    std::filesystem::file_size(path) / 1e9, seconds(start));
        {
            const auto model = GgufModel::open(path);
            const ModelAnatomy anatomy = analyzeAnatomy(*model);
            measureRun(*model, anatomy, kDefaultSample, defaultThreadCount());
            measureRun(*model, anatomy, kDefaultSample, 1);
            measureRun(*model, anatomy, kSampleAll, defaultThreadCount());
        }
        if (std::getenv("ORGAN_BENCH_KEEP") == nullptr) {
            std::filesystem::remove(path);
        }
    }
    dequantThroughput();
    return 0;
}
