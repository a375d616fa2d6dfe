#pragma once

#include <QProgressDialog>
#include <QString>

namespace organ::app {

// The dialog of a job on the engine thread: non-modal (the window stays usable), shown at once,
// 0…1000, neither closing nor resetting itself at the end (the job's end closes it); its Cancel
// button emits canceled(). The caller connects canceled() and shows it.
QProgressDialog* jobProgressDialog(QWidget* parent, const QString& label, const QString& title,
                                   const QString& objectName, int minimumWidth);

} // namespace organ::app
