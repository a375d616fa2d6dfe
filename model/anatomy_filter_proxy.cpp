#include "anatomy_filter_proxy.h"

#include "anatomy_tree.h"
#include "model_roles.h"

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
