#include "vitals/layer_states.h"

#include <algorithm>

namespace organ {

bool statesFit(const ModelWeights& weights, const TransformerShape& shape, std::size_t tokens) {
    const std::uint64_t states = std::uint64_t(shape.blocks + 1) * shape.embedding * tokens * sizeof(float);
    return states <= std::max(kVitalsActivationFloor, 2 * weights.tensorBytes());
}

std::optional<StatesRun> runKeepingStates(const Transformer& transformer, std::vector<std::int32_t> tokens,
                                          std::size_t chunk, std::optional<std::int32_t> bos, bool keep,
                                          const StopToken* stop) {
    StatesRun run;
    run.tokens = std::move(tokens);
    run.chunk = chunk;
    run.bos = bos;
    auto scored = scorePieces(
        run.tokens, chunk, bos, [&](std::size_t, const std::vector<std::int32_t>& piece, std::size_t from) {
            std::vector<Eigen::MatrixXf> hidden;
            Eigen::MatrixXf logits =
                TransformerSession(transformer).run(piece, stop, keep ? &hidden : nullptr, from);
            if (keep) {
                run.entering.push_back(std::move(hidden));
            }
            return logits;
        });
    if (!scored) {
        return std::nullopt;
    }
    run.scored = std::move(*scored);
    return run;
}

std::optional<ScoredText> runFromLayer(const Transformer& transformer, const StatesRun& run,
                                       std::optional<std::uint32_t> first, const StopToken* stop) {
    return scorePieces(run.tokens, run.chunk, run.bos,
                       [&](std::size_t index, const std::vector<std::int32_t>& piece, std::size_t from) {
                           return run.entering.empty() || !first
                                      ? TransformerSession(transformer).run(piece, stop, nullptr, from)
                                      : transformer.logitsFrom(*first, run.entering[index][*first], stop,
                                                               from);
                       });
}

} // namespace organ
