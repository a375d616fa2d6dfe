#include "anatomy/anatomy.h"
#include "merge/merge_spec.h"
#include "support/errors.h"
#include "support/text_format.h"
#include "surgeon/surgeon_session.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace organ {
namespace {

// The search's bounds: weights of a task vector, and the share of it a ties merge keeps.
constexpr double kMinWeight = 0;
constexpr double kMaxWeight = 1.5;
constexpr double kMinDensity = 0.05;
constexpr double kMaxDensity = 1;
// The uniform baselines: every weight one of these, every density kDensity.
constexpr double kUniformWeights[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
constexpr double kDensity = 0.5;
// The evolution strategy's first step and the bounds of its adaptation.
constexpr double kFirstStep = 0.1;
constexpr double kMinStep = 0.005;
constexpr double kMaxStep = 0.5;

// Per donor: the weight's gradient of control points over the blocks for the attention
// (skeleton) and for the feed-forward (organ) tensors, one weight for the others, and for ties the
// densities of the three.
struct MergeGenome {
    std::uint32_t points = 0;
    bool densities = false;
    std::vector<double> values; // per donor: 2·points + 1 weights, then 3 densities when ties

    std::size_t perDonor() const { return 2 * points + 1 + (densities ? 3 : 0); }
    bool isDensity(std::size_t i) const { return i % perDonor() >= 2 * points + 1; }
    double low(std::size_t i) const { return isDensity(i) ? kMinDensity : kMinWeight; }
    double high(std::size_t i) const { return isDensity(i) ? kMaxDensity : kMaxWeight; }
};

MergeGenome uniformGenome(std::size_t donors, std::uint32_t points, bool densities, double weight) {
    MergeGenome g{points, densities, {}};
    for (std::size_t d = 0; d < donors; ++d) {
        for (std::size_t i = 0; i < g.perDonor(); ++i) {
            g.values.push_back(i < 2 * points + 1 ? weight : kDensity);
        }
    }
    return g;
}

// Four decimals: what the plan says is what was scored.
double rounded(double v) {
    return std::round(v * 1e4) / 1e4;
}

ParamValue bySystem(const std::vector<double>& skeleton, const std::vector<double>& organ, double rest) {
    ParamValue v;
    v.rules.push_back({std::string(systemName(System::Skeleton)), skeleton});
    v.rules.push_back({std::string(systemName(System::Organ)), organ});
    v.rules.push_back({"", {rest}});
    return v;
}

GraftPlan mergePlan(const SurgeonSession& session, const MergeGenome& g) {
    GraftOperation op;
    op.kind = GraftOperation::Kind::Merge;
    op.merge.method = session.request().method;
    op.merge.base = "base";
    // ties without normalizing: a uniform weight then still scales the task vectors (normalized,
    // every uniform weight would give the same merge).
    if (op.merge.method == MergeMethod::Ties) {
        op.merge.normalize = false;
    }
    const std::size_t k = g.points;
    for (std::size_t d = 0; d < session.donorIds().size(); ++d) {
        const auto at = g.values.begin() + std::ptrdiff_t(d * g.perDonor());
        MergeModel model{session.donorIds()[d], {}};
        model.parameters["weight"] =
            bySystem(std::vector<double>(at, at + std::ptrdiff_t(k)),
                     std::vector<double>(at + std::ptrdiff_t(k), at + std::ptrdiff_t(2 * k)),
                     at[std::ptrdiff_t(2 * k)]);
        if (g.densities) {
            model.parameters["density"] =
                bySystem({at[std::ptrdiff_t(2 * k + 1)]}, {at[std::ptrdiff_t(2 * k + 2)]},
                         at[std::ptrdiff_t(2 * k + 3)]);
        }
        op.merge.models.push_back(std::move(model));
    }
    GraftPlan plan = session.emptyPlan();
    plan.operations.push_back(std::move(op));
    return plan;
}

// A standard normal draw from the generator's bits (Box–Muller): the same numbers from a seed on
// every platform, which std::normal_distribution does not promise.
double normalDraw(std::mt19937_64& bits) {
    const auto uniform = [&] { return (double(bits() >> 11) + 0.5) * 0x1.0p-53; };
    const double u = uniform();
    const double v = uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * 3.14159265358979323846 * v);
}

} // namespace

void searchMerge(SurgeonSession& session) {
    const SurgeonRequest& request = session.request();
    if (request.method != MergeMethod::TaskArithmetic && request.method != MergeMethod::Ties) {
        throw FormatError(std::string(mergeMethodName(request.method)) +
                          ": the surgeon searches task_arithmetic and ties merges");
    }
    if (session.donorIds().empty()) {
        throw FormatError("a merge needs at least one donor");
    }
    if (request.controlPoints < 1 || request.controlPoints > kMaxSurgeonControlPoints) {
        throw FormatError(std::to_string(request.controlPoints) + " control points: the surgeon takes 1 to " +
                          std::to_string(kMaxSurgeonControlPoints));
    }
    if (request.offspring < 1 || request.offspring > kMaxSurgeonOffspring) {
        throw FormatError(std::to_string(request.offspring) + " offspring: the surgeon takes 1 to " +
                          std::to_string(kMaxSurgeonOffspring));
    }
    if (request.generations > kMaxSurgeonGenerations) {
        throw FormatError(std::to_string(request.generations) + " generations: the surgeon takes at most " +
                          std::to_string(kMaxSurgeonGenerations));
    }
    const bool densities = request.method == MergeMethod::Ties;
    session.setPlanned(1 + std::size(kUniformWeights) +
                       std::uint64_t(request.generations) * request.offspring);
    if (!session.tryPlan(session.emptyPlan(), "recipient", "the recipient as it is", false)) {
        return;
    }
    // The uniform baselines; the best is where the evolution starts.
    std::optional<std::pair<double, MergeGenome>> parent;
    for (double w : kUniformWeights) {
        MergeGenome g = uniformGenome(session.donorIds().size(), request.controlPoints, densities, w);
        const auto objective =
            session.tryPlan(mergePlan(session, g), "uniform", "every weight " + fixedDecimals(w, 1), true);
        if (!objective) {
            return;
        }
        if (!parent || *objective < parent->first) {
            parent.emplace(*objective, std::move(g));
        }
    }
    // A (1+λ) evolution strategy: each generation draws λ offspring around the parent (each value
    // plus step · N(0, 1), kept within its bounds); the best replaces the parent when it is better.
    // The step follows the one-fifth success rule.
    std::mt19937_64 bits(request.seed);
    double step = kFirstStep;
    for (std::uint32_t generation = 1; generation <= request.generations; ++generation) {
        std::optional<std::pair<double, MergeGenome>> best;
        std::size_t better = 0;
        for (std::size_t child = 0; child < request.offspring; ++child) {
            MergeGenome g = parent->second;
            for (std::size_t i = 0; i < g.values.size(); ++i) {
                g.values[i] = rounded(std::clamp(g.values[i] + step * normalDraw(bits), g.low(i), g.high(i)));
            }
            const auto objective = session.tryPlan(mergePlan(session, g), "evolution",
                                                   "generation " + std::to_string(generation), true);
            if (!objective) {
                return;
            }
            better += *objective < parent->first ? 1 : 0;
            if (!best || *objective < best->first) {
                best.emplace(*objective, std::move(g));
            }
        }
        if (best->first < parent->first) {
            parent = std::move(best);
        }
        const double success = double(better) / double(request.offspring);
        step = std::clamp(step * std::exp((success - 0.2) / 0.8 / 3), kMinStep, kMaxStep);
    }
}

} // namespace organ
