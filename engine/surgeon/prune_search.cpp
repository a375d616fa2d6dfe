#include "support/errors.h"
#include "surgeon/surgeon_session.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace organ {
namespace {

using Blocks = std::vector<std::uint32_t>; // the recipient's blocks removed, ascending

// The recipient without `removed`: remove_layer from the last down, so that each names a block
// by its number in the recipient.
GraftPlan prunePlan(const SurgeonSession& session, const Blocks& removed) {
    GraftPlan plan = session.emptyPlan();
    for (auto it = removed.rbegin(); it != removed.rend(); ++it) {
        GraftOperation op;
        op.kind = GraftOperation::Kind::RemoveLayer;
        op.toLayer = *it;
        plan.operations.push_back(std::move(op));
    }
    return plan;
}

std::string pruneSummary(const Blocks& removed) {
    std::string out = removed.size() == 1 ? "removes block" : "removes blocks";
    for (std::size_t i = 0; i < removed.size(); ++i) {
        out += (i == 0 ? " " : ", ") + std::to_string(removed[i]);
    }
    return out;
}

// The one-shot choices: the n consecutive blocks whose input and output are closest (Gromov et
// al.'s angular distance), and the n blocks that change their input least (ShortGPT's block
// influence).
std::vector<std::pair<std::string, Blocks>> oneShotChoices(const LayerImportance& importance,
                                                           std::uint32_t n) {
    Blocks angular(n);
    std::iota(angular.begin(), angular.end(), importance.cheapest[n - 1].first);
    Blocks influence(importance.blockInfluence.size());
    std::iota(influence.begin(), influence.end(), 0u);
    std::stable_sort(influence.begin(), influence.end(), [&](std::uint32_t a, std::uint32_t b) {
        return importance.blockInfluence[a] < importance.blockInfluence[b];
    });
    influence.resize(n);
    std::sort(influence.begin(), influence.end());
    return {{"angular_distance", angular}, {"block_influence", influence}};
}

} // namespace

void searchPrune(SurgeonSession& session) {
    const SurgeonRequest& request = session.request();
    const std::uint32_t blocks = session.blocks();
    const std::uint32_t n = request.prune;
    if (n == 0 || n >= blocks) {
        throw FormatError("prune " + std::to_string(n) + ": the recipient has " + std::to_string(blocks) +
                          " blocks; the surgeon removes 1 to " + std::to_string(blocks - 1));
    }
    if (request.beam == 0 || request.beam > kMaxSurgeonBeam) {
        throw FormatError("a beam of " + std::to_string(request.beam) + ": the surgeon takes 1 to " +
                          std::to_string(kMaxSurgeonBeam));
    }
    std::uint64_t planned = 3;
    for (std::uint32_t step = 0; step < n; ++step) {
        planned += std::uint64_t(request.beam) * (blocks - step);
    }
    session.setPlanned(planned);
    // Anchored on the recipient, its own score runs only the output, and the baselines and the
    // first greedy step run from the first block they remove.
    if (!session.anchorOn(session.emptyPlan()) ||
        !session.tryPlan(session.emptyPlan(), "recipient", "the recipient as it is", false)) {
        return;
    }
    for (const auto& [stage, removed] : oneShotChoices(session.importance(), n)) {
        if (!session.tryPlan(prunePlan(session, removed), stage, pruneSummary(removed), true)) {
            return;
        }
    }
    // SLEB: each step scores the removal of every block left from each set kept, and keeps the
    // `beam` best sets (the greedy search with a beam of one).
    const std::string stage = request.beam == 1 ? "greedy" : "beam";
    std::vector<Blocks> kept{{}};
    for (std::uint32_t step = 1; step <= n; ++step) {
        std::vector<std::pair<double, Blocks>> children;
        std::set<Blocks> seen;
        for (const Blocks& parent : kept) {
            if (!session.anchorOn(prunePlan(session, parent))) {
                return;
            }
            for (std::uint32_t b = 0; b < blocks; ++b) {
                Blocks child = parent;
                if (std::find(child.begin(), child.end(), b) != child.end()) {
                    continue;
                }
                child.insert(std::upper_bound(child.begin(), child.end(), b), b);
                if (!seen.insert(child).second) {
                    continue;
                }
                const auto objective =
                    session.tryPlan(prunePlan(session, child), stage, pruneSummary(child), step == n);
                if (!objective) {
                    return;
                }
                children.emplace_back(*objective, std::move(child));
            }
        }
        std::stable_sort(children.begin(), children.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        kept.clear();
        for (std::size_t i = 0; i < children.size() && i < request.beam; ++i) {
            kept.push_back(children[i].second);
        }
    }
}

} // namespace organ
