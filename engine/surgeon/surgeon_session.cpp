#include "surgeon/surgeon_session.h"

#include "measure/model_measure.h"
#include "support/errors.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "vitals/tokenizer.h"

#include <algorithm>
#include <cmath>

namespace organ {
namespace {

// The reference's logits on the scored positions of `text`; its vocabulary must be the recipient's.
Eigen::MatrixXf referenceLogits(const ModelWeights& reference, const ScoringText& text,
                                std::uint32_t vocabulary, unsigned threads, const StopToken* stop) {
    Transformer transformer(reference);
    transformer.setThreads(threads);
    if (transformer.shape().vocabulary != vocabulary) {
        throw FormatError(reference.label() + ": a vocabulary of " +
                          std::to_string(transformer.shape().vocabulary) + " tokens; the recipient's has " +
                          std::to_string(vocabulary) + ": KL needs the same tokens");
    }
    const auto run = runKeepingStates(transformer, text.tokens, text.chunk, text.bos, false, stop);
    return run ? run->scored.logits : Eigen::MatrixXf();
}

} // namespace

SurgeonSession::SurgeonSession(const SurgeonModels& models, const SurgeonRequest& request,
                               const ProgressFn& progress, const StopToken* stop, SurgeonCandidateFn scored)
    : m_models(models), m_request(request), m_stop(stop), m_progress(progress), m_scored(std::move(scored)),
      m_start(std::chrono::steady_clock::now()) {
    if (m_request.threads == 0) {
        m_request.threads = defaultThreadCount();
    }
    m_empty.base = models.recipient.first;
    m_empty.output = request.output;
    NamedModels named{{"base", models.recipient.second}};
    for (const auto& [path, model] : models.donors) {
        if (path == models.recipient.first) {
            throw FormatError(fileLabel(path) + ": the recipient cannot be its own donor");
        }
        const std::string id = m_empty.ensureDonor(path);
        if (std::find(m_donorIds.begin(), m_donorIds.end(), id) != m_donorIds.end()) {
            throw FormatError(fileLabel(path) + ": named twice as a donor");
        }
        m_donorIds.push_back(id);
        named.emplace_back(id, model);
    }
    const ModelWeights recipient = ModelWeights::ofModel(models.recipient.second);
    const Tokenizer tokenizer = Tokenizer::fromWeights(recipient);
    // The texts are checked as vital signs check them (tokens, chunks), and for the candidates'
    // logits, held beside the reference's, before anything runs.
    VitalsRequest vitals;
    vitals.text = request.text;
    vitals.chunk = request.chunk;
    vitals.continuation = 0;
    const std::vector<std::int32_t> searchTokens = vitalsTokens(recipient, tokenizer, vitals);
    std::optional<ScoringText> holdout;
    if (!request.holdout.empty()) {
        VitalsRequest held = vitals;
        held.text = request.holdout;
        holdout = ScoringText{vitalsTokens(recipient, tokenizer, held), request.chunk, tokenizer.leadingBos(),
                              std::nullopt};
    }
    const TransformerShape shape = Transformer(recipient).shape();
    checkActivationMemory(recipient, shape, searchTokens.size(), request.chunk, 0, false,
                          models.reference.has_value(), ScoredLogits::Kept);
    if (holdout) {
        checkActivationMemory(recipient, shape, holdout->tokens.size(), request.chunk, 0, false,
                              models.reference.has_value(), ScoredLogits::Kept);
    }
    // The recipient's vital signs give its layers' importance, which the one-shot pruning
    // baselines read.
    const std::optional<VitalsReport> own = takeVitals(recipient, {}, vitals, {}, stop);
    if (!own) {
        m_ended = true;
        m_record.end = SurgeonRecord::End::Cancelled;
        return;
    }
    m_importance = own->importance;
    m_blocks = static_cast<std::uint32_t>(own->importance.angular.size());
    ScoringText search{own->tokens, request.chunk, tokenizer.leadingBos(), std::nullopt};
    m_record.goal = request.goal;
    m_record.recipient = fileLabel(models.recipient.first);
    for (const auto& donor : models.donors) {
        m_record.donors.push_back(fileLabel(donor.first));
    }
    m_record.searchTokens = search.tokens.size();
    m_record.holdoutTokens = holdout ? holdout->tokens.size() : 0;
    if (models.reference) {
        m_record.objective = SurgeonObjective::Kl;
        m_record.reference = fileLabel(models.reference->first);
        const ModelWeights reference = ModelWeights::ofModel(models.reference->second);
        search.reference = referenceLogits(reference, search, shape.vocabulary, m_request.threads, stop);
        if (holdout) {
            holdout->reference =
                referenceLogits(reference, *holdout, shape.vocabulary, m_request.threads, stop);
        }
        if (stop != nullptr && stop->stopRequested()) {
            m_ended = true;
            m_record.end = SurgeonRecord::End::Cancelled;
            return;
        }
    }
    const GraftModels graftModels = GraftModels::fromModels(std::move(named));
    m_search.emplace(graftModels, std::move(search), m_request.threads);
    if (holdout) {
        m_holdout.emplace(graftModels, std::move(*holdout), m_request.threads);
    }
}

double SurgeonSession::elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
}

