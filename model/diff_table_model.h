#pragma once

#include "measure/model_diff.h"

#include <QAbstractTableModel>
#include <memory>

namespace organ::model {

// `organ diff` of two models as a table: one row per tensor compared (the first model's order),
// its types and the diff's figures; SortRole sorts numbers as numbers (a missing figure last),
// TensorIndexRole gives the tensor's index in the first model.
class DiffTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Tensor, Types, RelativeError, Cosine, Sqnr, MaxAbs, Changed, Identical, ColumnCount };

    explicit DiffTableModel(QObject* parent = nullptr);

    // `tensorIndex`: per row of `diff`, the tensor's index in the first model. Null: empty.
    void setDiff(std::shared_ptr<const ModelDiff> diff, std::vector<int> tensorIndex);
    const ModelDiff* diff() const { return m_diff.get(); }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::shared_ptr<const ModelDiff> m_diff;
    std::vector<int> m_tensorIndex;
};

} // namespace organ::model
