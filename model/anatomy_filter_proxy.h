#pragma once

#include "anatomy/anatomy.h"

#include <QSortFilterProxyModel>
#include <array>

namespace organ::model {

// Filters the anatomy tree by a name pattern and by system, recursively: a group stays
// visible while any tensor below it matches. Sorting uses SortRole.
class AnatomyFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit AnatomyFilterProxy(QObject* parent = nullptr);
    void setSystemVisible(System system, bool visible);
    bool isSystemVisible(System system) const { return m_visible[static_cast<std::size_t>(system)]; }
    // True while the name filter or a system toggle hides tensors.
    bool isFiltering() const;
    // A group's tensors that the filter shows (all of them when it shows all).
    int shownTensors(const QModelIndex& proxyGroup) const;
    // The first tensor row shown, depth first (invalid when none).
    QModelIndex firstTensor(const QModelIndex& proxyParent = {}) const;

    // While filtering, a group's count says how many of its tensors match: "1 of 3 tensors".
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    std::array<bool, kSystemCount> m_visible;
};

} // namespace organ::model
