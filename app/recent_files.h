#pragma once

#include "model_pane.h"

#include <QObject>
#include <QStringList>
#include <functional>

class QMenu;

namespace organ::app {

// `list` with `path` first (moved there if it was in it), at most `most` entries.
QStringList newestFirst(QStringList list, const QString& path, qsizetype most);

// File → Open Recent and Open Recent as Donor: the last ten models opened, newest first, kept in
// the settings (those that still exist when the menus are built); choosing one calls `open` with
// its side.
class RecentFiles : public QObject {
    Q_OBJECT
public:
    using Side = widgets::ModelPane::Side;
    RecentFiles(QMenu* recipient, QMenu* donor, std::function<void(const QString& path, Side side)> open,
                QObject* parent);

    QStringList files() const;
    void remember(const QString& path);

private:
    void rebuildMenus();

    QMenu* m_recipient;
    QMenu* m_donor;
    std::function<void(const QString&, Side)> m_open;
};

} // namespace organ::app
