#pragma once

#include "graft/graft_check.h"
#include "graft/graft_plan.h"
#include "support/job.h"
#include "vitals/layer_states.h"

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace organ {

// What a candidate is scored by: the mean negative log-likelihood of the text's next tokens, or
// the mean KL divergence of its next-token distributions from a reference model's.
enum class SurgeonObjective { Nll, Kl };

// A text candidates are scored on: its tokens in the recipient's vocabulary, run whole or in
// chunks as vital signs run them, and for the KL objective the reference's logits on its scored
// positions.
struct ScoringText {
    std::vector<std::int32_t> tokens;
    std::size_t chunk = 0;
    std::optional<std::int32_t> bos;
    std::optional<Eigen::MatrixXf> reference;
};

struct CandidateScore {
    double objective = 0;         // infinite when the chimera's outputs are not finite
    std::uint32_t layers = 0;     // the chimera's blocks
    std::uint64_t bytes = 0;      // its tensors' bytes
    std::uint64_t parameters = 0; // its tensors' elements
    double bitsPerWeight() const { return parameters == 0 ? 0 : 8.0 * double(bytes) / double(parameters); }
};

// Scores graft plans on one text by the forward pass on the chimera they would write (never
// written). A plan scored before is answered from a cache keyed on its canonical JSON; a plan that
// shares its first layers with the anchor runs from the first layer it changes, on the anchor's
// hidden states. Runs on the caller's thread.
class CandidateEvaluator {
public:
    CandidateEvaluator(GraftModels models, ScoringText text, unsigned threads);

    // Throws FormatError naming the plan's problem when it has errors. Cancelled: nullopt.
    std::optional<CandidateScore> score(const GraftPlan& plan, const StopToken* stop = nullptr);
    // Runs `plan` keeping its hidden states, for the candidates scored after it (nothing when it is
    // the anchor already). Cancelled: false.
    bool anchorOn(const GraftPlan& plan, const StopToken* stop = nullptr);

    // Whether the anchor kept its hidden states (false: they would not fit in the memory vital
    // signs allow, and candidates run from the tokens).
    bool anchorKeepsStates() const { return m_anchor && !m_anchor->run.entering.empty(); }
    std::uint64_t runs() const { return m_runs; }           // forward passes of candidates
    std::uint64_t cacheHits() const { return m_hits; }      // plans answered from the cache
    std::uint64_t layersRun() const { return m_layersRun; } // blocks run, over all candidates

private:
    struct Anchor {
        std::string key; // the plan's canonical JSON
        ChimeraLayout layout;
        StatesRun run;
    };
    GraftModels m_models;
    ScoringText m_text;
    StatesRun m_plain; // the text's pieces without states
    unsigned m_threads;
    std::optional<Anchor> m_anchor;
    std::unordered_map<std::string, CandidateScore> m_cache;
    std::uint64_t m_runs = 0;
    std::uint64_t m_hits = 0;
    std::uint64_t m_layersRun = 0;
};

// The first layer whose tensors `candidate` takes from elsewhere than `anchor` does (the number of
// blocks of the shallower when only what follows the layers differs); nullopt when what enters the
// first layer differs (the embedding, the metadata, a quantization of the whole).
std::optional<std::uint32_t> firstChangedLayer(const ChimeraLayout& anchor, const ChimeraLayout& candidate);

} // namespace organ
