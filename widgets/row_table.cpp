#include "row_table.h"

#include "model_roles.h"

#include <QHeaderView>
#include <QSortFilterProxyModel>
#include <QTableView>

namespace organ::widgets {

QTableView* rowTable(QAbstractItemModel* model, const QString& objectName, QWidget* parent) {
    auto* view = new QTableView(parent);
    view->setObjectName(objectName);
    view->setModel(model);
    view->setWordWrap(false);
    view->setAlternatingRowColors(true);
    view->verticalHeader()->hide();
    return view;
}

QTableView* sortableRowTable(QAbstractItemModel* source, const QString& objectName, QWidget* parent,
                             QObject* proxyParent) {
    auto* proxy = new QSortFilterProxyModel(proxyParent);
    proxy->setSourceModel(source);
    proxy->setSortRole(model::SortRole);
    QTableView* view = rowTable(proxy, objectName, parent);
    view->setSortingEnabled(true);
    view->sortByColumn(-1, Qt::AscendingOrder);
    return view;
}

} // namespace organ::widgets
