#include "metadata_table_model.h"
#include "display_names.h"

#include "model_roles.h"

namespace organ::model {
namespace {

// Values are shown on one line; a whole chat template or vocabulary would not fit.
QString shortened(const std::string& text, qsizetype limit) {
    QString value = QString::fromUtf8(text.data(), qsizetype(text.size()));
    value.replace(u'\n', QStringLiteral("⏎"));
    return value.size() > limit ? value.left(limit) + QStringLiteral(" …") : value;
}

} // namespace

MetadataTableModel::MetadataTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void MetadataTableModel::setModel(std::shared_ptr<const GgufModel> model) {
    beginResetModel();
    m_model = std::move(model);
    endResetModel();
}

int MetadataTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || !m_model ? 0 : int(m_model->metadata().size());
}

int MetadataTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant MetadataTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || !m_model) {
        return {};
    }
    const MetaEntry& entry = m_model->metadata()[static_cast<std::size_t>(index.row())];
    if (role == Qt::DisplayRole || role == SortRole || role == FilterRole) {
        switch (index.column()) {
        case Key:
            return displayText(entry.key);
        case Type: {
            const auto name = valueTypeName(entry.value.type());
            QString type = QString::fromUtf8(name.data(), qsizetype(name.size()));
            if (entry.value.isArray()) {
                const auto element = valueTypeName(entry.value.elementType());
                type += u'[' + QString::fromUtf8(element.data(), qsizetype(element.size())) + u']';
            }
            return type;
        }
        case Value:
            return shortened(entry.value.toDisplay(8), 300);
        default:
            return {};
        }
    }
    if (role == Qt::ToolTipRole && index.column() == Value) {
        return shortened(entry.value.toDisplay(64), 4000);
    }
    return {};
}

QVariant MetadataTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) {
        return {};
    }
    switch (section) {
    case Key:
        return tr("Key");
    case Type:
        return tr("Type");
    case Value:
        return tr("Value");
    default:
        return {};
    }
}

} // namespace organ::model
