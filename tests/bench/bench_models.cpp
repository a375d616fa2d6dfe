#include "bench_models.h"

#include "quant/dequant.h"
#include "quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <numbers>
#include <span>
#include <unistd.h>
#include <vector>

namespace organ::bench {

double threadSeconds() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

namespace {

std::string token(std::size_t i) {
    static const char* const pieces[] = {"the", "ing", "er", "Ġ", "tion", "al", "re", "on", "st", "ed"};
    std::string t;
    for (std::size_t x = i + 1; x != 0; x /= 10) {
        t += pieces[x % 10];
    }
    return t;
}

void putHalf(std::byte* p, float v) {
    const std::uint16_t h = floatToHalf(v);
    std::memcpy(p, &h, 2);
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

// A plain Q6_K quantizer: per 16 values a signed 8-bit scale, levels −32 … 31.
void quantizeQ6_K(const float* x, std::byte* out) {
    float scales[16];
    for (int j = 0; j < 16; ++j) {
        float amax = 0;
        for (int k = 16 * j; k < 16 * j + 16; ++k) {
            amax = std::max(amax, std::abs(x[k]));
        }
        scales[j] = amax / 31.0f;
    }
    const float d = *std::max_element(scales, scales + 16) / 127.0f;
    auto* ql = reinterpret_cast<std::uint8_t*>(out);
    auto* qh = reinterpret_cast<std::uint8_t*>(out + 128);
    auto* sc = reinterpret_cast<std::int8_t*>(out + 192);
    std::memset(out, 0, 192);
    putHalf(out + 208, d);
    const float dHalf = halfToFloat(floatToHalf(d));
    for (int j = 0; j < 16; ++j) {
        sc[j] = static_cast<std::int8_t>(d == 0 ? 0 : std::min(127L, std::lround(scales[j] / d)));
    }
    for (int e = 0; e < 256; ++e) {
        const float step = dHalf * sc[e / 16];
        const int level = step == 0 ? 0 : static_cast<int>(std::clamp(std::lround(x[e] / step), -32L, 31L));
        const int q = level + 32;
        const int half = e / 128;
        const int run = (e % 128) / 32;
        const int l = e % 32;
        ql[64 * half + l + 32 * (run % 2)] |= static_cast<std::uint8_t>((q & 0xF) << (4 * (run / 2)));
        qh[32 * half + l] |= static_cast<std::uint8_t>((q >> 4) << (2 * run));
    }
}

// `variant` 0: the model's own values; another: those values moved by a tenth of their scale in a
// direction of the variant's own, as a fine-tune moves its base's.
TensorToWrite randomTensor(const std::string& name, TensorType type, std::uint64_t cols, std::uint64_t rows,
                           std::uint64_t seed, std::uint64_t variant = 0) {
    TensorToWrite t;
    t.name = name;
    t.type = type;
    t.nDims = rows == 1 ? 1 : 2;
    t.ne = {cols, rows, 1, 1};
    const auto& traits = traitsOf(type);
    const float scale = type == TensorType::F32 ? 1.0f : 0.02f;
    // Each block from a noise seeded by its index, so that the bytes do not depend on how the
    // writer cuts the tensor into chunks (which need not fall on block boundaries).
    t.source.generate = [=](std::uint64_t offset, std::span<std::byte> out) {
        const std::uint64_t blockBytes = traits.bytesPerBlock;
        std::vector<float> values(traits.blockSize);
        std::vector<std::byte> block(blockBytes);
        for (std::uint64_t at = offset; at < offset + out.size();) {
            const std::uint64_t index = at / blockBytes;
            Noise noise(seed ^ (index * 0x2545F4914F6CDD1Dull));
            Noise shift((seed ^ (index * 0x2545F4914F6CDD1Dull)) + variant * 0x9E3779B97F4A7C15ull);
            for (auto& v : values) {
                v = type == TensorType::F32 ? 1.0f + 0.05f * noise.next() : scale * noise.next();
                if (variant != 0) {
                    v += 0.1f * (type == TensorType::F32 ? 0.05f : scale) * shift.next();
                }
            }
            if (type == TensorType::Q4_K) {
                quantizeQ4_K(values.data(), block.data());
            } else if (type == TensorType::Q6_K) {
                quantizeQ6_K(values.data(), block.data());
            } else {
                quantizeBlocks(type, values.data(), 1, block.data());
            }
            const std::uint64_t from = at - index * blockBytes;
            const std::uint64_t count = std::min(blockBytes - from, offset + out.size() - at);
            std::memcpy(out.data() + (at - offset), block.data() + from, count);
            at += count;
        }
    };
    return t;
}

} // namespace

float Noise::next() {
    float sum = -2.0f;
    for (int i = 0; i < 4; ++i) {
        m_state ^= m_state << 13;
        m_state ^= m_state >> 7;
        m_state ^= m_state << 17;
        sum += static_cast<float>(m_state >> 40) * 0x1.0p-24f;
    }
    return sum * (1.0f + 0.35f * sum * sum);
}

// A tensor whose data is never written: in a sparse file it stays a hole.
static void addHoleTensor(GgufWriteSpec& spec, std::string name, TensorType type,
                          const std::vector<std::uint64_t>& dims) {
    TensorToWrite t;
    t.name = std::move(name);
    t.type = type;
    t.nDims = static_cast<std::uint32_t>(dims.size());
    std::copy(dims.begin(), dims.end(), t.ne.begin());
    t.source.generate = [](std::uint64_t, std::span<std::byte>) {}; // never called
    spec.tensors.push_back(std::move(t));
}

// `vocab` made-up BPE tokens and `merges` merges: a tokenizer as large as a real one.
static void setMadeUpVocabulary(GgufWriteSpec& spec, std::size_t vocab, std::size_t mergeCount) {
    std::vector<std::string> tokens(vocab);
    for (std::size_t i = 0; i < vocab; ++i) {
        tokens[i] = token(i);
    }
    std::vector<std::string> merges(mergeCount);
    for (std::size_t i = 0; i < merges.size(); ++i) {
        merges[i] = token(i % 5000) + " " + token(i / 5000);
    }
    spec.set("tokenizer.ggml.tokens", MetaValue::fromStrings(tokens));
    spec.set("tokenizer.ggml.token_type", MetaValue::fromI32s(std::vector<std::int32_t>(vocab, 1)));
    spec.set("tokenizer.ggml.merges", MetaValue::fromStrings(merges));
}

GgufWriteSpec seventyBLayout(std::uint64_t scale) {
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
    setMadeUpVocabulary(spec, vocab, 280147);
    spec.set("tokenizer.ggml.bos_token_id", MetaValue::fromU32(128000));
    spec.set("tokenizer.ggml.eos_token_id", MetaValue::fromU32(128009));
    auto tensor = [&](std::string name, TensorType type, std::vector<std::uint64_t> dims) {
        addHoleTensor(spec, std::move(name), type, dims);
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
GgufWriteSpec kimiK2Layout() {
    const std::uint64_t e = 7168;
    const std::uint64_t vocab = 163840;
    const std::uint64_t experts = 384;
    const std::uint64_t expertFf = 2048;
    const std::uint64_t denseFf = 18432;
    const std::uint64_t heads = 64;
    GgufWriteSpec spec;
    spec.set("general.architecture", MetaValue::fromString("deepseek2"));
    spec.set("general.name", MetaValue::fromString("bench-kimi-k2-layout"));
    spec.set("general.file_type", MetaValue::fromU32(15));
    spec.set("general.quantization_version", MetaValue::fromU32(2));
    spec.set("deepseek2.block_count", MetaValue::fromU32(61));
    spec.set("deepseek2.context_length", MetaValue::fromU32(131072));
    spec.set("deepseek2.embedding_length", MetaValue::fromU32(static_cast<std::uint32_t>(e)));
    spec.set("deepseek2.feed_forward_length", MetaValue::fromU32(static_cast<std::uint32_t>(denseFf)));
    spec.set("deepseek2.expert_feed_forward_length",
             MetaValue::fromU32(static_cast<std::uint32_t>(expertFf)));
    spec.set("deepseek2.expert_count", MetaValue::fromU32(static_cast<std::uint32_t>(experts)));
    spec.set("deepseek2.expert_used_count", MetaValue::fromU32(8));
    spec.set("deepseek2.expert_shared_count", MetaValue::fromU32(1));
    spec.set("deepseek2.leading_dense_block_count", MetaValue::fromU32(1));
    spec.set("deepseek2.attention.head_count", MetaValue::fromU32(static_cast<std::uint32_t>(heads)));
    spec.set("deepseek2.attention.head_count_kv", MetaValue::fromU32(static_cast<std::uint32_t>(heads)));
    spec.set("deepseek2.attention.q_lora_rank", MetaValue::fromU32(1536));
    spec.set("deepseek2.attention.kv_lora_rank", MetaValue::fromU32(512));
    spec.set("deepseek2.attention.key_length", MetaValue::fromU32(192));
    spec.set("deepseek2.attention.value_length", MetaValue::fromU32(128));
    spec.set("deepseek2.rope.dimension_count", MetaValue::fromU32(64));
    spec.set("deepseek2.rope.freq_base", MetaValue::fromF32(50000.0f));
    spec.set("deepseek2.attention.layer_norm_rms_epsilon", MetaValue::fromF32(1e-6f));
    spec.set("tokenizer.ggml.model", MetaValue::fromString("gpt2"));
    spec.set("tokenizer.ggml.pre", MetaValue::fromString("kimi-k2"));
    setMadeUpVocabulary(spec, vocab, 163328);
    auto tensor = [&](std::string name, TensorType type, std::vector<std::uint64_t> dims) {
        addHoleTensor(spec, std::move(name), type, dims);
    };
    tensor("token_embd.weight", TensorType::Q4_K, {e, vocab});
    for (int b = 0; b < 61; ++b) {
        const std::string blk = "blk." + std::to_string(b) + ".";
        tensor(blk + "attn_norm.weight", TensorType::F32, {e});
        tensor(blk + "attn_q_a_norm.weight", TensorType::F32, {1536});
        tensor(blk + "attn_kv_a_norm.weight", TensorType::F32, {512});
        tensor(blk + "attn_q_a.weight", TensorType::Q4_K, {e, 1536});
        tensor(blk + "attn_q_b.weight", TensorType::Q4_K, {1536, heads * 192});
        tensor(blk + "attn_kv_a_mqa.weight", TensorType::Q6_K, {e, 576});
        tensor(blk + "attn_kv_b.weight", TensorType::Q6_K, {512, heads * 256});
        tensor(blk + "attn_output.weight", TensorType::Q4_K, {heads * 128, e});
        tensor(blk + "ffn_norm.weight", TensorType::F32, {e});
        if (b == 0) {
            tensor(blk + "ffn_gate.weight", TensorType::Q4_K, {e, denseFf});
            tensor(blk + "ffn_up.weight", TensorType::Q4_K, {e, denseFf});
            tensor(blk + "ffn_down.weight", TensorType::Q6_K, {denseFf, e});
            continue;
        }
        tensor(blk + "ffn_gate_inp.weight", TensorType::F32, {e, experts});
        tensor(blk + "exp_probs_b.bias", TensorType::F32, {experts});
        tensor(blk + "ffn_gate_exps.weight", TensorType::Q4_K, {e, expertFf, experts});
        tensor(blk + "ffn_up_exps.weight", TensorType::Q4_K, {e, expertFf, experts});
        tensor(blk + "ffn_down_exps.weight", TensorType::Q4_K, {expertFf, e, experts});
        tensor(blk + "ffn_gate_shexp.weight", TensorType::Q4_K, {e, expertFf});
        tensor(blk + "ffn_up_shexp.weight", TensorType::Q4_K, {e, expertFf});
        tensor(blk + "ffn_down_shexp.weight", TensorType::Q6_K, {expertFf, e});
    }
    tensor("output_norm.weight", TensorType::F32, {e});
    tensor("output.weight", TensorType::Q6_K, {e, vocab});
    return spec;
}

std::vector<GgufWriteSpec> splitSpec(const GgufWriteSpec& spec, unsigned parts) {
    std::vector<GgufWriteSpec> out(parts);
    const std::size_t count = spec.tensors.size();
    for (unsigned part = 0; part < parts; ++part) {
        if (part == 0) {
            out[part].metadata = spec.metadata;
        }
        out[part].set("split.no", MetaValue::fromU16(static_cast<std::uint16_t>(part)));
        out[part].set("split.count", MetaValue::fromU16(static_cast<std::uint16_t>(parts)));
        out[part].set("split.tensors.count", MetaValue::fromI32(static_cast<std::int32_t>(count)));
        for (std::size_t i = count * part / parts; i < count * (part + 1) / parts; ++i) {
            out[part].tensors.push_back(spec.tensors[i]);
        }
    }
    return out;
}

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

// Llama 3's RoPE frequency factors (scaling 32, low 1, high 4, original context 8192; base
// 500 000, 64 rotated values), as its converter writes them to rope_freqs.weight.
static TensorToWrite llama3RopeFactors() {
    static const std::vector<float> factors = [] {
        std::vector<float> f(32);
        const double lowWavelength = 8192.0 / 1.0;
        const double highWavelength = 8192.0 / 4.0;
        for (std::size_t i = 0; i < f.size(); ++i) {
            const double wavelength = 2 * std::numbers::pi * std::pow(500000.0, 2.0 * double(i) / 64.0);
            if (wavelength < highWavelength) {
                f[i] = 1.0f;
            } else if (wavelength > lowWavelength) {
                f[i] = 32.0f;
            } else {
                const double smooth = (8192.0 / wavelength - 1.0) / (4.0 - 1.0);
                f[i] = static_cast<float>(1.0 / ((1 - smooth) / 32.0 + smooth));
            }
        }
        return f;
    }();
    TensorToWrite t;
    t.name = "rope_freqs.weight";
    t.ne = {factors.size(), 1, 1, 1};
    t.source.bytes = std::as_bytes(std::span<const float>(factors));
    return t;
}

GgufWriteSpec llama1bShape(TensorType type, std::uint32_t blocks, std::uint64_t variant) {
    return llama1bShapeOf(
        std::string(tensorTypeName(type)), [type](std::string_view, int) { return type; }, blocks, variant);
}

// As llama-quantize's Q4_K_M: Q4_K but the value and FFN-down weights of the first and last
// eighth of the blocks and of every third between (Q6_K), and the tied embedding (Q6_K, as the
// output it also is).
GgufWriteSpec llama1bShapeQ4KM() {
    return llama1bShapeOf("Q4_K_M", [](std::string_view tensor, int block) {
        const bool moreBits = block < 2 || block >= 14 || (block - 2) % 3 == 2;
        if (tensor == "token_embd" || ((tensor == "attn_v" || tensor == "ffn_down") && moreBits)) {
            return TensorType::Q6_K;
        }
        return TensorType::Q4_K;
    });
}

GgufWriteSpec llama1bShapeOf(const std::string& typeName,
                             const std::function<TensorType(std::string_view tensor, int block)>& typeOf,
                             std::uint32_t blocks, std::uint64_t variant) {
    GgufWriteSpec spec;
    spec.set("general.architecture", MetaValue::fromString("llama"));
    spec.set("general.name", MetaValue::fromString("bench-1b-" + typeName));
    spec.set("llama.block_count", MetaValue::fromU32(blocks));
    spec.set("llama.embedding_length", MetaValue::fromU32(2048));
    spec.set("llama.feed_forward_length", MetaValue::fromU32(8192));
    spec.set("llama.attention.head_count", MetaValue::fromU32(32));
    spec.set("llama.attention.head_count_kv", MetaValue::fromU32(8));
    spec.set("llama.context_length", MetaValue::fromU32(131072));
    spec.set("llama.rope.freq_base", MetaValue::fromF32(500000.0f));
    spec.set("llama.attention.layer_norm_rms_epsilon", MetaValue::fromF32(1e-5f));
    spec.set("llama.rope.dimension_count", MetaValue::fromU32(64));
    // A SentencePiece-style vocabulary of the same size (control tokens, the 256 byte tokens,
    // then made-up pieces), so that llama.cpp loads the file too and runs it on a text.
    std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
    std::vector<std::int32_t> types{2, 3, 3};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        tokens.emplace_back(name);
        types.push_back(6);
    }
    while (tokens.size() < 128256) {
        tokens.push_back("\xE2\x96\x81t" + std::to_string(tokens.size()));
        types.push_back(1);
    }
    std::vector<float> scores(tokens.size());
    for (std::size_t i = 0; i < scores.size(); ++i) {
        scores[i] = -static_cast<float>(i);
    }
    spec.set("tokenizer.ggml.model", MetaValue::fromString("llama"));
    spec.set("tokenizer.ggml.tokens", MetaValue::fromStrings(tokens));
    spec.set("tokenizer.ggml.scores", MetaValue::fromF32s(scores));
    spec.set("tokenizer.ggml.token_type", MetaValue::fromI32s(types));
    spec.set("tokenizer.ggml.bos_token_id", MetaValue::fromU32(1));
    spec.set("tokenizer.ggml.eos_token_id", MetaValue::fromU32(2));
    std::uint64_t seed = 1;
    spec.tensors.push_back(
        randomTensor("token_embd.weight", typeOf("token_embd", -1), 2048, 128256, seed++, variant));
    spec.tensors.push_back(llama3RopeFactors());
    for (std::uint32_t b = 0; b < blocks; ++b) {
        const std::string blk = "blk." + std::to_string(b) + ".";
        spec.tensors.push_back(
            randomTensor(blk + "attn_norm.weight", TensorType::F32, 2048, 1, seed++, variant));
        spec.tensors.push_back(
            randomTensor(blk + "attn_q.weight", typeOf("attn_q", b), 2048, 2048, seed++, variant));
        spec.tensors.push_back(
            randomTensor(blk + "attn_k.weight", typeOf("attn_k", b), 2048, 512, seed++, variant));
        spec.tensors.push_back(
            randomTensor(blk + "attn_v.weight", typeOf("attn_v", b), 2048, 512, seed++, variant));
        spec.tensors.push_back(
            randomTensor(blk + "attn_output.weight", typeOf("attn_output", b), 2048, 2048, seed++, variant));
        spec.tensors.push_back(
            randomTensor(blk + "ffn_norm.weight", TensorType::F32, 2048, 1, seed++, variant));
        spec.tensors.push_back(
            randomTensor(blk + "ffn_gate.weight", typeOf("ffn_gate", b), 2048, 8192, seed++, variant));
        spec.tensors.push_back(
            randomTensor(blk + "ffn_up.weight", typeOf("ffn_up", b), 2048, 8192, seed++, variant));
        spec.tensors.push_back(
            randomTensor(blk + "ffn_down.weight", typeOf("ffn_down", b), 8192, 2048, seed++, variant));
    }
    spec.tensors.push_back(randomTensor("output_norm.weight", TensorType::F32, 2048, 1, seed++, variant));
    return spec;
}

} // namespace organ::bench
