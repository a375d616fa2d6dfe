#include "vitals/forward.h"

#include "anatomy/loader_rules.h"
#include "gguf/tensor_name.h"
#include "quant/dequant.h"
#include "quant/f16_dot.h"
#include "support/errors.h"
#include "support/system_memory.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "vitals/tokenizer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace organ {
namespace {

// A product's output is fresh memory written once: the logits of 512 tokens over a 128k
// vocabulary are 262 MB. In 2 MiB pages it takes 128 page faults where 4 KiB ones take 64 000,
// which cost more than the product's own writes.
void preferLargePages(void* data, std::size_t bytes) {
#ifdef __linux__
    constexpr std::size_t kLarge = 4u << 20;
    if (bytes < kLarge) {
        return;
    }
    const auto start = (reinterpret_cast<std::uintptr_t>(data) + 4095) / 4096 * 4096;
    const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) / 4096 * 4096;
    // Advice only: where the kernel takes none, the pages are small.
    ::madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);
#else
    (void)data;
    (void)bytes;
#endif
}

// m made rows × columns, in the memory it has when it holds as many values (Eigen keeps it then).
void made(Eigen::MatrixXf& m, Eigen::Index rows, Eigen::Index columns) {
    const bool fresh = m.size() != rows * columns;
    m.resize(rows, columns);
    if (fresh) {
        preferLargePages(m.data(), static_cast<std::size_t>(m.size()) * sizeof(float));
    }
}

// Calls block(first, count, lowest, seen) for the n queries that follow `past` cached positions, 32
// at a time: `seen`, the keys the block's last query sees (causal attention); `lowest`, the first
// key its first query sees in a sliding window of `window` keys (0: none), rounded down to a
// multiple of 8 so that every key keeps its lane in the sums over keys.
template <class Block>
void forCausalBlocks(Eigen::Index past, Eigen::Index n, Eigen::Index window, Block block) {
    constexpr Eigen::Index kQueries = 32;
    for (Eigen::Index first = 0; first < n; first += kQueries) {
        const Eigen::Index count = std::min(kQueries, n - first);
        const Eigen::Index lowest =
            window > 0 ? std::max<Eigen::Index>(0, past + first + 1 - window) / 8 * 8 : 0;
        block(first, count, lowest, past + first + count);
    }
}

} // namespace

