#include "demo_models.h"
#include "main_window.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QTemporaryDir>
#include <QTimer>

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("OrganWorkbench"));
    QApplication::setApplicationName(QStringLiteral("organ-workbench"));
    QApplication::setApplicationDisplayName(QStringLiteral("Organ Workbench"));
    QApplication::setApplicationVersion(QStringLiteral(ORGAN_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("org.organworkbench.OrganWorkbench"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Surgery on language models stored as GGUF files."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption demo(
        QStringLiteral("demo"),
        QStringLiteral("Write two specimen models to a temporary folder and open them."));
    parser.addOption(demo);
    parser.addPositionalArgument(QStringLiteral("files"), QStringLiteral("GGUF models to open."),
                                 QStringLiteral("[FILE...]"));
    parser.process(app);

    organ::app::MainWindow window;
    window.show();
    QStringList files = parser.positionalArguments();
    // The demo models live as long as the window does.
    QTemporaryDir demoFolder;
    if (parser.isSet(demo)) {
        QString error;
        const QStringList demos = organ::app::writeDemoModels(demoFolder.path(), &error);
        if (demos.isEmpty()) {
            QMessageBox::critical(&window, QStringLiteral("Cannot write the demo models"), error);
        }
        files = demos + files;
    }
    // The first model is the recipient, the others are donors.
    if (!files.isEmpty()) {
        window.openFiles({files.front()});
        window.openFiles(files.mid(1), organ::app::MainWindow::Side::Donor);
    }
    // Plans autosaved by a session that crashed are offered back once the window shows.
    QTimer::singleShot(0, &window, &organ::app::MainWindow::offerRecovery);
    return QApplication::exec();
}
