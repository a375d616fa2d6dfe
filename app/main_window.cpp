#include "main_window.h"

#include "anatomy_tree.h"
#include "format_error.h"
#include "model_view.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>

namespace organ::app {
namespace {

constexpr int kMaxRecent = 10;
const QString kRecentKey = QStringLiteral("recentFiles");

} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setAcceptDrops(true);
    m_stack = new QStackedWidget(this);
    auto* welcome = new QLabel(tr("<h2>Organ Workbench</h2>"
                                  "<p>Open a GGUF model with <b>File → Open</b> (Ctrl+O), drop one here,<br>"
                                  "or start with <code>organ-workbench --demo</code>.</p>"),
                               m_stack);
    welcome->setAlignment(Qt::AlignCenter);
    m_documents = new QTabWidget(m_stack);
    m_documents->setTabsClosable(true);
    m_documents->setMovable(true);
    m_documents->setDocumentMode(true);
    connect(m_documents, &QTabWidget::tabCloseRequested, this, [this](int index) {
        QWidget* view = m_documents->widget(index);
        m_documents->removeTab(index);
        view->deleteLater();
        updateTitle();
    });
    connect(m_documents, &QTabWidget::currentChanged, this, &MainWindow::updateTitle);
    m_stack->addWidget(welcome);
    m_stack->addWidget(m_documents);
    setCentralWidget(m_stack);
    buildMenus();
    statusBar()->showMessage(tr("Ready"));
    QSettings settings;
    if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) {
        resize(1200, 800);
    }
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    updateTitle();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open…"), this, &MainWindow::openDialog);
    open->setShortcut(QKeySequence::Open);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    rebuildRecentMenu();
    QAction* close = file->addAction(tr("&Close"), this, &MainWindow::closeCurrent);
    close->setShortcut(QKeySequence::Close);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Organ Workbench"), this, &MainWindow::showAbout);
}

int MainWindow::openFiles(const QStringList& paths) {
    int opened = 0;
    for (const QString& path : paths) {
        try {
            auto snapshot = ModelSnapshot::open(QFileInfo(path).absoluteFilePath().toStdString());
            auto* view = new widgets::ModelView(std::move(snapshot), m_documents);
            // Tabs carry the file's name: two specimens share their general.name.
            const int index = m_documents->addTab(view, QFileInfo(path).completeBaseName());
            m_documents->setTabToolTip(index, path);
            m_documents->setCurrentIndex(index);
            rememberRecent(QFileInfo(path).absoluteFilePath());
            statusBar()->showMessage(tr("Opened %1").arg(QFileInfo(path).fileName()), 5000);
            ++opened;
        } catch (const std::exception& error) {
            showError(tr("Cannot open model"), QString::fromUtf8(error.what()));
        }
    }
    updateTitle();
    return opened;
}

widgets::ModelView* MainWindow::currentView() const {
    return qobject_cast<widgets::ModelView*>(m_documents->currentWidget());
}

void MainWindow::openDialog() {
    QSettings settings;
    const QString folder = settings.value(QStringLiteral("lastFolder")).toString();
    const QStringList paths = QFileDialog::getOpenFileNames(this, tr("Open GGUF models"), folder,
                                                            tr("GGUF models (*.gguf);;All files (*)"));
    if (!paths.isEmpty()) {
        settings.setValue(QStringLiteral("lastFolder"), QFileInfo(paths.front()).absolutePath());
        openFiles(paths);
    }
}

void MainWindow::closeCurrent() {
    if (m_documents->count() > 0) {
        emit m_documents->tabCloseRequested(m_documents->currentIndex());
    }
}

void MainWindow::showAbout() {
    QMessageBox::about(this, tr("About Organ Workbench"),
                       tr("<h3>Organ Workbench %1</h3>"
                          "<p>Surgery on language models stored as GGUF files: open, inspect and "
                          "measure them by anatomical system and layer.</p>"
                          "<p>Built with Qt %2.</p>")
                           .arg(QApplication::applicationVersion(), QString::fromLatin1(qVersion())));
}

QStringList MainWindow::recentFiles() const {
    return QSettings().value(kRecentKey).toStringList();
}

void MainWindow::rememberRecent(const QString& path) {
    QStringList recent = recentFiles();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecent) {
        recent.removeLast();
    }
    QSettings().setValue(kRecentKey, recent);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    m_recentMenu->clear();
    const QStringList recent = recentFiles();
    for (const QString& path : recent) {
        m_recentMenu->addAction(QFileInfo(path).fileName(), this, [this, path] { openFiles({path}); })
            ->setToolTip(path);
    }
    m_recentMenu->setEnabled(!recent.isEmpty());
}

void MainWindow::showError(const QString& title, const QString& message) {
    // Window-modal and non-blocking, so that opening many files reports every failure.
    auto* box = new QMessageBox(QMessageBox::Critical, title, message, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setObjectName(QStringLiteral("errorDialog"));
    box->open();
    statusBar()->showMessage(message, 10000);
}

void MainWindow::updateTitle() {
    m_stack->setCurrentIndex(m_documents->count() > 0 ? 1 : 0);
    const auto* view = currentView();
    setWindowTitle(view != nullptr
                       ? tr("%1 — Organ Workbench").arg(m_documents->tabText(m_documents->currentIndex()))
                       : tr("Organ Workbench"));
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    const auto urls = event->mimeData()->urls();
    if (std::any_of(urls.begin(), urls.end(), [](const QUrl& url) { return url.isLocalFile(); })) {
        event->acceptProposedAction();
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
    QStringList paths;
    for (const QUrl& url : event->mimeData()->urls()) {
        if (url.isLocalFile()) {
            paths << url.toLocalFile();
        }
    }
    event->acceptProposedAction();
    openFiles(paths);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    QMainWindow::closeEvent(event);
}

} // namespace organ::app