Transformer::Transformer(ModelWeights weights)
    : m_weights(std::move(weights)),
      m_pool(std::make_unique<WorkerPool>(std::max(1u, std::thread::hardware_concurrency()))) {
    const std::string& label = m_weights.label();
    const std::string arch = m_weights.architecture();
    if (arch != "llama" && arch != "qwen2" && arch != "phi3" && arch != "gemma2" && arch != "gemma3" &&
        arch != "gpt2") {
        throw VitalsUnavailable(label + ": vital signs are not available for architecture '" +
                                escapeText(arch) + "' (so far: llama, qwen2, phi3, gemma2, gemma3, gpt2)");
    }
    auto required = [&](std::string_view key) {
        const auto v = m_weights.archValue(key);
        if (!v || *v == 0 || *v > (1u << 20)) {
            throw FormatError(label + ": " + arch + "." + std::string(key) + " is missing or out of range");
        }
        return static_cast<std::uint32_t>(*v);
    };
    auto real = [&](std::string_view key, double fallback) {
        const MetaValue* v = m_weights.find(arch + "." + std::string(key));
        return v ? v->asFloat().value_or(fallback) : fallback;
    };
    m_shape.architecture = arch;
    m_shape.embedding = required("embedding_length");
    m_shape.blocks = required("block_count");
    // llama.cpp keeps its per-layer settings in arrays of kLlamaMaxLayers: a deeper model is no
    // model it runs (and its keys, values and hidden states would grow with the declared count).
    if (m_shape.blocks > kLlamaMaxLayers) {
        throw FormatError(label + ": " + arch + ".block_count is " + std::to_string(m_shape.blocks) +
                          "; llama.cpp runs at most " + std::to_string(kLlamaMaxLayers) + " blocks");
    }
    m_shape.heads = required("attention.head_count");
    m_shape.kvHeads =
        m_weights.archValue("attention.head_count_kv") ? required("attention.head_count_kv") : m_shape.heads;
    if (m_shape.embedding % m_shape.heads != 0 || m_shape.heads % m_shape.kvHeads != 0) {
        throw FormatError(
            label + ": " + std::to_string(m_shape.heads) + " heads (" + std::to_string(m_shape.kvHeads) +
            " for keys and values) do not divide an embedding of " + std::to_string(m_shape.embedding));
    }
    m_shape.headSize = m_weights.archValue("attention.key_length") ? required("attention.key_length")
                                                                   : m_shape.embedding / m_shape.heads;
    m_shape.ropeDims =
        m_weights.archValue("rope.dimension_count") ? required("rope.dimension_count") : m_shape.headSize;
    if (m_shape.ropeDims > m_shape.headSize || m_shape.ropeDims % 2 != 0) {
        throw FormatError(label + ": rope.dimension_count " + std::to_string(m_shape.ropeDims) +
                          " does not fit a head of " + std::to_string(m_shape.headSize));
    }
    m_shape.ropeBase = real("rope.freq_base", 10000.0);
    m_shape.rmsEpsilon = arch == "gpt2" ? real("attention.layer_norm_epsilon", 1e-5)
                                        : real("attention.layer_norm_rms_epsilon", 1e-5);
    // NaN, infinite or not positive: every output would be NaN, a perplexity that means nothing.
    for (const auto& [what, value] :
         {std::pair("the norm epsilon", m_shape.rmsEpsilon), std::pair("rope.freq_base", m_shape.ropeBase)}) {
        if (!(value > 0) || !std::isfinite(value)) {
            throw FormatError(label + ": " + what + " is " + std::to_string(value) +
                              "; it must be a positive number");
        }
    }
    const ModelWeights::Tensor* embed = m_weights.tensor("token_embd.weight");
    if (embed == nullptr || embed->nDims != 2 || embed->ne[0] != m_shape.embedding) {
        throw VitalsUnavailable(label + ": vital signs need token_embd.weight of " +
                                std::to_string(m_shape.embedding) + " × vocabulary");
    }
    m_shape.vocabulary = static_cast<std::uint32_t>(embed->ne[1]);
    m_shape.neoxRope = arch != "llama";
    if (arch == "gpt2") {
        m_shape.layerNorm = true;
        m_shape.learnedPositions = true;
        m_shape.geglu = true; // GELU on the (ungated) up projection
        m_shape.ropeDims = 0;
        m_shape.fusedQkv = true;
    }
    m_shape.fusedQkv = m_shape.fusedQkv || arch == "phi3";
    m_shape.fusedGateUp = arch == "phi3";
    if (arch == "gemma2") {
        m_shape.geglu = true;
        m_shape.postNorms = true;
        m_shape.embeddingScale = std::sqrt(static_cast<float>(m_shape.embedding));
        m_shape.attentionSoftcap = static_cast<float>(real("attn_logit_softcapping", 50.0));
        m_shape.finalSoftcap = static_cast<float>(real("final_logit_softcapping", 30.0));
        m_shape.slidingPattern = 2;
    }
    if (arch == "gemma3") {
        m_shape.geglu = true;
        m_shape.postNorms = true;
        m_shape.qkNorm = true;
        m_shape.embeddingScale = std::sqrt(static_cast<float>(m_shape.embedding));
        m_shape.finalSoftcap = static_cast<float>(real("final_logit_softcapping", 0.0));
        m_shape.slidingPattern = 6;
        if (const auto period = m_weights.archValue("attention.sliding_window_pattern");
            period && *period > 0) {
            m_shape.slidingPattern = static_cast<std::uint32_t>(std::min<std::uint64_t>(*period, 1u << 20));
        }
        m_shape.ropeBaseSliding = real("rope.freq_base_swa", 10000.0);
    }
    if (const auto window = m_weights.archValue("attention.sliding_window"); window && *window > 0) {
        m_shape.slidingWindow = static_cast<std::uint32_t>(std::min<std::uint64_t>(*window, 1u << 30));
        m_shape.slidingPattern = m_shape.slidingPattern == 0 ? 1 : m_shape.slidingPattern;
    }
    // RoPE scaling: linear stretches the positions; the others change more than that.
    const MetaValue* scaling = m_weights.find(arch + ".rope.scaling.type");
    const std::string scalingType(scaling ? scaling->asString().value_or("none") : "none");
    if (scalingType == "linear") {
        const double factor = real("rope.scaling.factor", 1.0);
        if (!(factor > 0) || !std::isfinite(factor)) {
            throw FormatError(label + ": " + arch + ".rope.scaling.factor must be a positive number");
        }
        m_shape.ropeScale = static_cast<float>(1.0 / factor);
    } else if (scalingType != "none") {
        throw VitalsUnavailable(label + ": vital signs are not available with '" + escapeText(scalingType) +
                                "' RoPE scaling (only linear)");
    }
    if (m_weights.tensor("rope_freqs.weight") != nullptr && m_shape.ropeDims > 0) {
        m_shape.ropeFactors = true;
        const Eigen::VectorXf factors = vector("rope_freqs.weight", m_shape.ropeDims / 2);
        m_ropeFactors.assign(factors.data(), factors.data() + factors.size());
    }
    // Gemma 3 27B scales queries by the embedding per head, its smaller sizes by the head size.
    const bool gemma27b = arch == "gemma3" && m_shape.blocks == 62;
    m_shape.queryScale =
        1.0f / std::sqrt(static_cast<float>(gemma27b ? m_shape.embedding / m_shape.heads : m_shape.headSize));
}

void Transformer::setThreads(unsigned threads) {
    if (threads != m_pool->threads()) {
        m_pool = std::make_unique<WorkerPool>(threads);
    }
}

Transformer::RowMatrix Transformer::weight(const std::string& name, std::uint64_t rows,
                                           std::uint64_t columns) const {
    return weightRows(name, rows, columns, 0, rows);
}

