#pragma once

#include "anatomy/anatomy_tree.h"
#include "measure/zmeasure.h"
#include "open_models.h"
#include "tensor_drag.h"

#include <QAbstractItemModel>
#include <map>
#include <memory>

namespace organ::model {

// The anatomy tree of one model (system → layer → tensor, or layer → system → tensor).
// It shows an immutable ModelSnapshot; internalId is the node index in the flat tree.
class AnatomyTreeModel : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { Name, Role, DType, Shape, Parameters, Bytes, Theta, ColumnCount };

    explicit AnatomyTreeModel(QObject* parent = nullptr);

    void setSnapshot(std::shared_ptr<const ModelSnapshot> snapshot);
    void setGrouping(TreeGrouping grouping);
    TreeGrouping grouping() const { return m_grouping; }
    const ModelSnapshot* snapshot() const { return m_snapshot.get(); }

    // The index of a tensor's row (column 0), or an invalid index.
    QModelIndex indexOfTensor(int tensor) const;

    // The θ column shows `results` (the model's, stored in OpenModels; null: none) and follows
    // it: a tensor measured changes its cell and its groups' means (dataChanged); every tensor
    // at once (a measurement from the cache) rebuilds the sums and signals the θ column once per
    // group of siblings, not three times per tensor.
    void setResults(const TensorResults* results);
    const std::optional<ZResult>& tensorResult(int tensor) const;

    // The graft plan on the recipient's tree: a tensor the plan replaces shows its donor's
    // colour (DecorationRole on the name, PlanDonorRole) and names its source in its tooltip;
    // a group shows the colour of its first replaced tensor and how many it holds.
    struct PlanMark {
        int donor = 0;       // the donor's position in the plan (its colour)
        QString source;      // "blk.1.ffn_up.weight of stories260K-f32"; merged: "ties of base and farm"
        bool merged = false; // merged rather than replaced: the merge's colour
    };
    void setPlanMarks(std::map<int, PlanMark> marks); // tensor → mark; empty: no plan
    const std::map<int, PlanMark>& planMarks() const { return m_planMarks; }

    // Drag and drop of tensors (kTensorMimeType): a donor's tree is a drag source; a
    // recipient's tree accepts drops, which `handler` checks and turns into plan operations.
    void setDragSource(bool on) { m_dragSource = on; }
    void setDropHandler(TensorDropHandler* handler) { m_dropHandler = handler; }
    // Drops merge instead of replacing while set (the view sets it from the keys held).
    void setMergeDrop(bool merge) { m_mergeDrop = merge; }
    // What the last canDropMimeData() said about the drop (why it fits or not).
    const QString& dropMessage() const { return m_dropMessage; }
    // Whether a merge would fit where the last canDropMimeData() found a replacement that fits.
    bool mergeWouldFit() const { return m_mergeFits; }
    // The drop target a node stands for (the whole model for the invalid index).
    DropTarget dropTarget(const QModelIndex& index) const;

    Qt::ItemFlags flags(const QModelIndex& index) const override;
    QStringList mimeTypes() const override;
    QMimeData* mimeData(const QModelIndexList& indexes) const override;
    bool canDropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
                         const QModelIndex& parent) const override;
    bool dropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
                      const QModelIndex& parent) override;
    Qt::DropActions supportedDragActions() const override { return Qt::CopyAction; }
    Qt::DropActions supportedDropActions() const override { return Qt::CopyAction; }

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    const AnatomyTree* tree() const;
    const AnatomyNode& node(const QModelIndex& index) const;
    QString nodeName(const AnatomyNode& node) const;
    QVariant displayData(const AnatomyNode& node, int column) const;
    QVariant sortData(const AnatomyNode& node, int column) const;

    std::shared_ptr<const ModelSnapshot> m_snapshot;
    TreeGrouping m_grouping = TreeGrouping::SystemLayer;
    void rebuildIndex();
    void addToGroups(int tensor, double theta);
    void addAllResults();
    void tensorChanged(int tensor, std::optional<double> thetaBefore);
    void resultsReset();
    QVariant thetaOf(const AnatomyNode& node, int nodeIndex) const;

    void collectTensors(int node, std::vector<int>& out) const;
    void rebuildPlanCounts();
    void signalAllRows(int column, const QList<int>& roles);
    QVariant planData(const AnatomyNode& node, int nodeIndex, int role) const;

    bool m_dragSource = false;
    TensorDropHandler* m_dropHandler = nullptr;
    bool m_mergeDrop = false;
    mutable QString m_dropMessage;
    mutable bool m_mergeFits = false;
    std::vector<int> m_nodeOfTensor;
    const TensorResults* m_results = nullptr;
    std::vector<double> m_thetaSum; // per node of the current tree
    std::vector<int> m_thetaCount;
    std::map<int, PlanMark> m_planMarks;
    std::vector<int> m_planCount;      // per node: tensors below it the plan replaces
    std::vector<int> m_planFirstDonor; // per node: the donor of the first of them
    std::vector<int> m_planMerged;     // per node: tensors below it the plan merges
};

} // namespace organ::model