bool SurgeonSession::budgetLeft() {
    if (m_ended) {
        return false;
    }
    if (m_stop != nullptr && m_stop->stopRequested()) {
        m_record.end = SurgeonRecord::End::Cancelled;
    } else if ((m_request.maxEvaluations > 0 && m_search->runs() >= m_request.maxEvaluations) ||
               (m_request.maxSeconds > 0 && elapsed() >= m_request.maxSeconds)) {
        m_record.end = SurgeonRecord::End::Budget;
    } else {
        return true;
    }
    m_ended = true;
    return false;
}

bool SurgeonSession::feasible(const CandidateScore& score) const {
    const SurgeonConstraints& c = m_request.constraints;
    return std::isfinite(score.objective) && (!c.maxBytes || score.bytes <= *c.maxBytes) &&
           (!c.maxBitsPerWeight || score.bitsPerWeight() <= *c.maxBitsPerWeight) &&
           (!c.maxLayers || score.layers <= *c.maxLayers);
}

std::optional<double> SurgeonSession::tryPlan(const GraftPlan& plan, std::string_view stage,
                                              std::string summary, bool complete) {
    const std::string key = dumpJson(graftPlanToJson(plan));
    if (const auto known = m_indexOf.find(key); known != m_indexOf.end()) {
        ++m_cacheHits;
        noteStage(stage, known->second);
        return m_record.candidates[known->second].score.objective;
    }
    if (!budgetLeft()) {
        return std::nullopt;
    }
    const std::uint64_t total = std::max<std::uint64_t>(
        m_request.maxEvaluations > 0 ? m_request.maxEvaluations : m_planned, m_search->runs() + 1);
    // The stage and the best feasible objective so far.
    const std::string said =
        std::string(stage) + (m_bestSoFar ? ", best " + fixedDecimals(*m_bestSoFar, 4) : std::string());
    m_progress.report(m_search->runs(), total, said);
    const std::optional<CandidateScore> score = m_search->score(plan, m_stop);
    if (!score) {
        m_record.end = SurgeonRecord::End::Cancelled;
        m_ended = true;
        return std::nullopt;
    }
    SurgeonCandidate candidate;
    candidate.stage = std::string(stage);
    candidate.summary = std::move(summary);
    candidate.score = *score;
    candidate.feasible = complete && feasible(*score);
    candidate.seconds = elapsed();
    candidate.plan = plan;
    if (candidate.feasible && (!m_bestSoFar || score->objective < *m_bestSoFar)) {
        m_bestSoFar = score->objective;
    }
    m_indexOf.emplace(key, m_record.candidates.size());
    m_record.candidates.push_back(std::move(candidate));
    noteStage(stage, m_record.candidates.size() - 1);
    if (m_scored) {
        m_scored(m_record.candidates.back(), m_record.candidates.size() - 1);
    }
    return score->objective;
}

void SurgeonSession::noteStage(std::string_view stage, std::size_t index) {
    // A plan another stage scored first counts for this one too (a greedy search may end where a
    // baseline did). The recipient as it is is its stage's finalist whatever the goal.
    const SurgeonCandidate& c = m_record.candidates[index];
    if (!c.feasible && stage != "recipient") {
        return;
    }
    const auto [it, added] = m_stageBest.emplace(std::string(stage), index);
    if (added) {
        m_stages.emplace_back(stage);
    } else if (c.score.objective < m_record.candidates[it->second].score.objective) {
        it->second = index;
    }
}

bool SurgeonSession::anchorOn(const GraftPlan& plan) {
    if (m_ended) {
        return false;
    }
    if (!m_search->anchorOn(plan, m_stop)) {
        m_record.end = SurgeonRecord::End::Cancelled;
        m_ended = true;
        return false;
    }
    const std::string note =
        "the hidden states of the text would not fit in the memory vital signs allow: every "
        "candidate runs from the tokens";
    if (!m_search->anchorKeepsStates() && m_record.notes.empty()) {
        m_record.notes.push_back(note);
    }
    return true;
}

SurgeonRecord SurgeonSession::finish() {
    SurgeonRecord& r = m_record;
    const auto& all = r.candidates;
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (all[i].feasible && (!r.best || all[i].score.objective < all[*r.best].score.objective)) {
            r.best = i;
        }
    }
    for (const std::string& stage : m_stages) {
        r.finalists.push_back({stage, m_stageBest.at(stage)});
    }
    const bool stopped = m_stop != nullptr && m_stop->stopRequested();
    if (m_holdout && !stopped) {
        // A candidate that is two stages' finalist comes from the held-out evaluator's cache.
        for (const auto& finalist : r.finalists) {
            SurgeonCandidate& c = r.candidates[finalist.candidate];
            const auto score = m_holdout->score(c.plan, m_stop);
            if (!score) {
                break;
            }
            c.holdout = score->objective;
        }
    }
    if (m_stop != nullptr && m_stop->stopRequested()) {
        r.end = SurgeonRecord::End::Cancelled;
    }
    if (m_search) {
        r.runs = m_search->runs();
        r.cacheHits = m_cacheHits + m_search->cacheHits();
        r.layersRun = m_search->layersRun();
    }
    r.seconds = elapsed();
    m_progress.report(r.runs, std::max<std::uint64_t>(r.runs, 1), "done", true);
    return std::move(m_record);
}

} // namespace organ
