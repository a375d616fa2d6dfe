#include "surgeon/surgeon.h"

#include "support/errors.h"
#include "support/text_format.h"
#include "support/text_safety.h"
#include "surgeon/surgeon_session.h"

#include <algorithm>
#include <cmath>

namespace organ {
namespace {

constexpr std::string_view kGoalNames[] = {"prune", "merge", "organs"};
constexpr std::string_view kEndNames[] = {"done", "budget", "cancelled"};

nlohmann::json number(double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

nlohmann::json candidateJson(const SurgeonCandidate& c, std::size_t index) {
    return {{"index", index},
            {"stage", c.stage},
            {"summary", jsonText(c.summary)},
            {"objective", number(c.score.objective)},
            {"holdout", c.holdout ? number(*c.holdout) : nlohmann::json(nullptr)},
            {"layers", c.score.layers},
            {"bytes", c.score.bytes},
            {"bits_per_weight", number(c.score.bitsPerWeight())},
            {"feasible", c.feasible},
            {"seconds", c.seconds},
            {"plan", graftPlanToJson(c.plan)}};
}

} // namespace

std::string_view surgeonGoalName(SurgeonGoal goal) {
    return kGoalNames[static_cast<std::size_t>(goal)];
}

std::pair<std::string, std::string> splitHoldout(std::string_view text, double fraction) {
    if (!(fraction >= 0 && fraction < 1)) {
        throw FormatError("a held-out share of " + std::to_string(fraction) +
                          ": it is at least 0 and below 1");
    }
    if (fraction == 0) {
        return {std::string(text), std::string()};
    }
    // The last line break at or before the cut, else the first after it.
    const std::size_t cut =
        text.size() - static_cast<std::size_t>(std::llround(fraction * double(text.size())));
    std::size_t at = cut == 0 ? std::string_view::npos : text.rfind('\n', cut - 1);
    if (at == std::string_view::npos || at == 0) {
        at = text.find('\n', cut);
    }
    if (at == std::string_view::npos || at == 0 || at + 1 >= text.size()) {
        throw FormatError("the text has no line break to cut it at for a held-out part of " +
                          fixedDecimals(100 * fraction, 0) + " %");
    }
    return {std::string(text.substr(0, at + 1)), std::string(text.substr(at + 1))};
}

SurgeonRecord runSurgeon(const SurgeonModels& models, const SurgeonRequest& request,
                         const ProgressFn& progress, const StopToken* stop,
                         const SurgeonCandidateFn& scored) {
    SurgeonSession session(models, request, progress, stop, scored);
    if (session.running()) {
        switch (request.goal) {
        case SurgeonGoal::Prune:
            searchPrune(session);
            break;
        case SurgeonGoal::Merge:
            searchMerge(session);
            break;
        case SurgeonGoal::Organs:
            searchOrgans(session);
            break;
        }
    }
    return session.finish();
}

nlohmann::json surgeonToJson(const SurgeonRecord& r) {
    std::vector<std::string> donors(r.donors.size());
    std::transform(r.donors.begin(), r.donors.end(), donors.begin(),
                   [](const auto& d) { return jsonText(d); });
    nlohmann::json finalists = nlohmann::json::array();
    for (const auto& f : r.finalists) {
        finalists.push_back({{"stage", f.stage}, {"candidate", f.candidate}});
    }
    nlohmann::json candidates = nlohmann::json::array();
    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
        candidates.push_back(candidateJson(r.candidates[i], i));
    }
    return {
        {"format", "organ-surgeon"},
        {"version", 1},
        {"goal", surgeonGoalName(r.goal)},
        {"objective", r.objective == SurgeonObjective::Kl ? "kl" : "nll"},
        {"recipient", jsonText(r.recipient)},
        {"donors", donors},
        {"reference", r.reference.empty() ? nlohmann::json(nullptr) : nlohmann::json(jsonText(r.reference))},
        {"search_tokens", r.searchTokens},
        {"holdout_tokens", r.holdoutTokens},
        {"end", kEndNames[static_cast<std::size_t>(r.end)]},
        {"best", r.best ? nlohmann::json(*r.best) : nlohmann::json(nullptr)},
        {"finalists", finalists},
        {"runs", r.runs},
        {"cache_hits", r.cacheHits},
        {"layers_run", r.layersRun},
        {"seconds", r.seconds},
        {"evaluations_per_second", number(r.evaluationsPerSecond())},
        {"candidates", candidates},
        {"notes", r.notes}};
}

std::string surgeonText(const SurgeonRecord& r) {
    const std::string objective =
        r.objective == SurgeonObjective::Kl ? "KL to " + escapeText(r.reference) : std::string("mean NLL");
    std::string out = escapeText(r.recipient) + ": " + std::string(surgeonGoalName(r.goal)) + ", " +
                      objective + " on " + std::to_string(r.searchTokens) + " tokens" +
                      (r.holdoutTokens > 0 ? ", reported on " + std::to_string(r.holdoutTokens) + " held out"
                                           : std::string()) +
                      "\n\n  " + padText("stage", 18) + padText("search", 10, true) +
                      padText("held out", 10, true) + padText("layers", 8, true) + "  plan\n";
    for (const auto& [stage, i] : r.finalists) {
        const SurgeonCandidate& c = r.candidates[i];
        out += (r.best && *r.best == i ? "▸ " : "  ") + padText(stage, 18) +
               padText(fixedDecimals(c.score.objective, 4), 10, true) +
               padText(c.holdout ? fixedDecimals(*c.holdout, 4) : std::string("—"), 10, true) +
               padText(std::to_string(c.score.layers), 8, true) + "  " + escapeText(c.summary) + "\n";
    }
    out += "\n  " + std::to_string(r.runs) + " candidates run, " + std::to_string(r.cacheHits) +
           " from the cache, in " + fixedDecimals(r.seconds, 1) + " s (" +
           fixedDecimals(r.evaluationsPerSecond(), 2) + " a second)";
    if (r.end == SurgeonRecord::End::Budget) {
        out += "; the budget ended the search";
    } else if (r.end == SurgeonRecord::End::Cancelled) {
        out += "; cancelled";
    }
    out += "\n";
    if (!r.best) {
        out += "  no candidate met the goal and the constraints\n";
    }
    for (const auto& note : r.notes) {
        out += "  " + escapeText(note) + "\n";
    }
    return out;
}

} // namespace organ
