#include "vitals/vitals_report.h"

#include "support/errors.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "vitals/tokenizer.h"

#include <algorithm>
#include <cmath>

namespace organ {
namespace {

// A perplexity that is not a number is no measurement: the model computes NaN or infinity
// (NaN or huge weights, a norm epsilon that is not positive).
void requireFinite(const std::string& label, double perplexity) {
    if (!std::isfinite(perplexity)) {
        throw FormatError(label + ": its outputs are not finite numbers (NaN or infinite weights, or a norm "
                                  "epsilon that is not a positive number): no perplexity");
    }
}

} // namespace

void checkActivationMemory(const ModelWeights& model, const TransformerShape& shape, std::size_t textTokens,
                           std::size_t chunk, std::size_t longest, bool hidden, bool parents,
                           ScoredLogits scored) {
    // A pass over the longest piece (its logits, and a parent's beside them) and, in chunks whose
    // logits are kept, the logits of the positions scored (and a parent's).
    const std::size_t tokens = std::max(chunk > 0 ? chunk : textTokens, longest);
    const std::size_t held =
        chunk > 0 && scored == ScoredLogits::Kept ? textTokens / chunk * (chunk - chunk / 2 - 1) : 0;
    const std::uint64_t kv = std::uint64_t(shape.kvHeads) * shape.headSize;
    const std::uint64_t logits = std::uint64_t(shape.vocabulary) * (parents ? 2 : 1);
    const std::uint64_t floats = std::uint64_t(shape.blocks) * 2 * kv +
                                 (hidden ? (std::uint64_t(shape.blocks) + 1) * shape.embedding : 0) +
                                 (held > 0 ? shape.vocabulary : logits);
    const std::uint64_t need = (floats * tokens + logits * held) * sizeof(float);
    const std::uint64_t budget = std::max(kVitalsActivationFloor, 2 * model.tensorBytes());
    if (need > budget) {
        throw FormatError(model.label() + ": a forward pass of " + std::to_string(shape.blocks) +
                          " blocks over " + std::to_string(tokens) + " tokens would hold " +
                          humanBytes(need) + " of keys, values and outputs, more than the " +
                          humanBytes(budget) + " allowed for a model of this size: score a shorter text");
    }
}

namespace {

// The most tokens one run takes: kMaxVitalsTokens, or the model's context when it is shorter.
std::size_t tokenLimit(const ModelWeights& model) {
    const auto context = model.archValue("context_length");
    return context && *context > 0 ? std::min<std::size_t>(kMaxVitalsTokens, *context) : kMaxVitalsTokens;
}

// Calls visit(index, piece, first) for each chunk of `chunk` tokens as llama-perplexity cuts them
// (the rest dropped), `bos` first in each when given; `first`, the first position scored (the
// second half). A visit that returns false (cancelled) ends it: false.
template <class Visit>
bool forEachChunk(const std::vector<std::int32_t>& tokens, std::size_t chunk,
                  const std::optional<std::int32_t>& bos, Visit visit) {
    const std::size_t chunks = tokens.size() / chunk;
    for (std::size_t c = 0; c < chunks; ++c) {
        std::vector<std::int32_t> piece(tokens.begin() + static_cast<std::ptrdiff_t>(c * chunk),
                                        tokens.begin() + static_cast<std::ptrdiff_t>((c + 1) * chunk));
        if (bos) {
            piece.front() = *bos;
        }
        if (!visit(c, piece, chunk / 2)) {
            return false;
        }
    }
    return true;
}

// The logits of the positions llama-perplexity scores in chunks of `chunk` tokens (the second half
// of each, each chunk run on its own with `bos` first when given) and the tokens they predict;
// the hidden states of the first chunk when asked for. Cancelled: nullopt.
std::optional<ScoredText> scoreChunks(const std::vector<std::int32_t>& tokens, std::size_t chunk,
                                      std::optional<std::int32_t> bos, const PieceRun& run) {
    ScoredText out;
    const bool whole = forEachChunk(
        tokens, chunk, bos, [&](std::size_t c, const std::vector<std::int32_t>& piece, std::size_t first) {
            const Eigen::MatrixXf logits = run(c, piece, first);
            if (logits.cols() == 0) {
                return false;
            }
            if (c == 0) {
                out.logits.resize(logits.rows(),
                                  static_cast<Eigen::Index>(tokens.size() / chunk * (chunk - first - 1)));
            }
            for (std::size_t p = first; p + 1 < chunk; ++p) {
                out.logits.col(static_cast<Eigen::Index>(out.targets.size())) =
                    logits.col(static_cast<Eigen::Index>(p - first));
                out.targets.push_back(piece[p + 1]);
            }
            return true;
        });
    return whole ? std::optional<ScoredText>(std::move(out)) : std::nullopt;
}

} // namespace

std::vector<std::int32_t> vitalsTokens(const ModelWeights& model, const Tokenizer& tokenizer,
                                       const VitalsRequest& request, std::size_t* clippedFrom) {
    std::string_view text = request.text.empty() ? defaultVitalsText() : std::string_view(request.text);
    if (request.chunk > 0 && text.ends_with('\n')) {
        text.remove_suffix(1);
    }
    std::vector<std::int32_t> tokens = tokenizer.encode(text);
    const std::size_t limit = tokenLimit(model);
    if (request.chunk > 0 && (request.chunk < kMinVitalsChunk || request.chunk > limit)) {
        throw FormatError(model.label() + ": chunks of " + std::to_string(request.chunk) +
                          " tokens; vital signs take " + std::to_string(kMinVitalsChunk) + " to " +
                          std::to_string(limit) + " (the model's context)");
    }
    if (request.chunk > 0 && tokens.size() < 2 * request.chunk) {
        throw FormatError(model.label() + ": the text is " + std::to_string(tokens.size()) +
                          " tokens; chunks of " + std::to_string(request.chunk) + " need at least " +
                          std::to_string(2 * request.chunk));
    }
    if (request.chunk == 0 && request.text.empty() && tokens.size() > limit) {
        if (clippedFrom != nullptr) {
            *clippedFrom = tokens.size();
        }
        tokens.resize(limit);
    }
    if (request.chunk == 0 && tokens.size() > limit) {
        throw FormatError(model.label() + ": the text is " + std::to_string(tokens.size()) +
                          " tokens; vital signs take at most " + std::to_string(limit) +
                          ": shorten it, or score it in chunks");
    }
    // Perplexity predicts each token from those before it: one token (or an empty vocabulary's
    // none) predicts nothing, and a perplexity of 0 would look like a perfect model.
    if (tokens.size() < 2) {
        throw FormatError(model.label() + ": the text is " + std::to_string(tokens.size()) +
                          " token(s) in the model's vocabulary; perplexity needs at least 2");
    }
    return tokens;
}

void checkScoredText(const std::string& label, std::string_view text) {
    if (text.empty()) {
        throw FormatError(label + ": the text is empty");
    }
    if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
        throw FormatError(label + ": a NUL byte at byte " + std::to_string(nul) +
                          ": a binary file, not a text to score");
    }
    if (!isValidUtf8(text)) {
        throw FormatError(label +
                          ": not UTF-8 text (another encoding, or not a text): convert it to UTF-8 to "
                          "score it");
    }
}

