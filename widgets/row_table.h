#pragma once

class QAbstractItemModel;
class QObject;
class QString;
class QTableView;
class QWidget;

namespace organ::widgets {

// A table of rows as the window shows them: no word wrap, alternating row colours, no row numbers.
QTableView* rowTable(QAbstractItemModel* model, const QString& objectName, QWidget* parent);

// A rowTable() of `source` through a QSortFilterProxyModel (a child of `proxyParent`) that sorts by
// model::SortRole (numbers as numbers) at a click on a header; the rows stand in the model's order
// until then.
QTableView* sortableRowTable(QAbstractItemModel* source, const QString& objectName, QWidget* parent,
                             QObject* proxyParent);

} // namespace organ::widgets
