#pragma once

#include "gguf/tensor_type.h"
#include "measure/value_source.h"
#include "support/job.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace organ {

// Z-measure version 1 (docs/z-measure.md, after ../shared/specs/z-measure-v1.md).
inline constexpr const char* kZMeasureVersion = "v1";
inline constexpr std::uint64_t kDefaultSample = 100000;
inline constexpr std::uint64_t kSampleAll = 0;

struct ZParams {
    std::uint64_t sample = kDefaultSample; // kSampleAll: every element
};

struct ZResult {
    std::uint64_t n = 0;         // values measured (finite ones of the sample)
    std::uint64_t N = 0;         // elements of the tensor
    std::uint64_t nonFinite = 0; // NaN or infinite values in the sample, left out and flagged
    bool constant = false;       // minimum == maximum: no θ
    std::optional<double> H, K, C, sH, sK, sC, theta, signal;
    std::optional<double> beta;          // cross-scale slope, when at least 2 levels
    std::vector<double> levelEnergies;   // E_j, j = 1 (finest) …
    std::uint64_t spectrumNonFinite = 0; // non-finite values in the spectrum window, read as 0

    bool hasTheta() const { return theta.has_value(); }
};

// The three indicators, the scores and θ of a sample. Memory stays bounded whatever the
// sample's size: C is computed from order statistics and the set of distinct values,
// without sorting the sample. Runs on `threads` threads (at least 1); stops early and
// returns nullopt when `stop` is requested.
// How measureSample holds the sample: Auto reads samples of up to kInMemorySample values
// into memory and sorts them; larger ones are streamed in passes with bounded memory.
enum class SampleStrategy { Auto, InMemory, Streaming };
inline constexpr std::uint64_t kInMemorySample = 4u << 20;

std::optional<ZResult> measureSample(const ValueSource& values, unsigned threads = 1,
                                     const StopToken* stop = nullptr,
                                     SampleStrategy strategy = SampleStrategy::Auto);

// β and E_j of the first min(N, 2^20) values of a tensor, zero-padded to a power of two.
void measureSpectrum(const ValueSource& leadingValues, ZResult& result);

// A whole tensor: the stride sample of `params`, then the spectrum.
// `mapping`, when given, holds `data`: its pages are released as they are read.
std::optional<ZResult> measureTensor(TensorType type, std::span<const std::byte> data, std::uint64_t elements,
                                     const ZParams& params, unsigned threads = 1,
                                     const StopToken* stop = nullptr,
                                     std::shared_ptr<const MappedFile> mapping = nullptr);

// θ from H, K and C, as the spec's section 3 defines it; fills the scores too.
void scoreResult(ZResult& result);

// Why a stored result cannot be what measureTensor gave for a tensor of `elements` values
// (out-of-range or non-finite indicators, scores or θ that do not follow from H, K and C),
// or nullopt when it is consistent. Stored results are checked before they are believed.
std::optional<std::string> inconsistency(const ZResult& result, std::uint64_t elements);

} // namespace organ
