#include "anatomy_tree_model.h"

#include <QMimeData>
#include <algorithm>

#include "column_titles.h"
#include "display_names.h"
#include "model_roles.h"
#include "support/text_format.h"

#include <QLocale>

namespace organ::model {
namespace {

QString text(std::string_view view) {
    return QString::fromUtf8(view.data(), qsizetype(view.size()));
}

} // namespace

AnatomyTreeModel::AnatomyTreeModel(QObject* parent) : QAbstractItemModel(parent) {}

void AnatomyTreeModel::setSnapshot(std::shared_ptr<const ModelSnapshot> snapshot) {
    beginResetModel();
    m_snapshot = std::move(snapshot);
    rebuildIndex();
    endResetModel();
}

void AnatomyTreeModel::setResults(const TensorResults* results) {
    followResults(
        this, m_results, results,
        [this](int tensor, std::optional<double> before) { tensorChanged(tensor, before); },
        [this] { resultsReset(); });
}

const std::optional<ZResult>& AnatomyTreeModel::tensorResult(int tensor) const {
    static const std::optional<ZResult> none;
    return m_results == nullptr ? none : m_results->at(tensor);
}

void AnatomyTreeModel::rebuildIndex() {
    m_nodeOfTensor.clear();
    m_thetaSum.clear();
    m_thetaCount.clear();
    if (!m_snapshot) {
        return;
    }
    m_nodeOfTensor.assign(m_snapshot->model->tensors().size(), -1);
    const auto& nodes = tree()->nodes;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i].tensor >= 0) {
            m_nodeOfTensor[nodes[i].tensor] = static_cast<int>(i);
        }
    }
    m_thetaSum.assign(nodes.size(), 0.0);
    m_thetaCount.assign(nodes.size(), 0);
    addAllResults();
    rebuildPlanCounts();
}

void AnatomyTreeModel::rebuildPlanCounts() {
    const std::size_t nodes = m_snapshot ? tree()->nodes.size() : 0;
    m_planCount.assign(nodes, 0);
    m_planFirstDonor.assign(nodes, -1);
    m_planMerged.assign(nodes, 0);
    for (const auto& [tensor, mark] : m_planMarks) {
        if (tensor < 0 || static_cast<std::size_t>(tensor) >= m_nodeOfTensor.size()) {
            continue;
        }
        for (int n = m_nodeOfTensor[tensor]; n >= 0; n = tree()->nodes[n].parent) {
            if (mark.merged) {
                ++m_planMerged[n];
            } else if (m_planCount[n]++ == 0) {
                m_planFirstDonor[n] = mark.donor;
            }
        }
    }
}

void AnatomyTreeModel::setPlanMarks(std::map<int, PlanMark> marks) {
    if (!m_snapshot) {
        return;
    }
    m_planMarks = std::move(marks);
    rebuildPlanCounts();
    signalAllRows(Name, {Qt::DecorationRole, Qt::ToolTipRole, PlanDonorRole});
}

// dataChanged for one column of every row, once per group of siblings.
void AnatomyTreeModel::signalAllRows(int column, const QList<int>& roles) {
    auto signalRows = [&](const std::vector<int>& siblings) {
        if (siblings.empty()) {
            return;
        }
        const auto& first = tree()->nodes[static_cast<std::size_t>(siblings.front())];
        const auto& last = tree()->nodes[static_cast<std::size_t>(siblings.back())];
        emit dataChanged(createIndex(first.row, column, quintptr(siblings.front())),
                         createIndex(last.row, column, quintptr(siblings.back())), roles);
    };
    signalRows(tree()->roots);
    for (const AnatomyNode& node : tree()->nodes) {
        signalRows(node.children);
    }
}

