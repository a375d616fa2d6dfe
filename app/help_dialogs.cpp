#include "help_dialogs.h"

#include <QApplication>
#include <QDialog>
#include <QFile>
#include <QIcon>
#include <QMessageBox>
#include <QTextBrowser>
#include <QVBoxLayout>

// Outside any namespace, as Q_INIT_RESOURCE requires.
static void initWorkbenchResources() {
    Q_INIT_RESOURCE(workbench);
}

namespace organ::app {

namespace {

// Once per process: the resources of this static library are linked in by this call.
void ensureResources() {
    static const bool registered = [] {
        initWorkbenchResources();
        return true;
    }();
    (void)registered;
}

} // namespace

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
    browser->setMarkdown(resourceText(QStringLiteral(":/guide/user-guide.md")));
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(browser);
    dialog->resize(820, 720);
    dialog->show();
}

QString resourceText(const QString& path) {
    ensureResources();
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()) : QString();
}

QIcon applicationIcon() {
    ensureResources();
    return QIcon(QStringLiteral(":/icons/organ-workbench.svg"));
}

QString aboutText() {
    return resourceText(QStringLiteral(":/texts/about.html"))
        .arg(QApplication::applicationVersion(), QString::fromLatin1(qVersion()));
}

void showAboutDialog(QWidget* parent) {
    QMessageBox::about(parent, QCoreApplication::translate("Help", "About Organ Workbench"), aboutText());
}

} // namespace organ::app
