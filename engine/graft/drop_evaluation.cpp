#include "graft/drop_evaluation.h"

#include "gguf/tensor_name.h"

#include <set>

namespace organ {
namespace {

// The layer every picked tensor is in; nullopt when they span several layers, or none.
std::optional<std::uint32_t> commonLayer(const ModelAnatomy& anatomy, const std::vector<int>& picked) {
    const auto& first = anatomy.tensors[std::size_t(picked.front())].layer;
    if (!first) {
        return std::nullopt;
    }
    for (int t : picked) {
        const auto& layer = anatomy.tensors[std::size_t(t)].layer;
        if (!layer || *layer != *first) {
            return std::nullopt;
        }
    }
    return *first;
}

} // namespace

DropEvaluation evaluateDrop(const GraftPlan& current, const DropModel& recipient, const DropModel& donor,
                            std::span<const int> dragged, const DropTarget& target,
                            const OpenPlanModels& open) {
    using Refusal = DropEvaluation::Refusal;
    DropEvaluation result;
    auto refuse = [&](Refusal why) {
        result.refusal = why;
        return result;
    };
    if (donor.path == recipient.path) {
        return refuse(Refusal::SameModel);
    }
    const auto& donorTensors = donor.model.tensors();
    const auto& recipientTensors = recipient.model.tensors();
    if (dragged.empty() || dragged.front() < 0 || dragged.back() >= int(donorTensors.size()) ||
        (target.kind == DropTarget::Kind::Tensor &&
         (target.tensor < 0 || target.tensor >= int(recipientTensors.size())))) {
        return refuse(Refusal::UnknownTensors);
    }
    GraftPlan plan = current;
    if (plan.base.empty()) {
        plan.base = recipient.path;
    } else if (plan.base != recipient.path) {
        result.otherBase = plan.base;
        return refuse(Refusal::OtherBase);
    }

    // The dragged tensors, limited to the target's system when it has one.
    const bool bySystem = target.kind == DropTarget::Kind::System ||
                          (target.kind == DropTarget::Kind::Layer && target.hasSystem);
    std::vector<int> picked;
    for (int t : dragged) {
        if (!bySystem || donor.anatomy.tensors[std::size_t(t)].system == target.system) {
            picked.push_back(t);
        }
    }
    if (picked.empty()) {
        result.system = target.system;
        return refuse(Refusal::NoneInSystem);
    }
    const std::optional<std::uint32_t> sourceLayer = commonLayer(donor.anatomy, picked);

    GraftOperation op;
    op.donor = plan.ensureDonor(donor.path);
    std::vector<std::string> sources; // the donor's names
    for (int t : picked) {
        sources.push_back(donorTensors[std::size_t(t)].name);
    }
    const std::optional<std::uint32_t> targetLayer =
        target.kind == DropTarget::Kind::Tensor ? recipient.anatomy.tensors[std::size_t(target.tensor)].layer
                                                : target.layer;
    // A drop on one tensor of a layer targets that layer when the drag is one layer's; tensors
    // of several layers (a heatmap row, a system) dropped on a tensor graft in place.
    const bool onLayer = target.kind == DropTarget::Kind::Layer ||
                         (target.kind == DropTarget::Kind::Tensor && targetLayer && sourceLayer);
    if (target.kind == DropTarget::Kind::Tensor && picked.size() == 1) {
        const std::string& wanted = recipientTensors[std::size_t(target.tensor)].name;
        const std::string& source = sources.front();
        const bool sameRole = sourceLayer && targetLayer && !suffixInLayer(source, *sourceLayer).empty() &&
                              suffixInLayer(source, *sourceLayer) == suffixInLayer(wanted, *targetLayer);
        if (source != wanted && !sameRole) {
            result.source = source;
            result.wanted = wanted;
            return refuse(Refusal::DifferentRole);
        }
    }
    if (onLayer && !sourceLayer) {
        return refuse(Refusal::SpansLayers);
    }
    std::vector<std::string> targets; // chimera names the operation sets
    if (onLayer && *sourceLayer != *targetLayer) {
        op.kind = GraftOperation::Kind::MapLayer;
        op.fromLayer = *sourceLayer;
        op.toLayer = *targetLayer;
        for (const auto& s : sources) {
            targets.push_back(layerTensorName(*targetLayer, suffixInLayer(s, *sourceLayer)));
        }
    } else {
        op.kind = GraftOperation::Kind::Replace;
        targets = sources;
    }

    // Check the plan with the operation; keep the tensors that fit.
    std::set<std::string> bad;
    for (const auto& name : targets) {
        if (recipient.model.findTensor(name) == nullptr) {
            bad.insert(name);
            result.leftOut.push_back({DropEvaluation::LeftOut::Why::NotInRecipient, name, {}});
        }
    }
    op.select.names = targets;
    GraftPlan candidate = plan;
    candidate.operations.push_back(op);
    const int index = int(candidate.operations.size()) - 1;
    auto models = open(candidate, &result.missing);
    if (!models) {
        return refuse(Refusal::ModelNotOpen);
    }
    const CompatibilityReport report = checkGraft(candidate, GraftModels::fromModels(std::move(*models)));
    for (const Finding& f : report.findings) {
        if (f.operation != index || f.severity != Finding::Severity::Error) {
            continue;
        }
        if (f.tensors.empty()) {
            result.reason = f.message;
            return refuse(Refusal::Incompatible);
        }
        for (const auto& name : f.tensors) {
            // map_layer names missing donor tensors by their donor name.
            const std::string_view suffix = op.kind == GraftOperation::Kind::MapLayer
                                                ? suffixInLayer(name, op.fromLayer)
                                                : std::string_view();
            bad.insert(suffix.empty() ? name : layerTensorName(op.toLayer, suffix));
        }
        result.leftOut.push_back({DropEvaluation::LeftOut::Why::Finding, {}, f.message});
    }
    std::vector<std::string> good;
    for (const auto& name : targets) {
        if (!bad.contains(name)) {
            good.push_back(name);
        }
    }
    result.leftOutTensors = bad.size();
    if (good.empty()) {
        return refuse(Refusal::NothingFits);
    }
    op.select.names = good;
    candidate.operations.back() = op;
    result.operation = op;
    result.plan = std::move(candidate);
    result.tensors = good.size();
    return result;
}

} // namespace organ
