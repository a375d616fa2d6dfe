#include "demo_models.h"
#include "main_window.h"
#include "surgery_controller.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <string_view>

namespace {

// --help and --version are answered before any window system is touched: they work over ssh
// and in scripts with no display.
bool asksForHelpOrVersion(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "-h" || arg == "--help" || arg == "--help-all" || arg == "-v" || arg == "--version") {
            return true;
        }
    }
    return false;
}

void describe(QCoreApplication& app) {
    QCoreApplication::setOrganizationName(QStringLiteral("OrganWorkbench"));
    QCoreApplication::setApplicationName(QStringLiteral("organ-workbench"));
    QCoreApplication::setApplicationVersion(QStringLiteral(ORGAN_VERSION));
    (void)app;
}

void addOptions(QCommandLineParser& parser, const QCommandLineOption& demo) {
    parser.setApplicationDescription(QStringLiteral("Surgery on language models stored as GGUF files."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addOption(demo);
    parser.addPositionalArgument(
        QStringLiteral("files"),
        QStringLiteral(
            "GGUF models or organ directories to open: the first as recipient, the others as donors."),
        QStringLiteral("[FILE...]"));
}

} // namespace

int main(int argc, char** argv) {
    const QCommandLineOption demo(
        QStringLiteral("demo"),
        QStringLiteral("Write two specimen models to a temporary folder and open them."));
    if (asksForHelpOrVersion(argc, argv)) {
        QCoreApplication app(argc, argv);
        describe(app);
        QCommandLineParser parser;
        addOptions(parser, demo);
        parser.process(app); // prints and exits
        return 0;
    }
    QApplication app(argc, argv);
    describe(app);
    QApplication::setApplicationDisplayName(QStringLiteral("Organ Workbench"));
    QApplication::setDesktopFileName(QStringLiteral("org.organworkbench.OrganWorkbench"));

    QCommandLineParser parser;
    addOptions(parser, demo);
    parser.process(app);

    organ::app::MainWindow window;
    window.show();
    const QStringList files = parser.positionalArguments();
    // The demo models live as long as the window does, and are not kept in Open Recent.
    QTemporaryDir demoFolder;
    QStringList demos;
    if (parser.isSet(demo)) {
        QString error;
        demos = organ::app::writeDemoModels(demoFolder.path(), &error);
        if (demos.isEmpty()) {
            QMessageBox::critical(&window, QStringLiteral("Cannot write the demo models"), error);
        }
    }
    // The first model is the recipient, the others are donors.
    using Side = organ::app::MainWindow::Side;
    using Recent = organ::app::MainWindow::Recent;
    for (const QString& path : demos + files) {
        window.openFiles({path}, window.documents()->count() == 0 ? Side::Recipient : Side::Donor,
                         demos.contains(path) ? Recent::Skip : Recent::Remember);
    }
    // Plans autosaved by a session that crashed are offered back once the window shows.
    QTimer::singleShot(0, window.surgery(), &organ::app::SurgeryController::offerRecovery);
    return QApplication::exec();
}
