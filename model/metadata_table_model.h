#pragma once

#include "gguf/gguf_model.h"

#include <QAbstractTableModel>
#include <memory>

namespace organ::model {

// Every metadata key of a model: key, value type, value (arrays by length and first items).
class MetadataTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Key, Type, Value, ColumnCount };

    explicit MetadataTableModel(QObject* parent = nullptr);
    void setModel(std::shared_ptr<const GgufModel> model);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::shared_ptr<const GgufModel> m_model;
};

} // namespace organ::model
