#include "fleet_table_model.h"

#include "column_titles.h"
#include "display_names.h"
#include "support/text_format.h"

#include <QBrush>
#include <QFileInfo>
#include <QPalette>

namespace organ::model {
namespace {

QString thetaText(const std::optional<double>& theta) {
    return theta ? QString::number(*theta, 'f', 2) + QStringLiteral("°") : QString();
}

} // namespace

FleetTableModel::FleetTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void FleetTableModel::setReport(std::shared_ptr<const FleetReport> report) {
    beginResetModel();
    m_report = std::move(report);
    m_rank.assign(m_report ? m_report->rows.size() : 0, 0);
    if (m_report) {
        int rank = 0;
        for (std::size_t i : m_report->ranking()) {
            m_rank[i] = ++rank;
        }
    }
    endResetModel();
}

int FleetTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || !m_report ? 0 : static_cast<int>(m_report->rows.size());
}

int FleetTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant FleetTableModel::data(const QModelIndex& index, int role) const {
    if (!m_report || !index.isValid()) {
        return {};
    }
    const FleetRow& row = fleetRow(index.row());
    const int rank = m_rank[static_cast<std::size_t>(index.row())];
    auto optional = [](const std::optional<double>& v) { return v ? QVariant(*v) : QVariant(); };
    if (role == kPathRole) {
        return QString::fromStdString(row.path);
    }
    if (role == Qt::ToolTipRole) {
        return row.ok() ? displayText(row.path) : displayText(row.error);
    }
    if (role == Qt::ForegroundRole && !row.ok()) {
        return QBrush(QColor(0xc6, 0x28, 0x28));
    }
    if (role == Qt::TextAlignmentRole) {
        const bool text = index.column() == Name || index.column() == File ||
                          index.column() == Architecture || index.column() == Dtypes ||
                          index.column() == Error;
        return QVariant::fromValue(text ? Qt::AlignLeft | Qt::AlignVCenter
                                        : Qt::AlignRight | Qt::AlignVCenter);
    }
    if (role != Qt::DisplayRole && role != kSortRole) {
        return {};
    }
    const bool sort = role == kSortRole;
    switch (index.column()) {
    case Rank:
        return rank != 0 ? QVariant(rank) : (sort ? QVariant(1e9) : QVariant());
    case Name:
        return displayText(row.name);
    case File:
        return QFileInfo(QString::fromStdString(row.path)).fileName();
    case Architecture:
        return displayText(row.architecture);
    case Parameters:
        if (!row.ok()) {
            return {};
        }
        return sort ? QVariant(qulonglong(row.parameters))
                    : QVariant(QString::fromStdString(humanCount(row.parameters)));
    case Size:
        if (!row.ok()) {
            return {};
        }
        return sort ? QVariant(qulonglong(row.fileSize))
                    : QVariant(QString::fromStdString(humanBytes(row.fileSize)));
    case BitsPerWeight:
        if (!row.ok()) {
            return {};
        }
        return sort ? QVariant(row.bitsPerWeight) : QVariant(QString::number(row.bitsPerWeight, 'f', 2));
    case Theta:
        return sort ? optional(row.thetaMean) : QVariant(thetaText(row.thetaMean));
    case Signal:
        return sort ? optional(row.signalMean)
                    : QVariant(row.signalMean ? QString::number(*row.signalMean, 'f', 3) : QString());
    case EmbedTheta:
    case SkeletonTheta:
    case OrganTheta:
    case NormTheta: {
        static constexpr System systems[] = {System::Embed, System::Skeleton, System::Organ, System::Norm};
        const auto theta = row.systemTheta(systems[index.column() - EmbedTheta]);
        return sort ? optional(theta) : QVariant(thetaText(theta));
    }
    case Dtypes:
        return QString::fromStdString(fleetDtypeText(row));
    case Error:
        return displayText(row.error);
    default:
        return {};
    }
}

QVariant FleetTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    static constexpr const char* titles[] = {
        QT_TR_NOOP("#"), QT_TR_NOOP("Model"), QT_TR_NOOP("File"), QT_TR_NOOP("Architecture"),
        QT_TR_NOOP("Parameters"), QT_TR_NOOP("Size"), QT_TR_NOOP("Bits/weight"), QT_TR_NOOP("θ mean"),
        QT_TR_NOOP("Signal"),
        // each system's θ
        QT_TR_NOOP("Embed θ"), QT_TR_NOOP("Skeleton θ"), QT_TR_NOOP("Organ θ"), QT_TR_NOOP("Norm θ"),
        QT_TR_NOOP("Dtypes"), QT_TR_NOOP("Error")};
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) {
        return QAbstractTableModel::headerData(section, orientation, role);
    }
    return columnTitle<ColumnCount>(staticMetaObject, titles, section, orientation, role);
}

} // namespace organ::model
