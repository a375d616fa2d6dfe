#include "anatomy_tree_model.h"

#include "format_error.h"
#include "model_roles.h"

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
    m_nodeOfTensor.clear();
    if (m_snapshot) {
        m_nodeOfTensor.assign(m_snapshot->model->tensors().size(), -1);
        const auto& nodes = tree()->nodes;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (nodes[i].tensor >= 0) {
                m_nodeOfTensor[nodes[i].tensor] = static_cast<int>(i);
            }
        }
    }
    endResetModel();
}

void AnatomyTreeModel::setGrouping(TreeGrouping grouping) {
    if (grouping == m_grouping) {
        return;
    }
    m_grouping = grouping;
    setSnapshot(m_snapshot);
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
        return QString::fromStdString(m_snapshot->model->tensors()[n.tensor].name);
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
        return isTensor ? QString::fromStdString(m_snapshot->anatomy.tensors[n.tensor].role)
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
    switch (role) {
    case Qt::DisplayRole:
        return displayData(n, index.column());
    case Qt::TextAlignmentRole:
        return index.column() >= Parameters ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::ToolTipRole:
        if (n.kind == AnatomyNode::Kind::Tensor) {
            const TensorInfo& t = m_snapshot->model->tensors()[n.tensor];
            return tr("%1\n%2, %3\n%4 bytes at offset %5")
                .arg(QString::fromStdString(t.name), text(tensorTypeName(t.type)),
                     QString::fromStdString(t.shapeText()), QString::fromStdString(groupDigits(t.bytes)),
                     QString::fromStdString(groupDigits(t.fileOffset)));
        }
        return {};
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
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) {
        return {};
    }
    switch (section) {
    case Name:
        return tr("Name");
    case Role:
        return tr("Role");
    case DType:
        return tr("Type");
    case Shape:
        return tr("Shape");
    case Parameters:
        return tr("Parameters");
    case Bytes:
        return tr("Bytes");
    default:
        return {};
    }
}

} // namespace organ::model
