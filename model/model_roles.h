#pragma once

#include <Qt>

namespace organ::model {

// Item data roles shared by every model of the workbench, in one place.
enum ItemRole {
    SortRole = Qt::UserRole + 1, // numbers as numbers, so that sizes sort by value
    NodeKindRole,                // AnatomyNode::Kind as int
    TensorIndexRole,             // index into GgufModel::tensors(), -1 for groups
    SystemRole,                  // System as int
    LayerRole,                   // layer number, -1 when none
    FilterRole,                  // the text that the filter box matches
    ThetaRole,                   // θ in degrees (a tensor's, or a group's mean); invalid when none
    PlanDonorRole,               // the plan's donor (its position) replacing the tensor; -1 none
    TensorCountRole,             // tensors under a node (1 for a tensor)
    EditStateRole,               // MetadataTableModel::EditState as int: a pending edit of the plan
};

} // namespace organ::model
