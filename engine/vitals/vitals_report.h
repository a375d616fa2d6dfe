#pragma once

#include "vitals/forward.h"
#include "vitals/model_weights.h"
#include "vitals/tokenizer.h"
#include "vitals/vital_signs.h"

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace organ {

// The built-in text vital signs are taken on (resources/texts/vital-signs.txt: short stories
// in plain English, like those the stories models were trained on).
std::string_view defaultVitalsText();

// The longest text vital signs score, and the longest prompt plus continuation: attention
// grows with the square of the tokens (at most the model's context length, if shorter).
inline constexpr std::size_t kMaxVitalsTokens = 4096;

struct VitalsRequest {
    std::string text; // the text to score; empty: defaultVitalsText()
    std::string prompt = "Once upon a time";
    std::size_t continuation = 32; // greedy tokens after the prompt (0: none)
    bool layerImportance = true;   // false: the perplexity only (no hidden states kept)
    // 0: the text is scored whole. Else llama-perplexity -c `chunk`'s way, for a text longer than
    // the context: the text (one final newline dropped, as llama.cpp reads a file) cut into chunks
    // of `chunk` tokens (the rest dropped), each run on its own with BOS first where the vocabulary
    // asks for it, and the second half of each scored; layer importance from the first chunk.
    std::size_t chunk = 0;
};

// The shortest chunk vital signs score (its second half predicts at least one token).
inline constexpr std::size_t kMinVitalsChunk = 4;

// What a forward pass may hold besides the weights (keys, values, hidden states, logits): at
// least this, or twice the model's tensor bytes for a larger model. A run that would need more
// is refused before it starts: memory follows the model's size, not a number it declares.
inline constexpr std::uint64_t kVitalsActivationFloor = 1ull << 30;

// The vital signs of one model, and of its parents on the same tokens.
struct VitalsReport {
    std::string label;
    std::string architecture;
    std::vector<std::int32_t> tokens;
    // The built-in text is cut to the model's context when it is longer: its whole length in
    // tokens then (0: the text was scored whole).
    std::size_t clippedFrom = 0;
    std::size_t chunk = 0;  // scored in chunks of this many tokens (0: whole)
    std::size_t scored = 0; // the positions the perplexity is over
    Perplexity perplexity;
    LayerImportance importance;
    std::string prompt;
    std::string continuation; // the greedy text after the prompt
    struct Parent {
        std::string label;
        Perplexity perplexity;
        Divergence divergence; // KL(parent ‖ model)
    };
    std::vector<Parent> parents;
};

// Tokenizes with the model's own vocabulary, runs the model (and each parent, which must share
// its vocabulary) and measures. A text (or, with `chunk`, a chunk) or prompt longer than
// kMaxVitalsTokens (or the model's context), a text of fewer than 2 tokens (with `chunk`: fewer than
// two chunks), and a run that would hold more than the activation
// budget (kVitalsActivationFloor) are refused before anything runs; the built-in text is cut to
// fit instead. Tensors promised a SHA-256 (an organ directory's) are checked first. A perplexity
// that is not a finite number (NaN weights) is an error, not a result. Throws
// VitalsUnavailable, FormatError. Cancelled: nullopt.
std::optional<VitalsReport> takeVitals(const ModelWeights& model,
                                       const std::vector<const ModelWeights*>& parents,
                                       const VitalsRequest& request, const ProgressFn& progress = {},
                                       const StopToken* stop = nullptr);

// Whether the logits of every scored position are kept to the end (a search compares candidates
// with them), or each chunk's go once measured (takeVitals).
enum class ScoredLogits { Kept, PerChunk };
// Refuses (FormatError) a text of `textTokens` run whole or in chunks of `chunk` (and a piece of
// `longest` tokens, a prompt and its continuation) whose keys, values, hidden states (`hidden`)
// and logits (a parent's beside them: `parents`) would hold more than the activation budget.
void checkActivationMemory(const ModelWeights& model, const TransformerShape& shape, std::size_t textTokens,
                           std::size_t chunk, std::size_t longest, bool hidden, bool parents,
                           ScoredLogits scored);

// The tokens takeVitals scores for `request`, checked as it checks them (the text against the
// model's context, the chunks against the text); the built-in text is cut to the context, and
// `clippedFrom` (when given) then receives its whole length. Throws FormatError.
std::vector<std::int32_t> vitalsTokens(const ModelWeights& model, const Tokenizer& tokenizer,
                                       const VitalsRequest& request, std::size_t* clippedFrom = nullptr);

// Refuses (FormatError, naming `label`) a text to score that is empty, has a NUL byte (a binary
// file) or is not UTF-8: its tokens would measure nothing the user meant.
void checkScoredText(const std::string& label, std::string_view text);

// The chunk a text is scored in when none is asked for: 0 (whole) when its tokens fit the
// model's context, else the context, as llama-perplexity's default, or half the text's tokens where
// that is less (two chunks at least are scored). The built-in text (empty) is cut to fit: 0.
std::size_t chunkToFit(const ModelWeights& model, const std::string& text);

// A model's logits on the positions takeVitals scores, and the tokens they predict (column i
// predicts targets[i]).
struct ScoredText {
    Eigen::MatrixXf logits;
    std::vector<std::int32_t> targets;
};
// The perplexity of the scored positions.
Perplexity perplexityOf(const ScoredText& scored);
// Runs one piece of a text (its index, its tokens) and gives the logits of its positions from
// `from` on, the only ones scored (vocabulary × (tokens − from)); an empty matrix when cancelled.
using PieceRun = std::function<Eigen::MatrixXf(std::size_t index, const std::vector<std::int32_t>& piece,
                                               std::size_t from)>;
// `tokens` run whole (one piece; every position but the last scored), or with `chunk` in chunks as
// llama-perplexity -c runs them (`bos` first in each, the second halves scored), each piece by
// `run`. Cancelled: nullopt.
std::optional<ScoredText> scorePieces(const std::vector<std::int32_t>& tokens, std::size_t chunk,
                                      std::optional<std::int32_t> bos, const PieceRun& run);
// The same, each piece run by `transformer` on a session of its own. `hidden`: the hidden states
// of the first piece. Cancelled: nullopt.
std::optional<ScoredText> scoreTokens(const Transformer& transformer, const std::vector<std::int32_t>& tokens,
                                      std::size_t chunk, std::optional<std::int32_t> bos,
                                      std::vector<Eigen::MatrixXf>* hidden, const StopToken* stop = nullptr);

// `organ vitals --json`, documented in docs/vitals-json.md.
nlohmann::json vitalsToJson(const VitalsReport& report);
// The terminal's table.
std::string vitalsText(const VitalsReport& report);

} // namespace organ
