#pragma once

#include "anatomy/anatomy.h"
#include "graft/graft_check.h"
#include "graft/graft_plan.h"

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace organ {

// Where tensors are dropped in the recipient.
struct DropTarget {
    enum class Kind { Model, System, Layer, Tensor };
    Kind kind = Kind::Model;
    System system = System::Other;      // System; Layer when under a system node
    bool hasSystem = false;             // Layer: the drop is limited to that system
    std::optional<std::uint32_t> layer; // Layer, and Tensor when it is in a layer
    int tensor = -1;                    // Tensor: index into the recipient's tensors
};

// One side of a drop: an open model, its anatomy and the path plans name it by.
struct DropModel {
    const GgufModel& model;
    const ModelAnatomy& anatomy;
    std::string path;
};

// The models a candidate plan names, "base" first; nullopt with `missing` set to the file
// when one of them is not open.
using OpenPlanModels = std::function<std::optional<NamedModels>(const GraftPlan& plan, std::string* missing)>;

// What a drop does, as data: the operation it adds (narrowed to the tensors that fit) or why
// nothing fits. The window turns it into translated text; nothing here is worded for people
// except the graft check's own findings, which are quoted.
struct DropEvaluation {
    enum class Refusal {
        None,           // the drop adds `operation`
        SameModel,      // dragged from the recipient itself
        UnknownTensors, // indices outside the models
        OtherBase,      // the plan grafts into `otherBase`
        NoneInSystem,   // none of the dragged tensors is of `system`
        DifferentRole,  // `source` cannot replace `wanted`
        SpansLayers,    // dropped on a layer, dragged from several layers or none
        ModelNotOpen,   // `missing` is named by the plan but not open
        Incompatible,   // the graft check refused the whole operation: `reason`
        NothingFits,    // every tensor was left out (leftOut says why)
    };
    Refusal refusal = Refusal::None;
    bool ok() const { return refusal == Refusal::None; }

    std::string otherBase; // OtherBase
    System system{};       // NoneInSystem
    std::string source;    // DifferentRole
    std::string wanted;    // DifferentRole
    std::string missing;   // ModelNotOpen
    std::string reason;    // Incompatible (a finding's message, from the file: escape it)

    // A dragged tensor the operation leaves out, and why.
    struct LeftOut {
        enum class Why { NotInRecipient, Finding };
        Why why = Why::Finding;
        std::string tensor;  // NotInRecipient: the chimera tensor the recipient lacks
        std::string finding; // Finding: the graft check's message
    };
    std::vector<LeftOut> leftOut;
    std::size_t leftOutTensors = 0; // chimera tensors left out (a finding may name several)

    GraftOperation operation; // the operation added (ok)
    GraftPlan plan;           // the plan with it (base and donor set)
    std::size_t tensors = 0;  // chimera tensors it sets
};

// Evaluates dropping the donor's `dragged` tensors (indices, ascending) on `target` of the
// recipient, against `plan`: tensors of the target's system only; one layer onto another
// becomes map_layer, anything else replace in place; a single tensor replaces only one of
// its role; the candidate plan is checked with checkGraft and the tensors its errors name
// are left out. The one implementation of the window's drops, free of Qt.
DropEvaluation evaluateDrop(const GraftPlan& plan, const DropModel& recipient, const DropModel& donor,
                            std::span<const int> dragged, const DropTarget& target,
                            const OpenPlanModels& open);

} // namespace organ
