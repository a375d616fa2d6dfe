#include "vitals/imatrix_collector.h"

#include "support/errors.h"
#include "vitals/forward.h"
#include "vitals/tokenizer.h"

#include <cmath>

namespace organ {

void ImatrixCollector::add(const std::string& weight, const Eigen::MatrixXf& input) {
    // llama-imatrix asks only for layer weights, and passes over products of fewer than 16 tokens.
    if (!weight.starts_with("blk.") || input.cols() < static_cast<Eigen::Index>(kMinImatrixChunk)) {
        return;
    }
    Sums& sums = m_sums[weight];
    const auto columns = static_cast<std::size_t>(input.rows());
    if (sums.squares.empty()) {
        sums.squares.assign(columns, 0.0f);
    } else if (sums.squares.size() != columns) {
        throw FormatError(weight + " met " + std::to_string(columns) + " inputs after " +
                          std::to_string(sums.squares.size()));
    }
    for (Eigen::Index t = 0; t < input.cols(); ++t) {
        const float* x = input.col(t).data();
        for (std::size_t j = 0; j < columns; ++j) {
            sums.squares[j] += x[j] * x[j];
        }
    }
    sums.count += static_cast<std::uint64_t>(input.cols());
}

ImatrixData ImatrixCollector::data(std::vector<std::string> datasets, std::uint32_t chunkCount,
                                   std::uint32_t chunkSize) const {
    ImatrixData out;
    out.datasets = std::move(datasets);
    out.chunkCount = chunkCount;
    out.chunkSize = chunkSize;
    for (const auto& [weight, sums] : m_sums) {
        out.entries.emplace(weight, ImatrixEntry{sums.squares, {static_cast<float>(sums.count)}});
    }
    return out;
}

std::optional<ImatrixRun> collectImatrix(const ModelWeights& model, const ImatrixRequest& request,
                                         const ProgressFn& progress, const StopToken* stop) {
    const std::string& label = model.label();
    const std::size_t chunk = request.chunk;
    if (chunk < kMinImatrixChunk || chunk > kMaxImatrixChunk) {
        throw FormatError(label + ": chunks of " + std::to_string(chunk) +
                          " tokens; an importance matrix takes " + std::to_string(kMinImatrixChunk) + " to " +
                          std::to_string(kMaxImatrixChunk));
    }
    std::string_view text = request.text;
    if (text.ends_with('\n')) {
        text.remove_suffix(1);
    }
    const Tokenizer tokenizer = Tokenizer::fromWeights(model);
    const std::vector<std::int32_t> tokens = tokenizer.encode(text);
    if (tokens.size() < 2 * chunk) {
        throw FormatError(label + ": the text is " + std::to_string(tokens.size()) + " tokens; chunks of " +
                          std::to_string(chunk) + " need at least " + std::to_string(2 * chunk));
    }
    const std::size_t chunks = tokens.size() / chunk;
    const Transformer transformer{model};
    ImatrixCollector collector;
    ProgressThrottle throttle(progress);
    double nll = 0;
    std::size_t scored = 0;
    for (std::size_t c = 0; c < chunks; ++c) {
        throttle.report(c, chunks, "running chunks");
        std::vector<std::int32_t> piece(tokens.begin() + static_cast<std::ptrdiff_t>(c * chunk),
                                        tokens.begin() + static_cast<std::ptrdiff_t>((c + 1) * chunk));
        if (tokenizer.addsBos()) {
            piece.front() = tokenizer.bos();
        }
        TransformerSession session(transformer);
        session.observeActivations(
            [&](const std::string& weight, const Eigen::MatrixXf& input) { collector.add(weight, input); });
        const Eigen::MatrixXf logits = session.run(piece, stop);
        if (logits.cols() == 0) {
            return std::nullopt;
        }
        // llama-imatrix scores the second half of each chunk, whose tokens see at least half a chunk.
        for (std::size_t p = chunk / 2; p + 1 < chunk; ++p) {
            const auto column = static_cast<Eigen::Index>(p);
            nll += logSumExp(logits.col(column)) - logits(piece[p + 1], column);
            ++scored;
        }
    }
    throttle.report(chunks, chunks, "done", true);
    ImatrixRun run;
    run.matrix = collector.data({request.dataset}, static_cast<std::uint32_t>(chunks),
                                static_cast<std::uint32_t>(chunk));
    run.tokens = tokens.size();
    run.perplexity = std::exp(nll / static_cast<double>(scored));
    return run;
}

nlohmann::json imatrixRunToJson(const ImatrixRun& run, const std::string& output, bool written) {
    return {
        {"output", output},
        {"written", written},
        {"datasets", run.matrix.datasets},
        {"chunks", run.matrix.chunkCount},
        {"chunk_size", run.matrix.chunkSize},
        {"tokens", run.tokens},
        {"weights", run.matrix.entries.size()},
        {"perplexity", std::isfinite(run.perplexity) ? nlohmann::json(run.perplexity) : nlohmann::json()}};
}

} // namespace organ
