#include "job_progress.h"

namespace organ::app {

QProgressDialog* jobProgressDialog(QWidget* parent, const QString& label, const QString& title,
                                   const QString& objectName, int minimumWidth) {
    auto* dialog = new QProgressDialog(label, QProgressDialog::tr("Cancel"), 0, 1000, parent);
    dialog->setObjectName(objectName);
    dialog->setWindowTitle(title);
    dialog->setWindowModality(Qt::NonModal);
    dialog->setMinimumDuration(0);
    dialog->setAutoClose(false);
    dialog->setAutoReset(false);
    dialog->setMinimumWidth(minimumWidth);
    return dialog;
}

} // namespace organ::app
