#include "anatomy/anatomy.h"
#include "support/errors.h"
#include "support/text_format.h"
#include "surgeon/surgeon_session.h"

#include <map>

namespace organ {
namespace {

// The coordinates: per layer, its attention (skeleton) and its feed-forward (organ) tensors.
constexpr System kSystems[] = {System::Skeleton, System::Organ};

// Per coordinate (layer · 2 + system), 0 for the recipient's own tensors, d + 1 for donor d's.
using OrganChoice = std::vector<std::size_t>;

GraftPlan organPlan(const SurgeonSession& session, const OrganChoice& choice) {
    GraftPlan plan = session.emptyPlan();
    for (std::size_t c = 0; c < choice.size(); ++c) {
        if (choice[c] == 0) {
            continue;
        }
        GraftOperation op;
        op.kind = GraftOperation::Kind::Replace;
        op.donor = session.donorIds()[choice[c] - 1];
        op.select.system = kSystems[c % 2];
        op.select.firstLayer = static_cast<std::uint32_t>(c / 2);
        op.select.lastLayer = op.select.firstLayer;
        plan.operations.push_back(std::move(op));
    }
    return plan;
}

std::string organSummary(const SurgeonSession& session, const OrganChoice& choice) {
    std::string out;
    for (std::size_t c = 0; c < choice.size(); ++c) {
        if (choice[c] != 0) {
            out += (out.empty() ? "" : ", ") + std::to_string(c / 2) + " " +
                   std::string(systemName(kSystems[c % 2])) + " from " + session.donorIds()[choice[c] - 1];
        }
    }
    return out.empty() ? "the recipient's own organs" : out;
}

// Organs are taken layer for layer: every donor has the recipient's blocks and tensors' shapes
// (the graft check says which tensor differs, when one does).
void checkDonorBlocks(const SurgeonSession& session) {
    for (const auto& [path, model] : session.models().donors) {
        const MetaValue* arch = model->find("general.architecture");
        const auto name = arch ? arch->asString() : std::nullopt;
        const MetaValue* blocks = name ? model->find(std::string(*name) + ".block_count") : nullptr;
        const auto count = blocks ? blocks->asUInt() : std::nullopt;
        if (!count || *count != session.blocks()) {
            throw FormatError(fileLabel(path) + ": " + (count ? std::to_string(*count) : std::string("no")) +
                              " blocks; the recipient has " + std::to_string(session.blocks()) +
                              ": organs are taken layer for layer");
        }
    }
}

} // namespace

void searchOrgans(SurgeonSession& session) {
    const SurgeonRequest& request = session.request();
    if (session.donorIds().empty()) {
        throw FormatError("organs need at least one donor");
    }
    if (request.sweeps < 1 || request.sweeps > kMaxSurgeonSweeps) {
        throw FormatError(std::to_string(request.sweeps) + " sweeps: the surgeon takes 1 to " +
                          std::to_string(kMaxSurgeonSweeps));
    }
    checkDonorBlocks(session);
    const std::size_t coordinates = std::size_t(session.blocks()) * std::size(kSystems);
    const std::size_t options = session.donorIds().size() + 1;
    session.setPlanned(1 + std::uint64_t(request.sweeps) * coordinates * (options - 1));
    OrganChoice current(coordinates, 0);
    // Anchored on the recipient first, its own score runs only the output.
    if (!session.anchorOn(organPlan(session, current))) {
        return;
    }
    auto objective =
        session.tryPlan(organPlan(session, current), "recipient", organSummary(session, current), true);
    if (!objective) {
        return;
    }
    // Coordinate descent: each coordinate in turn takes the option that scores best with the
    // others as they are, when it is better than the current one; the sweeps end when one changes
    // nothing. Candidates differ from the current plan from their layer on: they run from there.
    for (std::uint32_t sweep = 0; sweep < request.sweeps; ++sweep) {
        bool changed = false;
        for (std::size_t c = 0; c < coordinates; ++c) {
            // The current choice is the anchor (run again only when a coordinate changed it).
            if (!session.anchorOn(organPlan(session, current))) {
                return;
            }
            std::size_t chosen = current[c];
            double best = *objective;
            for (std::size_t o = 0; o < options; ++o) {
                if (o == current[c]) {
                    continue;
                }
                OrganChoice candidate = current;
                candidate[c] = o;
                const auto got = session.tryPlan(organPlan(session, candidate), "organs",
                                                 organSummary(session, candidate), true);
                if (!got) {
                    return;
                }
                if (*got < best) {
                    best = *got;
                    chosen = o;
                }
            }
            if (chosen != current[c]) {
                current[c] = chosen;
                objective = best;
                changed = true;
            }
        }
        if (!changed) {
            break;
        }
    }
}

} // namespace organ
