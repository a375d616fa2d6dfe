#include "write_folder.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace organ::widgets {
namespace {

const QString kKey = QStringLiteral("lastWriteFolder");

} // namespace

QString proposedWriteFolder(const QString& fallback) {
    const QString last = QSettings().value(kKey).toString();
    return !last.isEmpty() && QFileInfo(last).isDir() ? last : fallback;
}

void rememberWriteFolder(const QString& writtenPath) {
    QSettings().setValue(kKey, QFileInfo(writtenPath).absolutePath());
}

} // namespace organ::widgets