void Transformer::multiply(const std::string& name, std::uint64_t rows, std::uint64_t columns,
                           const Eigen::MatrixXf& x, Eigen::MatrixXf& y, PreparedInput* prepared) const {
    const ModelWeights::Tensor& tensor = checkedTensor(name, rows, columns);
    made(y, static_cast<Eigen::Index>(rows), x.cols());
    PreparedInput local;
    PreparedInput& input = prepared != nullptr ? *prepared : local;
    // Quantized weights with a quantized product meet 8-bit activations, as in llama.cpp: Q8_0
    // and IQ4_NL in blocks of 32, the K-quants and IQ4_XS in super-blocks of 256; the others are
    // decoded to F32 a slice at a time and multiplied in quant/f16_dot.h's F32 tiles, but F16, whose
    // rows meet F16-rounded activations in its F16 tiles.
    const bool blocks = hasQuantizedProduct(tensor.type);
    const bool superBlocks = hasQ8KProduct(tensor.type);
    if (blocks && !input.blocks) {
        input.blocks.emplace(x.data(), static_cast<std::size_t>(columns), static_cast<std::size_t>(x.cols()));
    } else if (superBlocks && !input.superBlocks) {
        input.superBlocks.emplace(x.data(), static_cast<std::size_t>(columns),
                                  static_cast<std::size_t>(x.cols()));
    }
    // F16 weights meet activations rounded to F16, as llama.cpp converts them.
    const bool halves = tensor.type == TensorType::F16 && hasF16Product(static_cast<std::size_t>(columns));
    if (halves && !input.halves) {
        input.halves.emplace(x.data(), static_cast<std::size_t>(columns), static_cast<std::size_t>(x.cols()));
    } else if (tensor.type == TensorType::F16 && !halves && input.halved.size() == 0) {
        input.halved.resize(x.rows(), x.cols());
        roundToHalf(x.data(), static_cast<std::size_t>(x.size()), input.halved.data());
    }
    const Eigen::MatrixXf& dense = tensor.type == TensorType::F16 ? input.halved : x;
    // Decoded rows meet the activations in the F32 tiles, rows of a multiple of 8 values: where the
    // weight's are not, both are padded with zeros (which leave the sums as they are).
    const auto padded = static_cast<std::size_t>((columns + 7) / 8 * 8);
    Eigen::MatrixXf paddedDense;
    if (!blocks && !superBlocks && !halves && padded != columns) {
        paddedDense = Eigen::MatrixXf::Zero(static_cast<Eigen::Index>(padded), dense.cols());
        paddedDense.topRows(dense.rows()) = dense;
    }
    const float* denseColumns = paddedDense.size() != 0 ? paddedDense.data() : dense.data();
    // Slices of rows dealt to the threads: about 64 of them, so that no thread waits long for the
    // last, a multiple of 16 rows and at most 1024 (8 MiB of F32 for a 2048-wide weight); they do
    // not depend on the number of threads, nor then do the results. One column of weights read in
    // place (not decoded to F32) takes 4 slices a thread, at most 4096 rows: each thread reads its
    // rows as longer streams, which the prefetchers follow further (Zen 4, Q4_K_M, two threads:
    // 33.5-35.7 → 37.0-37.5 tokens/s with avx2), and each row's product is the same in any slice.
    const bool inPlace = blocks || superBlocks || halves;
    const std::uint64_t kSlice =
        x.cols() == 1 && inPlace
            ? std::clamp<std::uint64_t>((rows + 4 * threads() - 1) / (4 * threads()) + 15, 16, 4096) / 16 * 16
            : std::clamp<std::uint64_t>((rows + 1023) / 1024 * 16, 16, 1024);
    const std::uint64_t slices = (rows + kSlice - 1) / kSlice;
    // One column (a generated token) reads Q4_K rows eight at a time side by side, made once.
    const std::byte* interleaved =
        tensor.type == TensorType::Q4_K && x.cols() == 1 ? interleavedRows(name, rows, columns) : nullptr;
    m_pool->run(static_cast<std::size_t>(slices), [&](std::size_t s, std::vector<std::byte>& scratch) {
        const std::uint64_t first = s * kSlice;
        const std::uint64_t count = std::min(kSlice, rows - first);
        if (interleaved != nullptr) {
            interleavedQ4KProduct(interleaved + interleavedQ4KBytes(static_cast<std::size_t>(first),
                                                                    static_cast<std::size_t>(columns)),
                                  static_cast<std::size_t>(count), *input.superBlocks, y.data() + first,
                                  static_cast<std::size_t>(rows));
            return;
        }
        if (blocks || superBlocks) {
            const std::span<const std::byte> bytes = m_weights.rowBytes(name, first, count, scratch);
            if (blocks) {
                quantizedProduct(tensor.type, bytes.data(), static_cast<std::size_t>(count), *input.blocks,
                                 y.data() + first, static_cast<std::size_t>(rows));
            } else {
                q8KProduct(tensor.type, bytes.data(), static_cast<std::size_t>(count), *input.superBlocks,
                           y.data() + first, static_cast<std::size_t>(rows));
            }
            return;
        }
        if (halves) {
            const std::span<const std::byte> bytes = m_weights.rowBytes(name, first, count, scratch);
            f16Product(reinterpret_cast<const std::uint16_t*>(bytes.data()), static_cast<std::size_t>(count),
                       *input.halves, y.data() + first, static_cast<std::size_t>(rows));
            return;
        }
        RowMatrix decoded = weightRows(name, rows, columns, first, count);
        if (padded != columns) {
            RowMatrix widened = RowMatrix::Zero(decoded.rows(), static_cast<Eigen::Index>(padded));
            widened.leftCols(decoded.cols()) = decoded;
            decoded = std::move(widened);
        }
        // The same bits for one column as for many, on every kernel.
        f32Product(decoded.data(), padded, static_cast<std::size_t>(count), padded, denseColumns, padded,
                   static_cast<std::size_t>(dense.cols()), y.data() + first, static_cast<std::size_t>(rows));
    });
}

std::uint64_t Transformer::interleavedBytes() const {
    const std::lock_guard<std::mutex> hold(m_interleaved->lock);
    return m_interleaved->bytes;
}

