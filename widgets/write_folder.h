#pragma once

#include <QString>

namespace organ::widgets {

// Where the window proposes to write (an assembled chimera, an extracted directory, a plan, a
// chart, a report): the folder the user last wrote to, else `fallback` (the model's own folder).
// Dialogs that write call rememberWriteFolder() with what they wrote.
QString proposedWriteFolder(const QString& fallback);
void rememberWriteFolder(const QString& writtenPath);

} // namespace organ::widgets
