#include "gguf/specimen.h"

#include "gguf/tensor_name.h"

#include "gguf/gguf_writer.h"

#include <cmath>
#include <cstdio>
#include <numbers>
#include <set>

namespace organ {
namespace {

// splitmix64: small, fast and identical on every platform (std's distributions are not).
class Random {
public:
    explicit Random(std::uint64_t seed) : m_state(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (m_state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
    double normal() {
        const double u = uniform();
        const double v = uniform();
        return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * v);
    }
    // Student-t with `dof` degrees of freedom: heavy tails like trained weights.
    double studentT(int dof) {
        double chi2 = 0;
        for (int i = 0; i < dof; ++i) {
            const double z = normal();
            chi2 += z * z;
        }
        return normal() / std::sqrt(chi2 / dof);
    }

private:
    std::uint64_t m_state;
};

std::uint64_t nameHash(const std::string& name) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : name) {
        h = (h ^ c) * 1099511628211ull;
    }
    return h;
}

// A rows × cols matrix (ggml ne = {cols, rows}): low rank plus heavy-tailed noise.
std::vector<float> structuredMatrix(Random& rng, std::uint64_t cols, std::uint64_t rows, unsigned rank,
                                    double noise) {
    std::vector<double> u(rows * rank);
    std::vector<double> v(cols * rank);
    for (auto& x : u) {
        x = rng.normal();
    }
    for (auto& x : v) {
        x = rng.normal();
    }
    const double lowRankScale = 0.08 / std::sqrt(static_cast<double>(rank));
    std::vector<float> out(rows * cols);
    for (std::uint64_t r = 0; r < rows; ++r) {
        for (std::uint64_t c = 0; c < cols; ++c) {
            double x = 0;
            for (unsigned k = 0; k < rank; ++k) {
                x += u[r * rank + k] * v[c * rank + k];
            }
            out[r * cols + c] = static_cast<float>(lowRankScale * x + noise * rng.studentT(4));
        }
    }
    return out;
}

std::vector<float> normWeights(Random& rng, std::uint64_t n, double layerPhase) {
    std::vector<float> out(n);
    for (std::uint64_t i = 0; i < n; ++i) {
        const double smooth = 0.15 * std::sin(layerPhase + 6.0 * std::numbers::pi * i / n);
        out[i] = static_cast<float>(1.0 + smooth + 0.02 * rng.normal());
    }
    return out;
}

struct Vocabulary {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<std::int32_t> types;
};

// <unk>, <s>, </s>, the 256 byte tokens, then pieces: "▁" + common words, letters, digits.
Vocabulary makeVocabulary(std::uint32_t size) {
    Vocabulary vocab;
    std::set<std::string> seen;
    auto add = [&](const std::string& token, std::int32_t type) {
        if (vocab.tokens.size() < size && seen.insert(token).second) {
            vocab.tokens.push_back(token);
            vocab.scores.push_back(type == 1 ? -static_cast<float>(vocab.tokens.size()) : 0.0f);
            vocab.types.push_back(type);
        }
    };
    add("<unk>", 2);
    add("<s>", 3);
    add("</s>", 3);
    for (int b = 0; b < 256; ++b) {
        char text[8];
        std::snprintf(text, sizeof text, "<0x%02X>", b);
        add(text, 6);
    }
    const std::string space = "\xE2\x96\x81";
    static const char* const kWords[] = {
        "the",   "a",      "and",   "to",     "of",   "was",  "he",    "she",    "it",   "in",     "they",
        "that",  "with",   "her",   "his",    "on",   "for",  "you",   "said",   "day",  "one",    "time",
        "upon",  "once",   "there", "little", "girl", "boy",  "big",   "happy",  "saw",  "had",    "very",
        "play",  "mom",    "dog",   "cat",    "tree", "sun",  "ball",  "friend", "went", "wanted", "liked",
        "named", "looked", "is",    "so",     "but",  "not",  "be",    "at",     "all",  "we",     "can",
        "what",  "up",     "out",   "go",     "see",  "new",  "good",  "red",    "blue", "park",   "home",
        "toy",   "bird",   "fish",  "box",    "car",  "sky",  "water", "house",  "man",  "old",    "nice",
        "fun",   "sad",    "help",  "run",    "jump", "sing", "read",  "love",   "find", "make",   "come",
        "know",  "like",   "get",   "look",   "want", "give", "tell",  "ask",    "work", "feel",   "try",
        "leave", "call",   "from",  "this",   "by",   "an",   "or",    "were",   "are",
    };
    for (const char* word : kWords) {
        add(space + word, 1);
    }
    add(space, 1);
    for (char c = 'a'; c <= 'z'; ++c) {
        add(std::string(1, c), 1);
        add(space + std::string(1, c), 1);
    }
    for (char c = 'A'; c <= 'Z'; ++c) {
        add(std::string(1, c), 1);
    }
    for (const char* piece : {"0", "1", "2", "3", "4",  "5", "6", "7", "8", "9", ".",
                              ",", "!", "?", "'", "\"", "-", ":", ";", "(", ")"}) {
        add(piece, 1);
    }
    for (char a = 'a'; vocab.tokens.size() < size && a <= 'z'; ++a) {
        for (const char* tail : {"e", "a", "o", "i", "n", "t", "s", "r"}) {
            add(std::string(1, a) + tail, 1);
        }
    }
    return vocab;
}

TensorToWrite floatTensor(std::string name, std::vector<std::uint64_t> dims, std::vector<float> values) {
    TensorToWrite t;
    t.name = std::move(name);
    t.type = TensorType::F32;
    t.nDims = static_cast<std::uint32_t>(dims.size());
    for (std::size_t d = 0; d < dims.size(); ++d) {
        t.ne[d] = dims[d];
    }
    auto buffer = std::make_shared<std::vector<float>>(std::move(values));
    t.source.bytes = std::as_bytes(std::span<const float>(*buffer));
    t.source.owner = std::move(buffer);
    return t;
}

} // namespace