const std::byte* Transformer::interleavedRows(const std::string& name, std::uint64_t rows,
                                              std::uint64_t columns) const {
    if (rows % 8 != 0) {
        return nullptr;
    }
    InterleavedWeights& cache = *m_interleaved;
    const std::lock_guard<std::mutex> hold(cache.lock);
    if (const auto it = cache.rows.find(name); it != cache.rows.end()) {
        return it->second.get();
    }
    const std::size_t bytes =
        interleavedQ4KBytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(columns));
    const char* copies = std::getenv("ORGAN_Q4K_COPY");
    std::unique_ptr<std::byte[]> made;
    if ((copies == nullptr || std::string_view(copies) != "0") &&
        cache.bytes + bytes <= availableMemory() / 4) {
        made.reset(new (std::nothrow) std::byte[bytes]);
    }
    if (!made) {
        // Not tried again: read packed.
        cache.rows.emplace(name, nullptr);
        return nullptr;
    }
    // Kept only once whole: a failure half-way leaves none.
    preferLargePages(made.get(), bytes);
    // 256 rows a work item: whole groups of eight.
    constexpr std::uint64_t kSlice = 256;
    m_pool->run(static_cast<std::size_t>((rows + kSlice - 1) / kSlice), [&](std::size_t s,
                                                                            std::vector<std::byte>& scratch) {
        const std::uint64_t first = s * kSlice;
        const std::uint64_t count = std::min(kSlice, rows - first);
        const std::span<const std::byte> slice = m_weights.rowBytes(name, first, count, scratch);
        interleaveQ4K(slice.data(), static_cast<std::size_t>(count), static_cast<std::size_t>(columns),
                      made.get() + interleavedQ4KBytes(static_cast<std::size_t>(first),
                                                       static_cast<std::size_t>(columns)));
    });
    const std::byte* kept = cache.rows.emplace(name, std::move(made)).first->second.get();
    cache.bytes += bytes;
    return kept;
}

const ModelWeights::Tensor& Transformer::checkedTensor(const std::string& name, std::uint64_t rows,
                                                       std::uint64_t columns) const {
    const ModelWeights::Tensor* t = m_weights.tensor(name);
    if (t == nullptr) {
        throw VitalsUnavailable(m_weights.label() + ": vital signs need tensor " + name);
    }
    if (t->ne[0] != columns || t->ne[1] != rows || t->ne[2] != 1 || t->ne[3] != 1) {
        throw FormatError(m_weights.label() + ": " + name + " is " + t->shapeText() + ", expected " +
                          std::to_string(columns) + " × " + std::to_string(rows));
    }
    return *t;
}

Transformer::RowMatrix Transformer::weightRows(const std::string& name, std::uint64_t rows,
                                               std::uint64_t columns, std::uint64_t first,
                                               std::uint64_t count) const {
    checkedTensor(name, rows, columns);
    RowMatrix out(static_cast<Eigen::Index>(count), static_cast<Eigen::Index>(columns));
    m_weights.dequantizeRows(name, first, count, out.data());
    return out;
}

Eigen::VectorXf Transformer::vector(const std::string& name, std::uint64_t size) const {
    const RowMatrix m = weight(name, 1, size);
    return m.row(0).transpose();
}

Eigen::MatrixXf Transformer::rmsNorm(const Eigen::MatrixXf& x, const Eigen::VectorXf& gain) const {
    Eigen::MatrixXf out;
    rmsNorm(x, gain, out);
    return out;
}

void Transformer::rmsNorm(const Eigen::MatrixXf& x, const Eigen::VectorXf& gain, Eigen::MatrixXf& out) const {
    made(out, x.rows(), x.cols());
    for (Eigen::Index c = 0; c < x.cols(); ++c) {
        const float meanSquare = x.col(c).squaredNorm() / static_cast<float>(x.rows());
        const float scale = 1.0f / std::sqrt(meanSquare + static_cast<float>(m_shape.rmsEpsilon));
        out.col(c) = x.col(c).cwiseProduct(gain) * scale;
    }
}

Eigen::MatrixXf Transformer::norm(const Eigen::MatrixXf& x, const std::string& name) const {
    Eigen::MatrixXf out;
    norm(x, name, out);
    return out;
}

void Transformer::norm(const Eigen::MatrixXf& x, const std::string& name, Eigen::MatrixXf& out) const {
    const Eigen::VectorXf gain = vector(name + ".weight", static_cast<std::uint64_t>(x.rows()));
    if (!m_shape.layerNorm) {
        rmsNorm(x, gain, out);
        return;
    }
    const Eigen::VectorXf bias = vector(name + ".bias", static_cast<std::uint64_t>(x.rows()));
    made(out, x.rows(), x.cols());
    for (Eigen::Index c = 0; c < x.cols(); ++c) {
        const Eigen::VectorXf centred = x.col(c).array() - x.col(c).mean();
        const float variance = centred.squaredNorm() / static_cast<float>(x.rows());
        out.col(c) =
            centred.cwiseProduct(gain) / std::sqrt(variance + static_cast<float>(m_shape.rmsEpsilon)) + bias;
    }
}