std::size_t chunkToFit(const ModelWeights& model, const std::string& text) {
    if (text.empty()) {
        return 0;
    }
    const Tokenizer tokenizer = Tokenizer::fromWeights(model);
    const std::size_t limit = tokenLimit(model);
    std::size_t tokens = tokenizer.encode(text).size();
    if (tokens <= limit) {
        return 0;
    }
    // As a text in chunks is read: one final newline dropped (encoded again only then).
    if (text.ends_with('\n')) {
        tokens = tokenizer.encode(std::string_view(text).substr(0, text.size() - 1)).size();
    }
    return std::min(limit, tokens / 2);
}

std::optional<ScoredText> scorePieces(const std::vector<std::int32_t>& tokens, std::size_t chunk,
                                      std::optional<std::int32_t> bos, const PieceRun& run) {
    if (chunk > 0) {
        return scoreChunks(tokens, chunk, bos, run);
    }
    ScoredText whole{run(0, tokens, 0), {}};
    if (whole.logits.cols() == 0 && !tokens.empty()) {
        return std::nullopt;
    }
    whole.targets.assign(tokens.begin() + 1, tokens.end());
    return whole;
}

Perplexity perplexityOf(const ScoredText& scored) {
    // perplexityOf's tokens: column i predicts tokens[i + 1].
    std::vector<std::int32_t> tokens{0};
    tokens.insert(tokens.end(), scored.targets.begin(), scored.targets.end());
    return perplexityOf(scored.logits, tokens);
}

