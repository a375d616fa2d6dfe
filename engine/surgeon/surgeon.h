#pragma once

#include "gguf/gguf_model.h"
#include "graft/graft_plan.h"
#include "merge/merge_method.h"
#include "support/job.h"
#include "surgeon/candidate_evaluator.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace organ {

// What the surgeon searches for (docs/auto-surgeon.md).
enum class SurgeonGoal {
    Prune,  // the `prune` blocks of the recipient whose removal hurts least
    Merge,  // per-layer and per-system weights (and densities) of a merge of the donors into it
    Organs, // per layer and system, the donor whose tensors (or the recipient's own) do best
};
std::string_view surgeonGoalName(SurgeonGoal goal); // prune, merge, organs

// The models of a search, open, each with the path plans name it by.
struct SurgeonModels {
    std::pair<std::string, std::shared_ptr<const GgufModel>> recipient;
    std::vector<std::pair<std::string, std::shared_ptr<const GgufModel>>> donors;
    // The KL objective's reference; without it the objective is the text's mean NLL.
    std::optional<std::pair<std::string, std::shared_ptr<const GgufModel>>> reference;
};

// Limits a chosen plan must keep; a candidate beyond one is recorded but never chosen.
struct SurgeonConstraints {
    std::optional<std::uint64_t> maxBytes; // the chimera's tensor bytes
    std::optional<double> maxBitsPerWeight;
    std::optional<std::uint32_t> maxLayers;
};

struct SurgeonRequest {
    SurgeonGoal goal = SurgeonGoal::Prune;
    std::string text;      // the search's text; empty: the built-in text of vital signs
    std::string holdout;   // a text the search never sees, on which the finalists are reported; may be empty
    std::size_t chunk = 0; // as VitalsRequest::chunk, for both texts
    // Prune: blocks to remove, and the beam (1: SLEB's greedy search).
    std::uint32_t prune = 1;
    std::size_t beam = 1;
    // Merge: task_arithmetic or ties; control points of each per-layer gradient; offspring per
    // generation of the (1+λ) evolution strategy; the seed of its draws.
    MergeMethod method = MergeMethod::TaskArithmetic;
    std::uint32_t controlPoints = 3;
    std::size_t offspring = 6;
    std::uint32_t generations = 20; // at most, after the uniform weights
    std::uint64_t seed = 0;
    // Organs: sweeps of the coordinate descent at most.
    std::uint32_t sweeps = 3;
    // The budget: candidates scored (cache hits are free) and wall-clock seconds; 0: no limit.
    std::uint64_t maxEvaluations = 0;
    double maxSeconds = 0;
    SurgeonConstraints constraints;
    unsigned threads = 0; // for the forward pass (0: one per core)
    std::string output;   // the output of the plans made (for the plan file; nothing is written)
};

// Bounds on a request, so that none makes the work grow without bound.
inline constexpr std::size_t kMaxSurgeonBeam = 64;
inline constexpr std::uint32_t kMaxSurgeonControlPoints = 16;
inline constexpr std::size_t kMaxSurgeonOffspring = 256;
inline constexpr std::uint32_t kMaxSurgeonSweeps = 100;
inline constexpr std::uint32_t kMaxSurgeonGenerations = 100000;

// One plan the search scored.
struct SurgeonCandidate {
    std::string stage;   // "recipient", "angular_distance", "block_influence", "greedy", "beam",
                         // "uniform", "evolution", "organs"
    std::string summary; // what the plan does, in a line ("removes blocks 2, 4")
    CandidateScore score;
    std::optional<double> holdout; // the objective on the held-out text (finalists only)
    bool feasible = false;         // a complete answer to the goal within the constraints
    double seconds = 0;            // since the search started
    GraftPlan plan;
};

struct SurgeonRecord {
    SurgeonGoal goal = SurgeonGoal::Prune;
    SurgeonObjective objective = SurgeonObjective::Nll;
    std::string recipient;
    std::vector<std::string> donors;
    std::string reference;
    std::size_t searchTokens = 0;
    std::size_t holdoutTokens = 0;
    std::vector<SurgeonCandidate> candidates;
    std::optional<std::size_t> best; // the lowest objective among the feasible candidates
    // Per stage, in the order they ran, its best feasible candidate (the recipient's stage: the
    // recipient as it is). A plan two stages reached is each one's.
    struct Finalist {
        std::string stage;
        std::size_t candidate = 0;
    };
    std::vector<Finalist> finalists;
    enum class End { Done, Budget, Cancelled };
    End end = End::Done;
    std::uint64_t runs = 0; // candidates run (the cache's answers not counted)
    std::uint64_t cacheHits = 0;
    std::uint64_t layersRun = 0; // blocks run over all candidates (the layers reused not counted)
    double seconds = 0;
    std::vector<std::string> notes;
    double evaluationsPerSecond() const { return seconds > 0 ? double(runs) / seconds : 0; }
};

// Each candidate as it is scored (on the search's thread), with its index in the record: what a
// window draws while the search runs.
using SurgeonCandidateFn = std::function<void(const SurgeonCandidate& candidate, std::size_t index)>;

// Searches as the request's goal says, scoring each candidate by the forward pass on its planned
// chimera. The budget spent or the job stopped, the search ends with the best found so far (`end`
// says why; with no feasible candidate yet, `best` is empty). Throws FormatError (a model, a text,
// a request out of range, naming the file or the option) and VitalsUnavailable.
SurgeonRecord runSurgeon(const SurgeonModels& models, const SurgeonRequest& request,
                         const ProgressFn& progress = {}, const StopToken* stop = nullptr,
                         const SurgeonCandidateFn& scored = {});

// A text cut in two at a line break near `fraction` of its length from the end: the search's
// part, then the held-out part (empty when `fraction` is 0). Throws FormatError when either
// part would be empty.
std::pair<std::string, std::string> splitHoldout(std::string_view text, double fraction);

// `organ surgeon --json` (docs/auto-surgeon.md).
nlohmann::json surgeonToJson(const SurgeonRecord& record);
// The terminal's summary: the finalists and the chosen plan.
std::string surgeonText(const SurgeonRecord& record);

} // namespace organ
