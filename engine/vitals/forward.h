#pragma once

#include "gguf/gguf_model.h"
#include "quant/f16_dot.h"
#include "quant/kquant_dot.h"
#include "quant/quant_dot.h"
#include "support/job.h"
#include "support/worker_pool.h"
#include "vitals/model_weights.h"

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace organ {

// The hyperparameters a forward pass needs, read from the model's metadata.
struct TransformerShape {
    std::string architecture;
    std::uint32_t embedding = 0;
    std::uint32_t blocks = 0;
    std::uint32_t heads = 0;
    std::uint32_t kvHeads = 0;
    std::uint32_t headSize = 0;
    std::uint32_t ropeDims = 0;
    double ropeBase = 10000.0;
    double rmsEpsilon = 1e-5;
    std::uint32_t vocabulary = 0;
    // The architecture's quirks, as llama.cpp builds its graph.
    bool neoxRope = false;           // rotate (i, i + ropeDims/2) instead of (2i, 2i+1)
    bool fusedQkv = false;           // attn_qkv: Q, K and V in one matrix (phi3)
    bool fusedGateUp = false;        // ffn_up holds gate then up (phi3)
    bool geglu = false;              // GELU (tanh) instead of SiLU (gemma gates, gpt2 MLP)
    bool layerNorm = false;          // LayerNorm with bias instead of RMSNorm (gpt2)
    bool learnedPositions = false;   // position_embd added to the embeddings, no RoPE (gpt2)
    bool postNorms = false;          // norms after attention and after the FFN (gemma2, gemma3)
    bool qkNorm = false;             // RMSNorm of each query and key head before RoPE (gemma3)
    double ropeBaseSliding = 0;      // RoPE base of the sliding layers (gemma3); 0: ropeBase
    float ropeScale = 1.0f;          // positions × this in the global layers (linear RoPE scaling)
    bool ropeFactors = false;        // rope_freqs.weight divides each pair's frequency (llama 3)
    float embeddingScale = 1.0f;     // gemma: sqrt(embedding)
    float queryScale = 0.0f;         // scale of QKᵀ; 0: 1/sqrt(headSize)
    float attentionSoftcap = 0.0f;   // gemma2: tanh(s / c) · c on attention scores
    float finalSoftcap = 0.0f;       // gemma2: on the logits
    std::uint32_t slidingWindow = 0; // keys a query sees at most (0: all)
    // 0: no layer slides; 1: every layer; n > 1: all but every n-th (gemma2: 2, gemma3: 6).
    std::uint32_t slidingPattern = 0;
    bool slides(std::uint32_t layer) const {
        return slidingWindow > 0 && slidingPattern > 0 &&
               (slidingPattern == 1 || layer % slidingPattern < slidingPattern - 1);
    }
};

// A decoder-only transformer run as llama.cpp runs it, on the CPU in F32 with Eigen. Weights
// are read from the model's mapping and dequantized with the engine's decoders one layer at a
// time: memory stays near one layer in F32 plus the activations (and, once one column has met
// them, interleaved copies of the Q4_K weights: interleavedRows). So far 'llama' (also
// Mistral-style), 'qwen2', 'phi3', 'gemma2', 'gemma3' and 'gpt2'; any other is refused with
// VitalsUnavailable, as is RoPE scaling other than linear (YaRN, LongRoPE).
class Transformer {
public:
    // Throws VitalsUnavailable (architecture, missing tensors) or FormatError (bad shapes).
    explicit Transformer(ModelWeights weights);
    explicit Transformer(std::shared_ptr<const GgufModel> model)
        : Transformer(ModelWeights::ofModel(std::move(model))) {}

    const TransformerShape& shape() const { return m_shape; }
    // Threads for the matrix products (each dequantizes and multiplies its own rows);
    // default: one per core.
    void setThreads(unsigned threads);
    unsigned threads() const { return m_pool->threads(); }
    // The bytes of the interleaved copies of Q4_K weights made for one column so far (interleavedRows).
    std::uint64_t interleavedBytes() const;

    // The logits of every position from `outputsFrom` on (vocabulary × (tokens − outputsFrom), a
    // column per position) of one sequence run as one batch with a causal mask. The earlier
    // positions' logits are not computed, nor (as in llama.cpp) the last layer after attention for
    // them; the logits computed are those of the whole run to the bit. Cancelled: an empty matrix.
    Eigen::MatrixXf logits(const std::vector<std::int32_t>& tokens, const StopToken* stop = nullptr,
                           std::size_t outputsFrom = 0) const;
    // The logits of a sequence from layer `first` on: `entering` its hidden states entering that
    // layer (embedding × tokens, as TransformerSession::run's `hidden` gave them, from weights the
    // same as these up to that layer); `first` = blocks runs the output alone. What the layers
    // before would compute again is not; `outputsFrom` as in logits(). Cancelled: an empty matrix.
    Eigen::MatrixXf logitsFrom(std::uint32_t first, Eigen::MatrixXf entering, const StopToken* stop = nullptr,
                               std::size_t outputsFrom = 0) const;

private:
    friend class TransformerSession;
    using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    // A 2-D weight as (ne[1] × ne[0]) in F32; `rows`/`columns` checked against the tensor.
    RowMatrix weight(const std::string& name, std::uint64_t rows, std::uint64_t columns) const;
    // x as the weights it meets need it, made once for all of them (the query, key and value
    // weights meet the same x): quantized to q8_0 blocks, to q8_K super-blocks, rounded to F16.
    struct PreparedInput {
        std::optional<QuantizedActivations> blocks;
        std::optional<Q8KActivations> superBlocks;
        std::optional<HalfActivations> halves; // for F16 rows with an F16 product
        Eigen::MatrixXf halved;                // F16-rounded floats, for the other F16 rows
    };
    // weight(name) · x, computed by the threads over slices of the weight's rows: the weight is
    // never in F32 whole. Q8_0 and IQ4_NL weights meet x quantized to 8 bits in blocks of 32
    // (quant/quant_dot.h), K-quant and IQ4_XS weights in super-blocks of 256 (quant/kquant_dot.h),
    // as in llama.cpp. `prepared` keeps x's prepared forms for the next weight that meets it.
    // The product goes into y, made rows × x's columns: where it already holds that many values, in
    // the memory it has (a layer's products are the same sizes as the last layer's, and fresh
    // memory costs the kernel's zeroing of its pages: 2.8 % of a one-thread 512-token F16 pass).
    void multiply(const std::string& name, std::uint64_t rows, std::uint64_t columns,
                  const Eigen::MatrixXf& x, Eigen::MatrixXf& y, PreparedInput* prepared = nullptr) const;
    // The weight `name`, checked to be (rows × columns).
    const ModelWeights::Tensor& checkedTensor(const std::string& name, std::uint64_t rows,
                                              std::uint64_t columns) const;
    // Rows first … first + count − 1 of such a weight.
    RowMatrix weightRows(const std::string& name, std::uint64_t rows, std::uint64_t columns,
                         std::uint64_t first, std::uint64_t count) const;
    Eigen::VectorXf vector(const std::string& name, std::uint64_t size) const;
    Eigen::MatrixXf rmsNorm(const Eigen::MatrixXf& x, const Eigen::VectorXf& gain) const;
    void rmsNorm(const Eigen::MatrixXf& x, const Eigen::VectorXf& gain, Eigen::MatrixXf& out) const;
    // The architecture's norm with the weights `name` (and `name` with ".bias" for LayerNorm); into
    // `out` as multiply() writes y.
    Eigen::MatrixXf norm(const Eigen::MatrixXf& x, const std::string& name) const;
    void norm(const Eigen::MatrixXf& x, const std::string& name, Eigen::MatrixXf& out) const;
    // Rotates the heads of x, whose column c is position first + c, as layer `layer` does.
    void rope(Eigen::MatrixXf& x, std::uint32_t heads, std::size_t first, std::uint32_t layer) const;

    // Q4_K weights (rows a multiple of 8) interleaved for one column (kquant_dot.h's
    // interleaveQ4K), made the first time one column meets them and kept while there is room:
    // together at most a quarter of the memory available when each is made, none when the
    // environment variable ORGAN_Q4K_COPY is 0. Null: that weight is read packed, for good.
    const std::byte* interleavedRows(const std::string& name, std::uint64_t rows,
                                     std::uint64_t columns) const;
    struct InterleavedWeights {
        std::mutex lock;
        // Per weight its interleaved rows, or none where there was no room.
        std::unordered_map<std::string, std::unique_ptr<std::byte[]>> rows;
        std::uint64_t bytes = 0;
    };

    ModelWeights m_weights;
    TransformerShape m_shape;
    std::vector<float> m_ropeFactors;   // rope_freqs.weight, one per rotated pair
    std::unique_ptr<WorkerPool> m_pool; // started with the transformer, kept for every pass
    std::unique_ptr<InterleavedWeights> m_interleaved = std::make_unique<InterleavedWeights>();
};

// One sequence run piece by piece with a key/value cache: each run() sees every token run
// before it, so generating N tokens runs each token once.
class TransformerSession {
public:
    explicit TransformerSession(const Transformer& transformer);
    // Runs `tokens` after those already run; their logits (vocabulary × tokens), of the tokens from
    // `outputsFrom` on only when it is given (as Transformer::logits; the key/value cache holds
    // them all). Cancelled: an empty matrix, and the session is left as it was.
    // `hidden`, when given, receives the hidden states of these tokens (embedding × tokens)
    // entering each layer and leaving the last: blocks + 1 matrices.
    Eigen::MatrixXf run(const std::vector<std::int32_t>& tokens, const StopToken* stop = nullptr,
                        std::vector<Eigen::MatrixXf>* hidden = nullptr, std::size_t outputsFrom = 0);
    std::size_t position() const { return m_position; }

    // Called before each product of a weight with activations, on the thread that runs, with the
    // weight's name and the activations it meets (its columns × tokens): what llama-imatrix
    // collects.
    using ActivationObserver = std::function<void(const std::string& weight, const Eigen::MatrixXf& input)>;
    void observeActivations(ActivationObserver observer) { m_observer = std::move(observer); }

private:
    friend class Transformer;
    // The tokens' embeddings (with learned positions from position() on).
    Eigen::MatrixXf embed(const std::vector<std::int32_t>& tokens) const;
    // Layers first … blocks − 1 on x (the states entering layer `first`), then the output.
    Eigen::MatrixXf runLayers(Eigen::MatrixXf x, std::uint32_t first, const StopToken* stop,
                              std::vector<Eigen::MatrixXf>* hidden, std::size_t outputsFrom);

    const Transformer& m_transformer;
    ActivationObserver m_observer;
    // Room in the cache of layers `first` on for `positions`: what is cached stays.
    void reserve(std::size_t positions, std::uint32_t first);

    // The key/value cache, per layer, with room after m_position: keys as key values × positions
    // (after RoPE), values transposed (values × positions, a row per value, as attention's sums
    // read them). The room holds anything (a cancelled run's); a run zeroes the values after its
    // last position to a multiple of 16 before attention reads them.
    std::vector<Eigen::MatrixXf> m_keys;
    std::vector<Transformer::RowMatrix> m_values;
    std::size_t m_position = 0;
};

// The FFN's gated activation: act(gate) ⊙ up, act SiLU or (gelu) GELU's tanh approximation, on the
// pool's threads, with the bits Eigen gives evaluating the whole matrices at once; into `out`, in
// the memory it has when it holds as many values.
void gatedActivation(const Eigen::MatrixXf& gate, const Eigen::MatrixXf& up, bool gelu, WorkerPool& pool,
                     Eigen::MatrixXf& out);

// Greedy continuation: the prompt's tokens, then up to `count` tokens each the most likely
// after the ones before, stopping after the end-of-sequence token.
std::vector<std::int32_t> greedyContinuation(const Transformer& transformer, std::vector<std::int32_t> prompt,
                                             std::size_t count, std::int32_t endOfSequence,
                                             const StopToken* stop = nullptr);

// log Σ exp(logits), in double precision: −log p(token) = logSumExp − logits(token).
double logSumExp(const Eigen::Ref<const Eigen::VectorXf>& logits);

} // namespace organ