JobResult writeSpecimen(const std::string& path, std::uint64_t seed, const SpecimenShape& shape,
                        const ProgressFn& progress, const StopToken* stop) {
    const std::uint32_t headDim = shape.embedding / shape.heads;
    const std::uint64_t kvWidth = static_cast<std::uint64_t>(headDim) * shape.kvHeads;
    const Vocabulary vocab = makeVocabulary(shape.vocabulary);

    GgufWriteSpec spec;
    spec.set("general.architecture", MetaValue::fromString("llama"));
    spec.set("general.type", MetaValue::fromString("model"));
    spec.set("general.name", MetaValue::fromString("organ-specimen"));
    spec.set("general.description",
             MetaValue::fromString("Organ Workbench specimen, seed " + std::to_string(seed)));
    spec.set("general.file_type", MetaValue::fromU32(0));
    spec.set("llama.vocab_size", MetaValue::fromU32(static_cast<std::uint32_t>(vocab.tokens.size())));
    spec.set("llama.context_length", MetaValue::fromU32(shape.context));
    spec.set("llama.embedding_length", MetaValue::fromU32(shape.embedding));
    spec.set("llama.block_count", MetaValue::fromU32(shape.blocks));
    spec.set("llama.feed_forward_length", MetaValue::fromU32(shape.feedForward));
    spec.set("llama.rope.dimension_count", MetaValue::fromU32(headDim));
    spec.set("llama.rope.freq_base", MetaValue::fromF32(10000.0f));
    spec.set("llama.attention.head_count", MetaValue::fromU32(shape.heads));
    spec.set("llama.attention.head_count_kv", MetaValue::fromU32(shape.kvHeads));
    spec.set("llama.attention.layer_norm_rms_epsilon", MetaValue::fromF32(1e-5f));
    spec.set("tokenizer.ggml.model", MetaValue::fromString("llama"));
    spec.set("tokenizer.ggml.pre", MetaValue::fromString("default"));
    spec.set("tokenizer.ggml.tokens", MetaValue::fromStrings(vocab.tokens));
    spec.set("tokenizer.ggml.scores", MetaValue::fromF32s(vocab.scores));
    spec.set("tokenizer.ggml.token_type", MetaValue::fromI32s(vocab.types));
    spec.set("tokenizer.ggml.bos_token_id", MetaValue::fromU32(1));
    spec.set("tokenizer.ggml.eos_token_id", MetaValue::fromU32(2));
    spec.set("tokenizer.ggml.unknown_token_id", MetaValue::fromU32(0));
    spec.set("tokenizer.ggml.add_bos_token", MetaValue::fromBool(true));
    spec.set("tokenizer.ggml.add_eos_token", MetaValue::fromBool(false));

    const std::uint64_t e = shape.embedding;
    const std::uint64_t f = shape.feedForward;
    const std::uint64_t v = vocab.tokens.size();
    auto rngFor = [seed](const std::string& name) {
        return Random(seed * 0x9E3779B97F4A7C15ull ^ nameHash(name));
    };
    auto matrix = [&](const std::string& name, std::uint64_t cols, std::uint64_t rows, unsigned rank,
                      double noise) {
        Random rng = rngFor(name);
        spec.tensors.push_back(
            floatTensor(name, {cols, rows}, structuredMatrix(rng, cols, rows, rank, noise)));
    };
    auto norm = [&](const std::string& name, double phase) {
        Random rng = rngFor(name);
        spec.tensors.push_back(floatTensor(name, {e}, normWeights(rng, e, phase)));
    };

    matrix("token_embd.weight", e, v, 12, 0.02);
    for (std::uint32_t b = 0; b < shape.blocks; ++b) {
        auto blk = [b](std::string_view suffix) { return layerTensorName(b, suffix); };
        // Deeper layers: more structure (higher rank), less noise, as trained models tend to show.
        const unsigned rank = 2 + 2 * b;
        const double noise = 0.03 / (1.0 + 0.5 * b);
        norm(blk("attn_norm.weight"), 0.7 * b);
        matrix(blk("attn_q.weight"), e, e, rank + 2, noise);
        matrix(blk("attn_k.weight"), e, kvWidth, rank + 2, noise);
        matrix(blk("attn_v.weight"), e, kvWidth, rank, noise * 1.5);
        matrix(blk("attn_output.weight"), e, e, rank, noise);
        norm(blk("ffn_norm.weight"), 0.7 * b + 1.0);
        matrix(blk("ffn_gate.weight"), e, f, rank + 1, noise);
        matrix(blk("ffn_up.weight"), e, f, rank + 1, noise);
        matrix(blk("ffn_down.weight"), f, e, rank, noise);
    }
    norm("output_norm.weight", 3.0);
    matrix("output.weight", e, v, 12, 0.02);
    return writeGguf(path, spec, progress, stop);
}

} // namespace organ