QVariant AnatomyTreeModel::planData(const AnatomyNode& n, int nodeIndex, int role) const {
    const int count = m_planCount.empty() ? 0 : m_planCount[static_cast<std::size_t>(nodeIndex)];
    const int merged = m_planMerged.empty() ? 0 : m_planMerged[static_cast<std::size_t>(nodeIndex)];
    if (count == 0 && merged > 0) {
        // Merged, none replaced: the merge's mark and what it merges.
        if (role == Qt::DecorationRole) {
            return colorMark(mergeColor());
        }
        if (role == Qt::ToolTipRole) {
            return n.kind == AnatomyNode::Kind::Tensor
                       ? tr("The plan merges it (%1)").arg(m_planMarks.at(n.tensor).source)
                       : tr("The plan merges %1 of its %2")
                             .arg(merged)
                             .arg(countOf(qint64(n.stats.tensors), tr("tensor"), tr("tensors")));
        }
    }
    if (count == 0) {
        return role == PlanDonorRole ? QVariant(-1) : QVariant();
    }
    const int donor = m_planFirstDonor[static_cast<std::size_t>(nodeIndex)];
    switch (role) {
    case PlanDonorRole:
        return donor;
    case Qt::DecorationRole:
        return donorMark(donor);
    case Qt::ToolTipRole:
        if (n.kind == AnatomyNode::Kind::Tensor) {
            return tr("The plan replaces it with %1").arg(m_planMarks.at(n.tensor).source);
        }
        return tr("The plan replaces %1 of its %2")
            .arg(count)
            .arg(countOf(qint64(n.stats.tensors), tr("tensor"), tr("tensors")));
    default:
        return {};
    }
}

void AnatomyTreeModel::addToGroups(int tensor, double theta) {
    for (int n = m_nodeOfTensor[tensor]; n >= 0; n = tree()->nodes[n].parent) {
        m_thetaSum[n] += theta;
        ++m_thetaCount[n];
    }
}

void AnatomyTreeModel::addAllResults() {
    if (m_results == nullptr) {
        return;
    }
    for (std::size_t t = 0; t < m_nodeOfTensor.size(); ++t) {
        if (const auto theta = m_results->theta(static_cast<int>(t))) {
            addToGroups(static_cast<int>(t), *theta);
        }
    }
}

void AnatomyTreeModel::tensorChanged(int tensor, std::optional<double> thetaBefore) {
    if (!m_snapshot || tensor < 0 || static_cast<std::size_t>(tensor) >= m_nodeOfTensor.size()) {
        return;
    }
    if (thetaBefore) {
        for (int n = m_nodeOfTensor[tensor]; n >= 0; n = tree()->nodes[n].parent) {
            m_thetaSum[n] -= *thetaBefore;
            --m_thetaCount[n];
        }
    }
    if (const auto theta = m_results->theta(tensor)) {
        addToGroups(tensor, *theta);
    }
    for (int n = m_nodeOfTensor[tensor]; n >= 0; n = tree()->nodes[n].parent) {
        const QModelIndex cell = createIndex(tree()->nodes[n].row, Theta, quintptr(n));
        emit dataChanged(cell, cell, {Qt::DisplayRole, SortRole, ThetaRole, Qt::ToolTipRole});
    }
}

void AnatomyTreeModel::resultsReset() {
    if (!m_snapshot) {
        return;
    }
    std::fill(m_thetaSum.begin(), m_thetaSum.end(), 0.0);
    std::fill(m_thetaCount.begin(), m_thetaCount.end(), 0);
    addAllResults();
    signalAllRows(Theta, {Qt::DisplayRole, SortRole, ThetaRole, Qt::ToolTipRole});
}

QVariant AnatomyTreeModel::thetaOf(const AnatomyNode& node, int nodeIndex) const {
    if (node.kind == AnatomyNode::Kind::Tensor) {
        const auto theta = m_results == nullptr ? std::nullopt : m_results->theta(node.tensor);
        return theta ? QVariant(*theta) : QVariant();
    }
    const int count = m_thetaCount[static_cast<std::size_t>(nodeIndex)];
    return count == 0 ? QVariant() : QVariant(m_thetaSum[static_cast<std::size_t>(nodeIndex)] / count);
}

void AnatomyTreeModel::setGrouping(TreeGrouping grouping) {
    if (grouping == m_grouping) {
        return;
    }
    beginResetModel();
    m_grouping = grouping;
    rebuildIndex();
    endResetModel();
}

const AnatomyTree* AnatomyTreeModel::tree() const {
    if (!m_snapshot) {
        return nullptr;
    }
    return m_grouping == TreeGrouping::SystemLayer ? &m_snapshot->bySystem : &m_snapshot->byLayer;
}

