#pragma once

#include <QString>
#include <QStringList>

namespace organ::app {

// Writes the two demo specimens (seeds 1 and 2) into `folder` and returns their paths;
// on failure returns an empty list and sets `error`.
QStringList writeDemoModels(const QString& folder, QString* error);

} // namespace organ::app