// RoPE as llama.cpp applies it: within each head, pairs of the first ropeDims values rotate by
// position × scale × base^(−2i/ropeDims) / factor[i]; "normal" pairs (2i, 2i+1), NeoX pairs
// (i, i + ropeDims/2). Gemma 3's sliding layers have a base of their own and no scaling.
void Transformer::rope(Eigen::MatrixXf& x, std::uint32_t heads, std::size_t first,
                       std::uint32_t layer) const {
    const std::uint32_t half = m_shape.ropeDims / 2;
    if (half == 0) {
        return; // learned positions instead
    }
    const bool sliding = m_shape.ropeBaseSliding > 0 && m_shape.slides(layer);
    const double base = sliding ? m_shape.ropeBaseSliding : m_shape.ropeBase;
    const float scale = sliding ? 1.0f : m_shape.ropeScale;
    std::vector<float> inverse(half);
    for (std::uint32_t i = 0; i < half; ++i) {
        inverse[i] = scale * static_cast<float>(std::pow(base, -2.0 * i / m_shape.ropeDims));
        if (m_shape.ropeFactors) {
            inverse[i] /= m_ropeFactors[i];
        }
    }
    // Every head of a position turns by the same angles: each cosine and sine taken once.
    std::vector<float> cosines(half);
    std::vector<float> sines(half);
    for (Eigen::Index p = 0; p < x.cols(); ++p) {
        for (std::uint32_t i = 0; i < half; ++i) {
            const float angle = static_cast<float>(first + static_cast<std::size_t>(p)) * inverse[i];
            cosines[i] = std::cos(angle);
            sines[i] = std::sin(angle);
        }
        for (std::uint32_t h = 0; h < heads; ++h) {
            float* v = x.col(p).data() + static_cast<std::size_t>(h) * m_shape.headSize;
            for (std::uint32_t i = 0; i < half; ++i) {
                const float c = cosines[i];
                const float s = sines[i];
                // NeoX: the pair is (i, i + half); normal: (2i, 2i + 1).
                float& a = m_shape.neoxRope ? v[i] : v[2 * i];
                float& b = m_shape.neoxRope ? v[i + half] : v[2 * i + 1];
                const float a0 = a;
                const float b0 = b;
                a = a0 * c - b0 * s;
                b = a0 * s + b0 * c;
            }
        }
    }
}

Eigen::MatrixXf Transformer::logits(const std::vector<std::int32_t>& tokens, const StopToken* stop,
                                    std::size_t outputsFrom) const {
    return TransformerSession(*this).run(tokens, stop, nullptr, outputsFrom);
}

TransformerSession::TransformerSession(const Transformer& transformer)
    : m_transformer(transformer),
      m_keys(transformer.shape().blocks,
             Eigen::MatrixXf(transformer.shape().kvHeads * transformer.shape().headSize, 0)),
      m_values(transformer.shape().blocks,
               Transformer::RowMatrix(transformer.shape().kvHeads * transformer.shape().headSize, 0)) {}

void TransformerSession::reserve(std::size_t positions, std::uint32_t first) {
    const auto needed = static_cast<Eigen::Index>((positions + 15) / 16 * 16);
    for (std::size_t l = first; l < m_keys.size(); ++l) {
        if (m_values[l].cols() >= needed) {
            continue;
        }
        // Twice the room each time it grows: a token at a time copies the cache a logarithmic
        // number of times, not once a token.
        const Eigen::Index room = std::max(needed, 2 * m_values[l].cols());
        const auto cached = static_cast<Eigen::Index>(m_position);
        Eigen::MatrixXf keys(m_keys[l].rows(), room);
        keys.leftCols(cached) = m_keys[l].leftCols(cached);
        Transformer::RowMatrix values(m_values[l].rows(), room);
        values.leftCols(cached) = m_values[l].leftCols(cached);
        m_keys[l] = std::move(keys);
        m_values[l] = std::move(values);
    }
}

Eigen::MatrixXf TransformerSession::run(const std::vector<std::int32_t>& tokens, const StopToken* stop,
                                        std::vector<Eigen::MatrixXf>* hidden, std::size_t outputsFrom) {
    return runLayers(embed(tokens), 0, stop, hidden, outputsFrom);
}

Eigen::MatrixXf Transformer::logitsFrom(std::uint32_t first, Eigen::MatrixXf entering, const StopToken* stop,
                                        std::size_t outputsFrom) const {
    if (first > m_shape.blocks || entering.rows() != m_shape.embedding) {
        throw FormatError(m_weights.label() + ": no layer " + std::to_string(first) +
                          " to resume from, or states of " + std::to_string(entering.rows()) +
                          " values, not " + std::to_string(m_shape.embedding));
    }
    return TransformerSession(*this).runLayers(std::move(entering), first, stop, nullptr, outputsFrom);
}

Eigen::MatrixXf TransformerSession::embed(const std::vector<std::int32_t>& tokens) const {
    const Transformer& t = m_transformer;
    const TransformerShape& shape = t.m_shape;
    const auto n = static_cast<Eigen::Index>(tokens.size());
    const auto past = static_cast<Eigen::Index>(m_position);
    const std::uint32_t e = shape.embedding;
    const std::string& label = t.m_weights.label();
    Eigen::MatrixXf x(e, n);
    // The embedding rows of these tokens only: a 128k vocabulary is never in F32 whole.
    for (Eigen::Index p = 0; p < n; ++p) {
        const std::int32_t token = tokens[static_cast<std::size_t>(p)];
        if (token < 0 || static_cast<std::uint32_t>(token) >= shape.vocabulary) {
            throw FormatError(label + ": token " + std::to_string(token) + " is outside the vocabulary of " +
                              std::to_string(shape.vocabulary));
        }
        x.col(p) = t.weightRows("token_embd.weight", shape.vocabulary, e, std::uint64_t(token), 1)
                       .row(0)
                       .transpose();
    }
    x *= shape.embeddingScale;
    if (shape.learnedPositions) {
        const ModelWeights::Tensor* positions = t.m_weights.tensor("position_embd.weight");
        if (positions == nullptr || static_cast<std::uint64_t>(past + n) > positions->ne[1]) {
            throw VitalsUnavailable(label + ": the text is longer than the model's " +
                                    std::to_string(positions ? positions->ne[1] : 0) + " learned positions");
        }
        const Transformer::RowMatrix table = t.weight("position_embd.weight", positions->ne[1], e);
        for (Eigen::Index p = 0; p < n; ++p) {
            x.col(p) += table.row(past + p).transpose();
        }
    }
    return x;
}