std::optional<ScoredText> scoreTokens(const Transformer& transformer, const std::vector<std::int32_t>& tokens,
                                      std::size_t chunk, std::optional<std::int32_t> bos,
                                      std::vector<Eigen::MatrixXf>* hidden, const StopToken* stop) {
    return scorePieces(
        tokens, chunk, bos, [&](std::size_t index, const std::vector<std::int32_t>& piece, std::size_t from) {
            return TransformerSession(transformer).run(piece, stop, index == 0 ? hidden : nullptr, from);
        });
}

std::optional<VitalsReport> takeVitals(const ModelWeights& model,
                                       const std::vector<const ModelWeights*>& parents,
                                       const VitalsRequest& request, const ProgressFn& progress,
                                       const StopToken* stop) {
    const Tokenizer tokenizer = Tokenizer::fromWeights(model);
    VitalsReport report;
    report.label = model.label();
    report.architecture = model.architecture();
    report.tokens = vitalsTokens(model, tokenizer, request, &report.clippedFrom);
    report.chunk = request.chunk;
    const std::vector<std::int32_t> prompt =
        request.continuation > 0 ? tokenizer.encode(request.prompt) : std::vector<std::int32_t>();
    const std::size_t limit = tokenLimit(model);
    if (prompt.size() + request.continuation > limit) {
        throw FormatError(model.label() + ": the prompt (" + std::to_string(prompt.size()) + " tokens) and " +
                          std::to_string(request.continuation) + " more come to more than " +
                          std::to_string(limit) + " tokens");
    }
    // In chunks, every model runs each chunk in turn and what is measured of it is kept, not its
    // logits: memory follows a chunk, not the text.
    const bool chunked = request.chunk > 0;
    const std::uint64_t steps = 1 + (chunked ? report.tokens.size() / request.chunk : 1 + parents.size());
    std::uint64_t done = 0;
    auto step = [&](std::string_view stage) {
        if (progress) {
            progress({done++, steps, std::string(stage)});
        }
    };
    // An organ directory's tensors are checked against its manifest before they are run.
    std::vector<const ModelWeights*> all{&model};
    all.insert(all.end(), parents.begin(), parents.end());
    for (const ModelWeights* weights : all) {
        if (!weights->checkPromises(stop)) {
            return std::nullopt;
        }
    }
    const Transformer transformer{model};
    checkActivationMemory(model, transformer.shape(), report.tokens.size(), request.chunk,
                          prompt.size() + request.continuation, request.layerImportance, !parents.empty(),
                          ScoredLogits::PerChunk);
    std::vector<Eigen::MatrixXf> hidden;
    std::vector<Eigen::MatrixXf>* keep = request.layerImportance ? &hidden : nullptr;
    const std::optional<std::int32_t> bos = tokenizer.leadingBos();
    std::vector<double> nll;
    std::vector<std::vector<double>> parentNll(parents.size());
    std::vector<std::vector<double>> kl(parents.size());
    std::vector<std::size_t> agree(parents.size(), 0);
    // A piece whose NLL is not a number ends the run there, before the next piece or model runs:
    // so would its perplexity.
    auto requireFiniteFrom = [](const std::string& label, const std::vector<double>& values,
                                std::size_t from) {
        for (std::size_t i = from; i < values.size(); ++i) {
            requireFinite(label, values[i]);
        }
    };
    // Runs a piece (scored from position `first` on) on the model, then on each parent (set up for
    // the piece: its threads are not held for the whole run), and appends what is measured of it.
    // The KL is over every column of a whole text, over the columns that predict a token in a
    // chunk. False: cancelled.
    auto measure = [&](const std::vector<std::int32_t>& piece, std::size_t first,
                       std::vector<Eigen::MatrixXf>* states) {
        step(chunked ? "running chunks" : "running the model");
        const Eigen::MatrixXf ours = TransformerSession(transformer).run(piece, stop, states, first);
        if (ours.cols() == 0) {
            return false;
        }
        // Column i predicts scored[i + 1].
        const std::vector<std::int32_t> scored(piece.begin() + static_cast<std::ptrdiff_t>(first),
                                               piece.end());
        const std::size_t from = nll.size();
        appendNll(ours, scored, nll);
        requireFiniteFrom(model.label(), nll, from);
        const Eigen::Index compared = chunked ? ours.cols() - 1 : ours.cols();
        for (std::size_t i = 0; i < parents.size(); ++i) {
            if (!chunked) {
                step("running " + parents[i]->label());
            }
            const Eigen::MatrixXf logits =
                TransformerSession(Transformer(*parents[i])).run(piece, stop, nullptr, first);
            if (logits.cols() == 0) {
                return false;
            }
            const std::size_t theirsFrom = parentNll[i].size();
            appendNll(logits, scored, parentNll[i]);
            requireFiniteFrom(parents[i]->label(), parentNll[i], theirsFrom);
            appendDivergence(logits.leftCols(compared), ours.leftCols(compared), kl[i], agree[i]);
        }
        return true;
    };
    const bool whole =
        !chunked
            ? measure(report.tokens, 0, keep)
            : forEachChunk(report.tokens, request.chunk, bos,
                           [&](std::size_t c, const std::vector<std::int32_t>& piece, std::size_t first) {
                               return measure(piece, first, c == 0 ? keep : nullptr);
                           });
    if (!whole) {
        return std::nullopt;
    }
    report.scored = nll.size();
    report.perplexity = perplexityOfNll(std::move(nll));
    requireFinite(model.label(), report.perplexity.perplexity);
    report.importance = layerImportanceOf(hidden);
    for (std::size_t i = 0; i < parents.size(); ++i) {
        report.parents.push_back({parents[i]->label(), perplexityOfNll(std::move(parentNll[i])),
                                  divergenceOfKl(std::move(kl[i]), agree[i])});
        requireFinite(parents[i]->label(), report.parents.back().perplexity.perplexity);
    }
    step("continuing the prompt");
    report.prompt = request.prompt;
    if (request.continuation > 0) {
        const std::vector<std::int32_t> all =
            greedyContinuation(transformer, prompt, request.continuation, tokenizer.eos(), stop);
        report.continuation = tokenizer.decode(
            std::vector<std::int32_t>(all.begin() + std::ptrdiff_t(prompt.size()), all.end()));
    }
    if (stop != nullptr && stop->stopRequested()) {
        return std::nullopt;
    }
    if (progress) {
        progress({steps, steps, "done"});
    }
    return report;
}

