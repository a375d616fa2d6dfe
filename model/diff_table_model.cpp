#include "diff_table_model.h"

#include "column_titles.h"
#include "display_names.h"
#include "model_roles.h"

#include <limits>

namespace organ::model {
namespace {

QString typeName(TensorType type) {
    const auto name = tensorTypeName(type);
    return QString::fromUtf8(name.data(), qsizetype(name.size()));
}

// Sorted last in ascending order: a figure the diff could not give.
constexpr double kMissing = std::numeric_limits<double>::max();

} // namespace

DiffTableModel::DiffTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void DiffTableModel::setDiff(std::shared_ptr<const ModelDiff> diff, std::vector<int> tensorIndex) {
    beginResetModel();
    m_diff = std::move(diff);
    m_tensorIndex = std::move(tensorIndex);
    endResetModel();
}

int DiffTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || !m_diff ? 0 : int(m_diff->tensors.size());
}

int DiffTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant DiffTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || !m_diff || index.row() >= rowCount()) {
        return {};
    }
    const TensorDiff& t = m_diff->tensors[std::size_t(index.row())];
    if (role == TensorIndexRole) {
        return std::size_t(index.row()) < m_tensorIndex.size() ? m_tensorIndex[std::size_t(index.row())] : -1;
    }
    if (role == Qt::TextAlignmentRole) {
        return index.column() >= RelativeError ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    }
    if (role != Qt::DisplayRole && role != SortRole) {
        return {};
    }
    const bool sort = role == SortRole;
    const DiffSums& s = t.sums;
    auto figure = [sort](const std::optional<double>& v, const QString& text) -> QVariant {
        if (sort) {
            return v ? *v : kMissing;
        }
        return text;
    };
    switch (index.column()) {
    case Tensor:
        return displayText(t.name);
    case Types:
        return t.typeA == t.typeB ? typeName(t.typeA)
                                  : QString(typeName(t.typeA) + QStringLiteral(" → ") + typeName(t.typeB));
    case RelativeError: {
        const auto v = s.relativeError();
        return figure(v, v ? QString::number(*v, 'g', 4) : tr("—"));
    }
    case Cosine: {
        const auto v = s.cosine();
        return figure(v, v ? QString::number(*v, 'f', 6) : tr("—"));
    }
    case Sqnr: {
        // No SQNR: nothing changed (infinite), sorted as the largest.
        const auto v = s.sqnrDb();
        return sort ? QVariant(v ? *v : kMissing) : QVariant(v ? QString::number(*v, 'f', 1) : tr("∞"));
    }
    case MaxAbs:
        return sort ? QVariant(s.maxAbs) : QVariant(QString::number(s.maxAbs, 'g', 4));
    case Changed: {
        const double share = s.values > 0 ? double(s.changed) / double(s.values) : 0.0;
        return sort ? QVariant(share) : QVariant(QString(QString::number(100.0 * share, 'f', 2) + u'%'));
    }
    case Identical:
        return sort ? QVariant(t.identical ? 1 : 0) : QVariant(t.identical ? tr("yes") : tr("no"));
    default:
        return {};
    }
}

QVariant DiffTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    static constexpr const char* titles[] = {QT_TR_NOOP("Tensor"),         QT_TR_NOOP("Types"),
                                             QT_TR_NOOP("Relative error"), QT_TR_NOOP("Cosine"),
                                             QT_TR_NOOP("SQNR (dB)"),      QT_TR_NOOP("Max |Δ|"),
                                             QT_TR_NOOP("Changed"),        QT_TR_NOOP("Identical")};
    return columnTitle<ColumnCount>(staticMetaObject, titles, section, orientation, role);
}

} // namespace organ::model