Eigen::MatrixXf TransformerSession::runLayers(Eigen::MatrixXf x, std::uint32_t first, const StopToken* stop,
                                              std::vector<Eigen::MatrixXf>* hidden, std::size_t outputsFrom) {
    const Transformer& t = m_transformer;
    const TransformerShape& shape = t.m_shape;
    const auto n = static_cast<Eigen::Index>(x.cols());
    if (outputsFrom >= static_cast<std::size_t>(std::max<Eigen::Index>(n, 1))) {
        throw FormatError(t.m_weights.label() + ": logits from position " + std::to_string(outputsFrom) +
                          " of a run of " + std::to_string(n) + " tokens");
    }
    const auto kept = n - static_cast<Eigen::Index>(outputsFrom);
    const auto past = static_cast<Eigen::Index>(m_position);
    const std::uint32_t e = shape.embedding;
    const std::uint32_t kv = shape.kvHeads * shape.headSize;
    const std::uint32_t group = shape.heads / shape.kvHeads;
    // Room in the cache for these positions (each layer zeroes what its sums read after them).
    reserve(static_cast<std::size_t>(past + n), first);
    const std::uint32_t qDim = shape.heads * shape.headSize;
    if (hidden != nullptr) {
        hidden->clear();
    }
    // weight · input, the input shown to the observer first.
    auto product = [&](const std::string& weight, std::uint64_t rows, std::uint64_t columns,
                       const Eigen::MatrixXf& input, Eigen::MatrixXf& y,
                       Transformer::PreparedInput* prepared = nullptr) {
        if (m_observer) {
            m_observer(weight, input);
        }
        t.multiply(weight, rows, columns, input, y, prepared);
    };
    // y += bias, when the layer has that bias (qwen2's attention).
    auto addBias = [&](Eigen::MatrixXf& y, const std::string& name) {
        if (t.m_weights.tensor(name) != nullptr) {
            y.colwise() += t.vector(name, static_cast<std::uint64_t>(y.rows()));
        }
    };
    // A layer's matrices, kept from one layer to the next (Transformer::multiply).
    Eigen::MatrixXf h;
    Eigen::MatrixXf q;
    Eigen::MatrixXf k;
    Eigen::MatrixXf v;
    Eigen::MatrixXf attended;
    Eigen::MatrixXf attention;
    Eigen::MatrixXf f;
    Eigen::MatrixXf gate;
    Eigen::MatrixXf upped;
    Eigen::MatrixXf activated;
    Eigen::MatrixXf ffn;
    for (std::uint32_t l = first; l < shape.blocks; ++l) {
        if (stop != nullptr && stop->stopRequested()) {
            return {};
        }
        if (hidden != nullptr) {
            hidden->push_back(x);
        }
        auto name = [l](const char* suffix) { return layerTensorName(l, suffix); };
        t.norm(x, name("attn_norm"), h);
        if (shape.fusedQkv) {
            Eigen::MatrixXf qkv;
            product(name("attn_qkv.weight"), qDim + 2 * kv, e, h, qkv);
            addBias(qkv, name("attn_qkv.bias"));
            q = qkv.topRows(qDim);
            k = qkv.middleRows(qDim, kv);
            v = qkv.bottomRows(kv);
        } else {
            Transformer::PreparedInput prepared;
            product(name("attn_q.weight"), qDim, e, h, q, &prepared);
            product(name("attn_k.weight"), kv, e, h, k, &prepared);
            product(name("attn_v.weight"), kv, e, h, v, &prepared);
            addBias(q, name("attn_q.bias"));
            addBias(k, name("attn_k.bias"));
            addBias(v, name("attn_v.bias"));
        }
        if (shape.qkNorm) {
            // Each head's query and key normalized on its own, with one gain for all heads.
            auto perHead = [&](Eigen::MatrixXf& m, std::uint32_t heads, const std::string& gainName) {
                const Eigen::VectorXf gain = t.vector(gainName, shape.headSize);
                Eigen::Map<Eigen::MatrixXf> split(m.data(), shape.headSize, m.cols() * heads);
                split = t.rmsNorm(split, gain);
            };
            perHead(q, shape.heads, name("attn_q_norm.weight"));
            perHead(k, shape.kvHeads, name("attn_k_norm.weight"));
        }
        t.rope(q, shape.heads, m_position, l);
        t.rope(k, shape.kvHeads, m_position, l);
        // Every key and value so far: the cached ones, then these.
        // These positions' keys and values join the cache in place (the values transposed, as the
        // sums over keys read them); the positions after them to a multiple of 16 are zeros again
        // (a cancelled run's may be there), which the sums may read and multiply by zero scores.
        m_keys[l].middleCols(past, n) = k;
        m_values[l].middleCols(past, n) = v;
        const Eigen::Index cached = past + n;
        m_values[l].middleCols(cached, (cached + 15) / 16 * 16 - cached).setZero();
        const Eigen::Index capacity = m_values[l].cols();
        // The keys a query sees at most (0: all of them before it).
        const Eigen::Index window = shape.slides(l) ? static_cast<Eigen::Index>(shape.slidingWindow) : 0;
        made(attended, qDim, n);
        // The heads on every thread, each writing its own rows of `attended`.
        t.m_pool->run(shape.heads, [&](std::size_t head, std::vector<std::byte>&) {
            const Eigen::Index qRow = static_cast<Eigen::Index>(head) * shape.headSize;
            const Eigen::Index kvRow = static_cast<Eigen::Index>(head / group) * shape.headSize;
            const Eigen::Index keyCount = past + n;
            // Heads of a multiple of 8 values go through quant/f16_dot.h's F32 tiles (Eigen's products
            // here are built for the baseline x86-64). Keys are padded with zeros to a multiple of
            // 16: each query's scores start on a multiple of 64 bytes, the widest packet and
            // alignment Eigen takes (AVX-512).
            const bool tiled = shape.headSize % 8 == 0;
            const Eigen::Index padded = (keyCount + 15) / 16 * 16;
            // scores(key, query), causal: a query sees keys up to its own position (and, in a
            // sliding layer, no further back than the window).
            Eigen::MatrixXf scores = Eigen::MatrixXf::Zero(padded, n);
            if (tiled) {
                // A block of queries sees no key past its last query's position, nor (in a sliding
                // layer) before its first query's window: the keys outside are not multiplied (half
                // the products of a long pass, and most of a sliding layer's). Each score is its own
                // product, so its bits are those of the whole matrix's.
                forCausalBlocks(
                    past, n, window,
                    [&](Eigen::Index first, Eigen::Index count, Eigen::Index lowest, Eigen::Index seen) {
                        f32Product(m_keys[l].data() + kvRow + lowest * kv, kv,
                                   static_cast<std::size_t>(seen - lowest), shape.headSize,
                                   q.data() + qRow + first * qDim, qDim, static_cast<std::size_t>(count),
                                   scores.data() + first * padded + lowest, static_cast<std::size_t>(padded));
                    });
            } else {
                scores.topRows(keyCount).noalias() =
                    m_keys[l].block(kvRow, 0, shape.headSize, keyCount).transpose() *
                    q.middleRows(qRow, shape.headSize);
            }
            // Each query's softmax over the keys it sees, scaled (and capped) there only. Eigen's
            // vectorized exp and sum take the same path through a query's keys whatever the run
            // around it (its column starts on a multiple of 64 bytes), so the softmax's bits are the
            // same in pieces as whole (the scores of heads Eigen multiplies are not: a column alone
            // is multiplied in another order than many). Weights under the smallest normal float are
            // zeros: Eigen's exp stops at 2.9e-39, a subnormal that would slow the sums.
            for (Eigen::Index query = 0; query < n; ++query) {
                const Eigen::Index seen = past + query + 1;
                const Eigen::Index from = window > 0 ? std::max<Eigen::Index>(0, seen - window) : 0;
                auto column = scores.col(query).head(keyCount);
                auto seenKeys = column.segment(from, seen - from).array();
                seenKeys *= shape.queryScale;
                if (shape.attentionSoftcap > 0) {
                    seenKeys = (seenKeys / shape.attentionSoftcap).tanh() * shape.attentionSoftcap;
                }
                seenKeys = (seenKeys - seenKeys.maxCoeff()).exp();
                seenKeys = (seenKeys < std::numeric_limits<float>::min()).select(0.0f, seenKeys);
                seenKeys /= seenKeys.sum();
                column.head(from).setZero();
                column.tail(keyCount - seen).setZero();
            }
            if (tiled) {
                // Σ over keys of values × scores: the cache keeps the values transposed, each of a
                // head's values a row of keys, zeros after them to a multiple of 16. A block's sums run from
                // its lowest key (a multiple of 8) to its last seen key, rounded up to 8: the scores outside
                // are zeros, which leave each lane's sum as it is (a value that is not finite outside a
                // query's keys no longer makes its sums NaN).
                forCausalBlocks(
                    past, n, window,
                    [&](Eigen::Index first, Eigen::Index count, Eigen::Index lowest, Eigen::Index seen) {
                        const Eigen::Index length = std::min(padded, (seen + 7) / 8 * 8);
                        f32Product(m_values[l].data() + kvRow * capacity + lowest,
                                   static_cast<std::size_t>(capacity), shape.headSize,
                                   static_cast<std::size_t>(length - lowest),
                                   scores.data() + first * padded + lowest, static_cast<std::size_t>(padded),
                                   static_cast<std::size_t>(count), attended.data() + qRow + first * qDim,
                                   qDim);
                    });
            } else {
                // Column-major as the cache was: Eigen sums a row-major operand's products in another
                // order (one query: dot products), and the bits would move.
                const Eigen::MatrixXf values = m_values[l].block(kvRow, 0, shape.headSize, keyCount);
                attended.middleRows(qRow, shape.headSize) = values * scores.topRows(keyCount);
            }
        });
        if (l + 1 == shape.blocks && hidden == nullptr && kept < n) {
            // As llama.cpp does: after the last layer's attention, only the positions whose logits
            // are asked for go on (each column is computed alone, so their bits are the same).
            x = x.rightCols(kept).eval();
            attended = attended.rightCols(kept).eval();
        }
        product(name("attn_output.weight"), e, qDim, attended, attention);
        addBias(attention, name("attn_output.bias"));
        if (shape.postNorms) {
            attention = t.rmsNorm(attention, t.vector(name("post_attention_norm.weight"), e));
        }
        x += attention;
        t.norm(x, name("ffn_norm"), f);
        const ModelWeights::Tensor* down = t.m_weights.tensor(name("ffn_down.weight"));
        if (down == nullptr) {
            throw VitalsUnavailable(t.m_weights.label() + ": vital signs need tensor " +
                                    name("ffn_down.weight"));
        }
        const std::uint64_t ff = down->ne[0];
        if (shape.fusedGateUp) {
            Eigen::MatrixXf both;
            product(name("ffn_up.weight"), 2 * ff, e, f, both);
            gate = both.topRows(static_cast<Eigen::Index>(ff));
            upped = both.bottomRows(static_cast<Eigen::Index>(ff));
        } else if (t.m_weights.tensor(name("ffn_gate.weight")) != nullptr) {
            Transformer::PreparedInput prepared;
            product(name("ffn_gate.weight"), ff, e, f, gate, &prepared);
            product(name("ffn_up.weight"), ff, e, f, upped, &prepared);
            addBias(gate, name("ffn_gate.bias"));
            addBias(upped, name("ffn_up.bias"));
        } else {
            // No gate (gpt2): the activation of the up projection itself.
            product(name("ffn_up.weight"), ff, e, f, gate);
            addBias(gate, name("ffn_up.bias"));
            upped = Eigen::MatrixXf::Ones(gate.rows(), gate.cols());
        }
        gatedActivation(gate, upped, shape.geglu, *t.m_pool, activated);
        product(name("ffn_down.weight"), e, ff, activated, ffn);
        addBias(ffn, name("ffn_down.bias"));
        if (shape.postNorms) {
            ffn = t.rmsNorm(ffn, t.vector(name("post_ffw_norm.weight"), e));
        }
        x += ffn;
    }
    // Given back before the output projection, the run's largest product.
    for (Eigen::MatrixXf* m : {&h, &q, &k, &v, &attended, &attention, &f, &gate, &upped, &activated, &ffn}) {
        *m = Eigen::MatrixXf();
    }
    if (hidden != nullptr) {
        hidden->push_back(x);
    }
    m_position += static_cast<std::size_t>(n);
    const Eigen::MatrixXf out = t.norm(x.rightCols(kept), "output_norm");
    const std::string head = t.m_weights.tensor("output.weight") ? "output.weight" : "token_embd.weight";
    // The output projection a slice of the vocabulary at a time, on every thread.
    Eigen::MatrixXf logits;
    product(head, shape.vocabulary, e, out, logits);
    if (shape.finalSoftcap > 0) {
        logits = (logits.array() / shape.finalSoftcap).tanh() * shape.finalSoftcap;
    }
    return logits;
}