nlohmann::json vitalsToJson(const VitalsReport& r) {
    auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    nlohmann::json layers = nlohmann::json::array();
    for (std::size_t l = 0; l < r.importance.angular.size(); ++l) {
        layers.push_back({{"layer", l},
                          {"angular_distance", number(r.importance.angular[l])},
                          {"block_influence", number(r.importance.blockInfluence[l])}});
    }
    nlohmann::json cheapest = nlohmann::json::array();
    for (std::size_t n = 1; n <= r.importance.cheapest.size(); ++n) {
        const auto& b = r.importance.cheapest[n - 1];
        cheapest.push_back({{"layers", n},
                            {"first", b.first},
                            {"last", b.first + n - 1},
                            {"angular_distance", number(b.distance)}});
    }
    nlohmann::json parents = nlohmann::json::array();
    for (const auto& p : r.parents) {
        parents.push_back({{"model", jsonText(p.label)},
                           {"perplexity", number(p.perplexity.perplexity)},
                           {"kl_mean", number(p.divergence.meanKl)},
                           {"kl_p99", number(p.divergence.p99Kl)},
                           {"top1_agreement", number(p.divergence.topAgreement)}});
    }
    return {{"format", "organ-vitals"},
            {"version", 1},
            {"model", jsonText(r.label)},
            {"architecture", jsonText(r.architecture)},
            {"tokens", r.tokens.size()},
            {"clipped_from", r.clippedFrom},
            {"chunk", r.chunk},
            {"scored", r.scored},
            {"perplexity", number(r.perplexity.perplexity)},
            {"mean_nll", number(r.perplexity.meanNll)},
            {"layers", layers},
            {"cheapest_blocks", cheapest},
            {"parents", parents},
            {"prompt", jsonText(r.prompt)},
            {"continuation", jsonText(r.continuation)}};
}

