#pragma once

#include <QAbstractTableModel>

namespace organ::model {

class GraftDocument;

// The graft plan's operations, one row each, in order: what, from which donor, how many
// tensors and bytes it sets, and its status from the compatibility report.
class GraftPlanModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Number, Operation, Donor, Tensors, Bytes, Status, ColumnCount };

    explicit GraftPlanModel(GraftDocument* document, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    GraftDocument* m_document;
};

} // namespace organ::model