void gatedActivation(const Eigen::MatrixXf& gate, const Eigen::MatrixXf& up, bool gelu, WorkerPool& pool,
                     Eigen::MatrixXf& out) {
    if (up.rows() != gate.rows() || up.cols() != gate.cols()) {
        throw std::invalid_argument("gatedActivation: the gate and the up projection differ in shape");
    }
    made(out, gate.rows(), gate.cols());
    // Runs of values that start at multiples of 64, so that each value takes the path through
    // Eigen's packets, or through its scalar tail (the matrix's last values), that it takes when
    // the matrices are evaluated whole: the bits depend neither on the runs nor on the threads.
    constexpr Eigen::Index kRun = Eigen::Index{1} << 16;
    const Eigen::Index size = gate.size();
    pool.run(static_cast<std::size_t>((size + kRun - 1) / kRun), [&](std::size_t r, std::vector<std::byte>&) {
        const Eigen::Index first = static_cast<Eigen::Index>(r) * kRun;
        const Eigen::Index n = std::min(kRun, size - first);
        const Eigen::Map<const Eigen::ArrayXf> g(gate.data() + first, n);
        const Eigen::Map<const Eigen::ArrayXf> u(up.data() + first, n);
        Eigen::Map<Eigen::ArrayXf> o(out.data() + first, n);
        if (gelu) {
            // GELU, tanh approximation (ggml_gelu).
            const float c = std::sqrt(2.0f / std::numbers::pi_v<float>);
            o = 0.5f * g * (1.0f + (c * (g + 0.044715f * g.cube())).tanh()) * u;
        } else {
            o = g / (1.0f + (-g).exp()) * u;
        }
    });
}

std::vector<std::int32_t> greedyContinuation(const Transformer& transformer, std::vector<std::int32_t> prompt,
                                             std::size_t count, std::int32_t endOfSequence,
                                             const StopToken* stop) {
    TransformerSession session(transformer);
    Eigen::MatrixXf logits = session.run(prompt, stop, nullptr, prompt.empty() ? 0 : prompt.size() - 1);
    for (std::size_t i = 0; i < count && logits.cols() > 0; ++i) {
        Eigen::Index best = 0;
        logits.col(logits.cols() - 1).maxCoeff(&best);
        const auto token = static_cast<std::int32_t>(best);
        prompt.push_back(token);
        if (token == endOfSequence || i + 1 == count) {
            break;
        }
        logits = session.run({token}, stop);
    }
    return prompt;
}

double logSumExp(const Eigen::Ref<const Eigen::VectorXf>& logits) {
    const double top = logits.maxCoeff();
    double sum = 0;
    for (Eigen::Index i = 0; i < logits.size(); ++i) {
        sum += std::exp(static_cast<double>(logits(i)) - top);
    }
    return top + std::log(sum);
}

} // namespace organ
