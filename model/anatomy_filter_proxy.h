#pragma once

#include "anatomy.h"

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

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    std::array<bool, kSystemCount> m_visible;
};

} // namespace organ::model
