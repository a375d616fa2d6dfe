#pragma once

#include "fleet/fleet.h"

#include <QAbstractTableModel>
#include <memory>

namespace organ::model {

// The fleet as a table: one row per model found, ranked ones with their rank, unreadable ones
// with their error. Qt::DisplayRole is formatted; kSortRole holds the raw number (or text) each
// column sorts by, so that "1.2 M" sorts above "800 K".
class FleetTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Rank,
        Name,
        File,
        Architecture,
        Parameters,
        Size,
        BitsPerWeight,
        Theta,
        Signal,
        EmbedTheta,
        SkeletonTheta,
        OrganTheta,
        NormTheta,
        Dtypes,
        Error,
        ColumnCount
    };
    static constexpr int kSortRole = Qt::UserRole + 1;
    static constexpr int kPathRole = Qt::UserRole + 2;

    explicit FleetTableModel(QObject* parent = nullptr);
    void setReport(std::shared_ptr<const FleetReport> report);
    const FleetReport* report() const { return m_report.get(); }
    const FleetRow& fleetRow(int row) const { return m_report->rows.at(static_cast<std::size_t>(row)); }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::shared_ptr<const FleetReport> m_report;
    std::vector<int> m_rank; // per row, 0 when unranked
};

} // namespace organ::model
