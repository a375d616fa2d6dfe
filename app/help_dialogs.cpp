#include "help_dialogs.h"

#include <QApplication>
#include <QDialog>
#include <QFile>
#include <QMessageBox>
#include <QTextBrowser>
#include <QVBoxLayout>

// Outside any namespace, as Q_INIT_RESOURCE requires.
static void initWorkbenchResources() {
    Q_INIT_RESOURCE(workbench);
}

namespace organ::app {

void initResources() {
    initWorkbenchResources();
}

void showUserGuideDialog(QWidget* parent) {
    if (auto* open = parent->findChild<QDialog*>(QStringLiteral("userGuide"))) {
        open->raise();
        open->activateWindow();
        return;
    }
    auto* dialog = new QDialog(parent);
    dialog->setObjectName(QStringLiteral("userGuide"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(QCoreApplication::translate("Help", "Organ Workbench — user guide"));
    auto* browser = new QTextBrowser(dialog);
    browser->setOpenExternalLinks(true);
    QFile page(QStringLiteral(":/guide/user-guide.md"));
    page.open(QIODevice::ReadOnly);
    browser->setMarkdown(QString::fromUtf8(page.readAll()));
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(browser);
    dialog->resize(820, 720);
    dialog->show();
}

void showAboutDialog(QWidget* parent) {
    QMessageBox::about(parent, QCoreApplication::translate("Help", "About Organ Workbench"),
                       QCoreApplication::translate(
                           "Help", "<h3>Organ Workbench %1</h3>"
                                   "<p>Surgery on language models stored as GGUF files: open, inspect and "
                                   "measure them by anatomical system and layer.</p>"
                                   "<p>Built with Qt %2.</p>")
                           .arg(QApplication::applicationVersion(), QString::fromLatin1(qVersion())));
}

} // namespace organ::app
