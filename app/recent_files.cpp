#include "recent_files.h"

#include <QFileInfo>
#include <QMenu>
#include <QSettings>

namespace organ::app {
namespace {

constexpr int kMaxRecent = 10;
const QString kRecentKey = QStringLiteral("recentFiles");

} // namespace

RecentFiles::RecentFiles(QMenu* recipient, QMenu* donor, std::function<void(const QString&, Side)> open,
                         QObject* parent)
    : QObject(parent), m_recipient(recipient), m_donor(donor), m_open(std::move(open)) {
    rebuildMenus();
}

QStringList newestFirst(QStringList list, const QString& path, qsizetype most) {
    list.removeAll(path);
    list.prepend(path);
    return list.mid(0, most);
}

QStringList RecentFiles::files() const {
    return QSettings().value(kRecentKey).toStringList();
}

void RecentFiles::remember(const QString& path) {
    QSettings().setValue(kRecentKey, newestFirst(files(), path, kMaxRecent));
    rebuildMenus();
}

// A file gone since (deleted, moved, a demo's copy) is not offered.
void RecentFiles::rebuildMenus() {
    QStringList recent = files();
    recent.removeIf([](const QString& path) { return !QFileInfo::exists(path); });
    for (const auto& [menu, side] :
         {std::pair(m_recipient, Side::Recipient), std::pair(m_donor, Side::Donor)}) {
        menu->clear();
        for (const QString& path : recent) {
            menu->addAction(QFileInfo(path).fileName(), this,
                            [this, path, side = side] { m_open(path, side); })
                ->setToolTip(path);
        }
        menu->setEnabled(!recent.isEmpty());
    }
}

} // namespace organ::app
