#pragma once

#include "vitals/vitals_report.h"

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <vector>

namespace organ {

// A text run with the hidden states entering each layer kept, piece by piece: weights that are
// the same as the run's up to some layer run again from that layer on, not from the tokens (the
// quantization lab's groups, the surgeon's candidates).
struct StatesRun {
    std::vector<std::int32_t> tokens;
    std::size_t chunk = 0; // as VitalsRequest::chunk
    std::optional<std::int32_t> bos;
    ScoredText scored;
    // Per piece: blocks + 1 states (embedding × tokens); empty when they were not kept.
    std::vector<std::vector<Eigen::MatrixXf>> entering;
};

// Whether the states of `tokens` fit in the memory vital signs allow a model of these weights.
bool statesFit(const ModelWeights& weights, const TransformerShape& shape, std::size_t tokens);

// `tokens` scored by `transformer` as scorePieces scores them, its states kept when `keep`.
// Cancelled: nullopt.
std::optional<StatesRun> runKeepingStates(const Transformer& transformer, std::vector<std::int32_t> tokens,
                                          std::size_t chunk, std::optional<std::int32_t> bos, bool keep,
                                          const StopToken* stop = nullptr);

// `transformer` on `run`'s pieces, from layer `first` on where `run` kept its states (its
// weights must be the run's before that layer); from the tokens without them or without `first`.
// Cancelled: nullopt.
std::optional<ScoredText> runFromLayer(const Transformer& transformer, const StatesRun& run,
                                       std::optional<std::uint32_t> first, const StopToken* stop = nullptr);

} // namespace organ
