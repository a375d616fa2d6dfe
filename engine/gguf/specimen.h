#pragma once

#include "support/job.h"

#include <cstdint>
#include <string>

namespace organ {

// Shape of the specimen: a tiny llama with every key llama.cpp needs to load it.
struct SpecimenShape {
    std::uint32_t vocabulary = 512;
    std::uint32_t embedding = 64;
    std::uint32_t feedForward = 176;
    std::uint32_t blocks = 4;
    std::uint32_t heads = 4;
    std::uint32_t kvHeads = 2;
    std::uint32_t context = 256;
};

// Writes a small llama-architecture model whose weights have structure: per layer a
// low-rank part of varying rank, heavy-tailed (Student-t) noise of varying scale, and
// smooth norms. Two seeds give identical names and shapes and different weights.
// The tokenizer is a 512-token SentencePiece-style vocabulary with byte fallback.
JobResult writeSpecimen(const std::string& path, std::uint64_t seed, const SpecimenShape& shape = {},
                        const ProgressFn& progress = {}, const StopToken* stop = nullptr);

} // namespace organ
