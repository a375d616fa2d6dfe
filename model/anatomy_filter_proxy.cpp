#include "anatomy_filter_proxy.h"

#include "anatomy/anatomy_tree.h"
#include "anatomy_tree_model.h"
#include "display_names.h"
#include "model_roles.h"

#include <algorithm>

namespace organ::model {

AnatomyFilterProxy::AnatomyFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
    m_visible.fill(true);
    setRecursiveFilteringEnabled(true);
    setFilterCaseSensitivity(Qt::CaseInsensitive);
    setFilterRole(FilterRole);
    setSortRole(SortRole);
}

void AnatomyFilterProxy::setSystemVisible(System system, bool visible) {
    m_visible[static_cast<std::size_t>(system)] = visible;
    invalidateFilter();
}

bool AnatomyFilterProxy::isFiltering() const {
    return !filterRegularExpression().pattern().isEmpty() ||
           std::find(m_visible.begin(), m_visible.end(), false) != m_visible.end();
}

int AnatomyFilterProxy::shownTensors(const QModelIndex& proxyGroup) const {
    int count = 0;
    for (int r = 0; r < rowCount(proxyGroup); ++r) {
        const QModelIndex child = index(r, 0, proxyGroup);
        count += child.data(NodeKindRole).toInt() == int(AnatomyNode::Kind::Tensor) ? 1 : shownTensors(child);
    }
    return count;
}

QModelIndex AnatomyFilterProxy::firstTensor(const QModelIndex& proxyParent) const {
    for (int r = 0; r < rowCount(proxyParent); ++r) {
        const QModelIndex child = index(r, 0, proxyParent);
        if (child.data(NodeKindRole).toInt() == int(AnatomyNode::Kind::Tensor)) {
            return child;
        }
        if (const QModelIndex below = firstTensor(child); below.isValid()) {
            return below;
        }
    }
    return {};
}

QVariant AnatomyFilterProxy::data(const QModelIndex& index, int role) const {
    if (role == Qt::DisplayRole && index.column() == AnatomyTreeModel::Role && isFiltering() &&
        index.data(NodeKindRole).toInt() != int(AnatomyNode::Kind::Tensor)) {
        const QModelIndex group = index.siblingAtColumn(0);
        const int total = mapToSource(group).data(TensorCountRole).toInt();
        const int shown = shownTensors(group);
        if (shown != total) {
            return tr("%1 of %2").arg(shown).arg(countOf(total, tr("tensor"), tr("tensors")));
        }
    }
    return QSortFilterProxyModel::data(index, role);
}

bool AnatomyFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    const QModelIndex index = sourceModel()->index(sourceRow, 0, sourceParent);
    // Only tensors decide; groups are shown when a tensor below them is (recursive filtering).
    if (index.data(NodeKindRole).toInt() != int(AnatomyNode::Kind::Tensor)) {
        return false;
    }
    if (!m_visible[static_cast<std::size_t>(index.data(SystemRole).toInt())]) {
        return false;
    }
    return QSortFilterProxyModel::filterAcceptsRow(sourceRow, sourceParent);
}

} // namespace organ::model