std::string vitalsText(const VitalsReport& r) {
    std::string out =
        escapeText(r.label) + "  (" + escapeText(r.architecture) + ", " + std::to_string(r.tokens.size()) +
        " tokens" +
        (r.clippedFrom > 0 ? ": the first of the built-in text's " + std::to_string(r.clippedFrom) +
                                 ", as many as the model's context holds"
                           : std::string()) +
        (r.chunk > 0
             ? "; in chunks of " + std::to_string(r.chunk) + ", " + std::to_string(r.scored) + " scored"
             : std::string()) +
        ")\n";
    out += "  perplexity " + fixedDecimals(r.perplexity.perplexity, 4) + "   mean NLL " +
           fixedDecimals(r.perplexity.meanNll, 4) + "\n";
    if (!r.parents.empty()) {
        out += "\n  " + padText("parent", 32) + padText("perplexity", 12, true) +
               padText("KL mean", 10, true) + padText("KL p99", 10, true) + padText("top-1", 9, true) + "\n";
        for (const auto& p : r.parents) {
            out += "  " + padText(escapeText(p.label), 32) +
                   padText(fixedDecimals(p.perplexity.perplexity, 4), 12, true) +
                   padText(fixedDecimals(p.divergence.meanKl, 4), 10, true) +
                   padText(fixedDecimals(p.divergence.p99Kl, 4), 10, true) +
                   padText(fixedDecimals(100 * p.divergence.topAgreement, 1) + " %", 9, true) + "\n";
        }
    }
    out += "\n  " + padText("layer", 7) + padText("angular", 9, true) + padText("influence", 11, true) + "\n";
    for (std::size_t l = 0; l < r.importance.angular.size(); ++l) {
        out += "  " + padText(std::to_string(l), 7) +
               padText(fixedDecimals(r.importance.angular[l], 3), 9, true) +
               padText(fixedDecimals(r.importance.blockInfluence[l], 3), 11, true) + "\n";
    }
    if (!r.importance.cheapest.empty()) {
        out += "  least needed:";
        for (std::size_t n = 1; n <= r.importance.cheapest.size() && n <= 4; ++n) {
            const auto& b = r.importance.cheapest[n - 1];
            out += n == 1 ? " layer " + std::to_string(b.first)
                          : ", " + std::to_string(n) + " layers " + std::to_string(b.first) + "–" +
                                std::to_string(b.first + n - 1);
        }
        out += "\n";
    }
    if (!r.continuation.empty()) {
        out += "\n  " + escapeText(r.prompt) + "▸" + escapeText(r.continuation) + "\n";
    }
    return out;
}

} // namespace organ
