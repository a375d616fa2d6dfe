#pragma once

#include "surgeon/surgeon.h"
#include "vitals/vital_signs.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace organ {

// What every search shares: the texts and their evaluators, the budget, the record of every
// candidate, progress and the stop token. Runs on the caller's thread.
class SurgeonSession {
public:
    // Tokenizes the texts (checked as vital signs check them, and for the logits it holds), takes
    // the recipient's vital signs (its layer importance) and the reference's logits. Throws as
    // runSurgeon.
    SurgeonSession(const SurgeonModels& models, const SurgeonRequest& request, const ProgressFn& progress,
                   const StopToken* stop, SurgeonCandidateFn scored = {});

    const SurgeonRequest& request() const { return m_request; }
    const SurgeonModels& models() const { return m_models; }
    // A plan of the recipient with every donor named and no operation.
    const GraftPlan& emptyPlan() const { return m_empty; }
    // The donors' ids in the plans, in the models' order.
    const std::vector<std::string>& donorIds() const { return m_donorIds; }
    std::uint32_t blocks() const { return m_blocks; }
    // The recipient's, on the search's text.
    const LayerImportance& importance() const { return m_importance; }
    // False once the job was stopped or the budget spent: the search then ends.
    bool running() const { return !m_ended; }

    // Scores `plan` as a candidate of `stage` (`complete`: it answers the goal, so it may be chosen
    // within the constraints). Nothing when the budget is spent or the job stopped.
    std::optional<double> tryPlan(const GraftPlan& plan, std::string_view stage, std::string summary,
                                  bool complete);
    // Candidates scored after this run from the first layer they change against `plan`.
    bool anchorOn(const GraftPlan& plan);
    // How many candidates the search expects to score, for progress.
    void setPlanned(std::uint64_t planned) { m_planned = planned; }

    // The best candidate, the finalists on the held-out text, the counts.
    SurgeonRecord finish();

private:
    bool budgetLeft();
    double elapsed() const;
    bool feasible(const CandidateScore& score) const;
    void noteStage(std::string_view stage, std::size_t index);

    const SurgeonModels& m_models;
    SurgeonRequest m_request;
    const StopToken* m_stop;
    ProgressThrottle m_progress;
    SurgeonCandidateFn m_scored;
    std::chrono::steady_clock::time_point m_start;
    GraftPlan m_empty;
    std::vector<std::string> m_donorIds;
    std::uint32_t m_blocks = 0;
    LayerImportance m_importance;
    std::optional<CandidateEvaluator> m_search;
    std::optional<CandidateEvaluator> m_holdout;
    std::map<std::string, std::size_t> m_indexOf;   // canonical plan JSON → candidate
    std::vector<std::string> m_stages;              // with a finalist, in order of first appearance
    std::map<std::string, std::size_t> m_stageBest; // stage → its best feasible candidate
    std::uint64_t m_planned = 0;
    std::uint64_t m_cacheHits = 0;
    std::optional<double> m_bestSoFar; // the lowest feasible objective, for progress
    bool m_ended = false;
    SurgeonRecord m_record;
};

// The searches, each on a session (prune_search.cpp, merge_search.cpp, organ_search.cpp).
void searchPrune(SurgeonSession& session);
void searchMerge(SurgeonSession& session);
void searchOrgans(SurgeonSession& session);

} // namespace organ
