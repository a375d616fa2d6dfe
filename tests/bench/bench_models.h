#pragma once

// Generated models for the benchmarks: the layout of a 70B model over a sparse hole, and the
// shape of Llama-3.2-1B with heavy-tailed random weights in Q8_0 or Q4_K.
#include "gguf/gguf_writer.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace organ::bench {

// The calling thread's CPU time in seconds: on a shared machine a piece of work is not charged for
// the time other processes hold the core.
double threadSeconds();

// Approximately Gaussian values with heavier tails, like trained weights.
class Noise {
public:
    explicit Noise(std::uint64_t seed) : m_state(seed * 0x9E3779B97F4A7C15ull + 1) {}
    float next();

private:
    std::uint64_t m_state;
};

// 80 blocks, 723 tensors in Q4_K/Q6_K, 128 256 tokens with merges; `scale` widens the
// embedding (1: the real 70B layout, about 45 GB).
GgufWriteSpec seventyBLayout(std::uint64_t scale);

// The layout of Kimi K2 (deepseek2: 61 blocks, the first dense, then 384 routed experts and one
// shared; multi-head latent attention; 163 840 tokens), experts in Q4_K: about a trillion
// parameters.
GgufWriteSpec kimiK2Layout();

// The spec cut into `parts` as llama.cpp's gguf-split does: metadata in the first part, split.no,
// split.count and split.tensors.count in each, the tensors spread in order.
std::vector<GgufWriteSpec> splitSpec(const GgufWriteSpec& spec, unsigned parts);

// Writes the header for real and leaves the tensor data a hole; returns the file size.
std::uint64_t writeSparse(const std::string& path, const GgufWriteSpec& spec);

// 16 blocks (or `blocks`), embedding 2048, FFN 8192, vocabulary 128 256; matrices in `type`
// (F32, F16, BF16, Q8_0, Q4_0 … Q5_1, Q4_K or Q6_K), or in the types `typeOf` gives each
// ("attn_q" …, block; the embedding's block is −1) with general.name "bench-1b-" + typeName.
// A `variant` other than 0 moves every value a little in a direction of its own, as a fine-tune
// of the model (variant 0) does: merges of variants combine real differences.
GgufWriteSpec llama1bShape(TensorType type, std::uint32_t blocks = 16, std::uint64_t variant = 0);
GgufWriteSpec llama1bShapeOf(const std::string& typeName,
                             const std::function<TensorType(std::string_view tensor, int block)>& typeOf,
                             std::uint32_t blocks = 16, std::uint64_t variant = 0);
// Q4_K with Q6_K where llama-quantize's Q4_K_M puts it.
GgufWriteSpec llama1bShapeQ4KM();

} // namespace organ::bench