const AnatomyNode& AnatomyTreeModel::node(const QModelIndex& index) const {
    return tree()->nodes[static_cast<std::size_t>(index.internalId())];
}

void AnatomyTreeModel::collectTensors(int n, std::vector<int>& out) const {
    const AnatomyNode& nd = tree()->nodes[static_cast<std::size_t>(n)];
    if (nd.kind == AnatomyNode::Kind::Tensor) {
        out.push_back(nd.tensor);
    }
    for (int child : nd.children) {
        collectTensors(child, out);
    }
}

Qt::ItemFlags AnatomyTreeModel::flags(const QModelIndex& index) const {
    Qt::ItemFlags f = QAbstractItemModel::flags(index);
    if (m_dropHandler != nullptr) {
        f |= Qt::ItemIsDropEnabled; // the invalid index too: a drop on the empty area is on the model
    }
    if (index.isValid() && m_dragSource) {
        f |= Qt::ItemIsDragEnabled;
    }
    return f;
}

QStringList AnatomyTreeModel::mimeTypes() const {
    return {QString::fromLatin1(kTensorMimeType)};
}

QMimeData* AnatomyTreeModel::mimeData(const QModelIndexList& indexes) const {
    if (m_snapshot == nullptr || indexes.isEmpty()) {
        return nullptr;
    }
    TensorDrag drag;
    drag.model = QString::fromStdString(m_snapshot->model->path());
    std::vector<int> nodes;
    for (const QModelIndex& index : indexes) {
        if (index.isValid() && index.model() == this) {
            nodes.push_back(static_cast<int>(index.internalId()));
        }
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    for (int n : nodes) {
        collectTensors(n, drag.tensors);
    }
    if (drag.tensors.empty()) {
        return nullptr;
    }
    std::sort(drag.tensors.begin(), drag.tensors.end());
    drag.tensors.erase(std::unique(drag.tensors.begin(), drag.tensors.end()), drag.tensors.end());
    if (nodes.size() == 1) {
        const AnatomyNode& only = tree()->nodes[static_cast<std::size_t>(nodes.front())];
        const bool oneLayer = only.kind == AnatomyNode::Kind::Layer ||
                              (only.kind == AnatomyNode::Kind::System && only.layer.has_value());
        drag.pick = only.kind == AnatomyNode::Kind::Tensor ? TensorDrag::Pick::Tensors
                    : oneLayer                             ? TensorDrag::Pick::Layer
                                                           : TensorDrag::Pick::System;
    }
    return encodeTensorDrag(drag);
}

DropTarget AnatomyTreeModel::dropTarget(const QModelIndex& index) const {
    DropTarget target;
    if (!index.isValid()) {
        return target;
    }
    const AnatomyNode& nd = node(index.siblingAtColumn(0));
    switch (nd.kind) {
    case AnatomyNode::Kind::Tensor:
        target.kind = DropTarget::Kind::Tensor;
        target.tensor = nd.tensor;
        target.layer = m_snapshot->anatomy.tensors[static_cast<std::size_t>(nd.tensor)].layer;
        break;
    case AnatomyNode::Kind::Layer:
        // Under a system (system → layer) the drop is that system's part of the layer.
        target.kind = nd.layer ? DropTarget::Kind::Layer : DropTarget::Kind::Model;
        target.layer = nd.layer;
        target.hasSystem = m_grouping == TreeGrouping::SystemLayer;
        target.system = nd.system;
        break;
    case AnatomyNode::Kind::System:
        target.kind = nd.layer ? DropTarget::Kind::Layer : DropTarget::Kind::System;
        target.layer = nd.layer;
        target.hasSystem = true;
        target.system = nd.system;
        break;
    }
    return target;
}

bool AnatomyTreeModel::canDropMimeData(const QMimeData* data, Qt::DropAction, int, int,
                                       const QModelIndex& parent) const {
    m_dropMessage.clear();
    m_mergeFits = false;
    const auto drag = decodeTensorDrag(data);
    if (m_dropHandler == nullptr || m_snapshot == nullptr || !drag) {
        return false;
    }
    const QString recipient = QString::fromStdString(m_snapshot->model->path());
    const DropTarget target = dropTarget(parent);
    if (m_mergeDrop) {
        return m_dropHandler->canMergeTensors(*drag, recipient, target, &m_dropMessage);
    }
    const bool fits = m_dropHandler->canDropTensors(*drag, recipient, target, &m_dropMessage);
    QString merged;
    m_mergeFits = fits && m_dropHandler->canMergeTensors(*drag, recipient, target, &merged);
    return fits;
}

// The handler checks the drop again as it plans it: a refused drop adds nothing.
bool AnatomyTreeModel::dropMimeData(const QMimeData* data, Qt::DropAction, int, int,
                                    const QModelIndex& parent) {
    const auto drag = decodeTensorDrag(data);
    if (m_dropHandler == nullptr || m_snapshot == nullptr || !drag) {
        return false;
    }
    const QString recipient = QString::fromStdString(m_snapshot->model->path());
    return m_mergeDrop ? m_dropHandler->mergeTensors(*drag, recipient, dropTarget(parent))
                       : m_dropHandler->dropTensors(*drag, recipient, dropTarget(parent));
}

QModelIndex AnatomyTreeModel::indexOfTensor(int tensor) const {
    if (tensor < 0 || static_cast<std::size_t>(tensor) >= m_nodeOfTensor.size()) {
        return {};
    }
    const int n = m_nodeOfTensor[tensor];
    return createIndex(tree()->nodes[n].row, 0, quintptr(n));
}

QModelIndex AnatomyTreeModel::index(int row, int column, const QModelIndex& parent) const {
    if (!hasIndex(row, column, parent)) {
        return {};
    }
    const auto& siblings = parent.isValid() ? node(parent).children : tree()->roots;
    return createIndex(row, column, quintptr(siblings[static_cast<std::size_t>(row)]));
}

QModelIndex AnatomyTreeModel::parent(const QModelIndex& child) const {
    if (!child.isValid()) {
        return {};
    }
    const int parentNode = node(child).parent;
    if (parentNode < 0) {
        return {};
    }
    return createIndex(tree()->nodes[parentNode].row, 0, quintptr(parentNode));
}

int AnatomyTreeModel::rowCount(const QModelIndex& parent) const {
    if (!m_snapshot || parent.column() > 0) {
        return 0;
    }
    return static_cast<int>(parent.isValid() ? node(parent).children.size() : tree()->roots.size());
}

int AnatomyTreeModel::columnCount(const QModelIndex&) const {
    return ColumnCount;
}

QString AnatomyTreeModel::nodeName(const AnatomyNode& n) const {
    switch (n.kind) {
    case AnatomyNode::Kind::Tensor:
        return displayText(m_snapshot->model->tensors()[n.tensor].name);
    case AnatomyNode::Kind::System:
        return text(systemName(n.system));
    case AnatomyNode::Kind::Layer:
        return n.layer ? tr("layer %1").arg(*n.layer) : tr("outside layers");
    }
    return {};
}

QVariant AnatomyTreeModel::displayData(const AnatomyNode& n, int column) const {
    const QLocale locale;
    const bool isTensor = n.kind == AnatomyNode::Kind::Tensor;
    const TensorInfo* t = isTensor ? &m_snapshot->model->tensors()[n.tensor] : nullptr;
    switch (column) {
    case Name:
        return nodeName(n);
    case Role:
        return isTensor ? displayText(m_snapshot->anatomy.tensors[n.tensor].role)
                        : (n.stats.tensors == 1 ? tr("1 tensor") : tr("%1 tensors").arg(n.stats.tensors));
    case DType:
        return isTensor ? text(tensorTypeName(t->type)) : QVariant();
    case Shape:
        return isTensor ? QString::fromStdString(t->shapeText()) : QVariant();
    case Parameters:
        return locale.toString(qulonglong(n.stats.parameters));
    case Bytes:
        return QString::fromStdString(humanBytes(n.stats.bytes));
    default:
        return {};
    }
}

namespace {

QString thetaText(const QVariant& theta, const std::optional<ZResult>* tensorResult) {
    if (tensorResult != nullptr && *tensorResult && (*tensorResult)->constant) {
        return QStringLiteral("const");
    }
    if (!theta.isValid()) {
        return {};
    }
    QString text = QString::number(theta.toDouble(), 'f', 1) + QStringLiteral("°");
    if (tensorResult != nullptr && *tensorResult && (*tensorResult)->nonFinite != 0) {
        text += u'!';
    }
    return text;
}

} // namespace

QVariant AnatomyTreeModel::sortData(const AnatomyNode& n, int column) const {
    switch (column) {
    case Parameters:
        return qulonglong(n.stats.parameters);
    case Bytes:
        return qulonglong(n.stats.bytes);
    case Shape:
        return n.tensor >= 0 ? qulonglong(m_snapshot->model->tensors()[n.tensor].elements) : QVariant();
    case Name:
        // Layers sort by number, not as text ("layer 10" after "layer 9").
        if (n.kind == AnatomyNode::Kind::Layer) {
            return n.layer ? qlonglong(*n.layer) : qlonglong(-1);
        }
        if (n.kind == AnatomyNode::Kind::System) {
            return qlonglong(n.system);
        }
        return displayData(n, column);
    default:
        return displayData(n, column);
    }
}

QVariant AnatomyTreeModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || !m_snapshot) {
        return {};
    }
    const AnatomyNode& n = node(index);
    const int nodeIndex = static_cast<int>(index.internalId());
    if (index.column() == Theta) {
        const QVariant theta = thetaOf(n, nodeIndex);
        const std::optional<ZResult>* result = n.tensor >= 0 ? &tensorResult(n.tensor) : nullptr;
        switch (role) {
        case Qt::DisplayRole:
            return thetaText(theta, result);
        case SortRole:
            return theta.isValid() ? theta.toDouble() : -1.0;
        case ThetaRole:
            return theta;
        case Qt::TextAlignmentRole:
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        case Qt::ToolTipRole:
            if (result != nullptr && *result && (*result)->hasTheta()) {
                const ZResult& z = **result;
                return tr("θ %1° (H %2, K %3, C %4)%5")
                    .arg(*z.theta, 0, 'f', 2)
                    .arg(*z.H, 0, 'f', 3)
                    .arg(*z.K, 0, 'f', 2)
                    .arg(*z.C, 0, 'f', 2)
                    .arg(z.nonFinite != 0 ? tr("\n%1 NaN or infinite values left out").arg(z.nonFinite)
                                          : QString());
            }
            return theta.isValid() ? tr("θ mean of the measured tensors below") : QVariant();
        default:
            break;
        }
    }
    switch (role) {
    case Qt::DisplayRole:
        return displayData(n, index.column());
    case Qt::TextAlignmentRole:
        return index.column() >= Parameters ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::ToolTipRole: {
        const QVariant plan = index.column() == Name ? planData(n, nodeIndex, role) : QVariant();
        if (n.kind == AnatomyNode::Kind::Tensor) {
            const TensorInfo& t = m_snapshot->model->tensors()[n.tensor];
            const QString about =
                tr("%1\n%2, %3\n%4 bytes at offset %5")
                    .arg(displayText(t.name), text(tensorTypeName(t.type)),
                         QString::fromStdString(t.shapeText()), QString::fromStdString(groupDigits(t.bytes)),
                         QString::fromStdString(groupDigits(t.fileOffset)));
            return plan.isValid() ? about + u'\n' + plan.toString() : about;
        }
        return plan;
    }
    case Qt::DecorationRole:
        return index.column() == Name ? planData(n, nodeIndex, role) : QVariant();
    case PlanDonorRole:
        return planData(n, nodeIndex, role);
    case TensorCountRole:
        return qulonglong(n.stats.tensors);
    case SortRole:
        return sortData(n, index.column());
    case NodeKindRole:
        return int(n.kind);
    case TensorIndexRole:
        return n.tensor;
    case SystemRole:
        return int(n.system);
    case LayerRole:
        return n.layer ? int(*n.layer) : -1;
    case FilterRole:
        return nodeName(n);
    default:
        return {};
    }
}

QVariant AnatomyTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
    static constexpr const char* titles[] = {
        QT_TR_NOOP("Name"),       QT_TR_NOOP("Role"),  QT_TR_NOOP("Type"), QT_TR_NOOP("Shape"),
        QT_TR_NOOP("Parameters"), QT_TR_NOOP("Bytes"), QT_TR_NOOP("θ")};
    return columnTitle<ColumnCount>(staticMetaObject, titles, section, orientation, role);
}

} // namespace organ::model
