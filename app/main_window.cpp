#include "main_window.h"

#include "anatomy/anatomy_tree.h"
#include "display_names.h"
#include "engine_thread.h"

#include "graft_document.h"
#include "model_view.h"
#include "report_export.h"
#include "theta_comparison.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDialog>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTextBrowser>
#include <QUndoStack>
#include <QVBoxLayout>
#include <cmath>

// Outside any namespace, as Q_INIT_RESOURCE requires.
static void initWorkbenchResources() {
    Q_INIT_RESOURCE(workbench);
}

namespace organ::app {
namespace {

constexpr int kMaxRecent = 10;
const QString kRecentKey = QStringLiteral("recentFiles");
const QString kPaneShareKey = QStringLiteral("window/recipientShare");

} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    initWorkbenchResources();
    setAcceptDrops(true);
    m_document = new model::GraftDocument(this);
    m_panes = new QSplitter(Qt::Horizontal, this);
    m_recipient = new widgets::ModelPane(Side::Recipient, m_panes);
    m_donor = new widgets::ModelPane(Side::Donor, m_panes);
    m_panes->addWidget(m_recipient);
    m_panes->addWidget(m_donor);
    m_panes->setObjectName(QStringLiteral("panes"));
    m_panes->setChildrenCollapsible(false);
    setCentralWidget(m_panes);
    for (widgets::ModelPane* pane : {m_recipient, m_donor}) {
        connect(pane, &widgets::ModelPane::viewsChanged, this, &MainWindow::updatePaneSizes);
        connect(pane, &widgets::ModelPane::viewsChanged, this, &MainWindow::updateTitle);
        connect(pane, &widgets::ModelPane::viewsChanged, this, &MainWindow::updateComparison);
        connect(pane, &widgets::ModelPane::filesDropped, this,
                [this, pane](const QStringList& paths) { openFiles(paths, pane->side()); });
        connect(pane, &widgets::ModelPane::viewsChanged, this, &MainWindow::updateSurgeryRoles);
        pane->setCloseGuard([this](widgets::ModelView* view) { return confirmClose(view); });
        connect(pane, &widgets::ModelPane::viewClosed, this, [this](const QString& path) {
            if (findView(path) == nullptr) {
                m_document->removeModel(path);
            }
        });
    }
    buildSurgery();
    buildMenus();
    m_engine = new EngineThread(this);
    buildStatusBar();
    connectEngine();
    statusBar()->showMessage(tr("Ready"));
    QSettings settings;
    if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) {
        resize(1200, 800);
    }
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    updatePaneSizes();
    updateTitle();
}

// The panes' signals would otherwise reach this window while QWidget deletes its children.
MainWindow::~MainWindow() {
    m_recipient->disconnect(this);
    m_donor->disconnect(this);
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open recipient…"), this, [this] { openDialog(Side::Recipient); });
    open->setShortcut(QKeySequence::Open);
    QAction* openDonor = file->addAction(tr("Open &donor…"), this, [this] { openDialog(Side::Donor); });
    openDonor->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    m_recentDonorMenu = file->addMenu(tr("Open Recent as Do&nor"));
    rebuildRecentMenus();
    file->addAction(tr("S&wap recipient and donor"), this, &MainWindow::swapPanes)
        ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_X));
    QAction* exportAction =
        file->addAction(tr("&Export measurement…"), this, &MainWindow::exportMeasurementDialog);
    exportAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    QAction* close = file->addAction(tr("&Close"), this, &MainWindow::closeCurrent);
    close->setShortcut(QKeySequence::Close);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    QAction* undo = m_document->undoStack()->createUndoAction(this, tr("&Undo"));
    undo->setShortcut(QKeySequence::Undo);
    QAction* redo = m_document->undoStack()->createRedoAction(this, tr("&Redo"));
    redo->setShortcuts({QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z), QKeySequence(Qt::CTRL | Qt::Key_Y)});
    edit->addAction(undo);
    edit->addAction(redo);
    QMenu* graft = menuBar()->addMenu(tr("&Graft"));
    graft->addAction(tr("&Open plan…"), this, &MainWindow::openPlanDialog)
        ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P));
    graft->addAction(tr("&Save plan…"), this, &MainWindow::savePlanDialog)->setShortcut(QKeySequence::Save);
    graft->addAction(tr("&Assemble chimera…"), this, &MainWindow::assembleDialog)
        ->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
    graft->addAction(tr("&Clear plan"), m_document, &model::GraftDocument::clear);
    graft->addSeparator();
    graft->addAction(m_planDock->toggleViewAction());
    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addAction(tr("&Find tensor"), this,
                    [this] {
                        if (widgets::ModelView* v = focusedPane()->currentView()) {
                            v->focusFilter();
                        }
                    })
        ->setShortcut(QKeySequence::Find);
    view->addSeparator();
    using Page = widgets::ModelView::Page;
    const std::pair<QString, Page> pages[] = {{tr("&Anatomy"), Page::Anatomy},
                                              {tr("&Heatmap"), Page::Heatmap},
                                              {tr("Δθ against the &donor"), Page::Delta},
                                              {tr("&Inspector"), Page::Inspector},
                                              {tr("&Metadata"), Page::Metadata}};
    for (int k = 0; k < int(std::size(pages)); ++k) {
        const Page page = pages[k].second;
        view->addAction(pages[k].first, this,
                        [this, page] {
                            // Δθ lives on the recipient, whichever pane has the focus.
                            widgets::ModelPane* pane = page == Page::Delta ? m_recipient : focusedPane();
                            widgets::ModelView* v = pane->currentView();
                            if (v != nullptr && page == Page::Delta && !v->hasComparison()) {
                                statusBar()->showMessage(v->comparisonReason(), 8000);
                            } else if (v != nullptr) {
                                v->showPage(page);
                            }
                        })
            ->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + k)));
    }
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&User guide"), this, &MainWindow::showUserGuide)
        ->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("&About Organ Workbench"), this, &MainWindow::showAbout);
}

int MainWindow::openFiles(const QStringList& paths, Side side) {
    int opened = 0;
    for (const QString& path : paths) {
        try {
            auto snapshot = ModelSnapshot::open(QFileInfo(path).absoluteFilePath().toStdString());
            widgets::ModelPane* target = pane(side);
            m_document->addModel(snapshot);
            auto* view = new widgets::ModelView(std::move(snapshot), target);
            // Tabs carry the file's name: two specimens share their general.name.
            target->addView(view, QFileInfo(path).completeBaseName(), path);
            m_jobs.insert(m_engine->measure(view->snapshotPointer()), view);
            connect(view, &widgets::ModelView::dropRefused, this, [this](const QString& reason) {
                statusBar()->showMessage(tr("Not grafted: %1").arg(reason), 10000);
            });
            connect(view, &widgets::ModelView::tensorSelected, this, [this, view](int tensor) {
                m_portraits.insert(m_engine->portrait(view->snapshotPointer(), tensor), view);
            });
            rememberRecent(QFileInfo(path).absoluteFilePath());
            statusBar()->showMessage(tr("Opened %1").arg(QFileInfo(path).fileName()), 5000);
            ++opened;
        } catch (const std::exception& error) {
            showError(tr("Cannot open model"), model::displayText(error.what()));
        }
    }
    updateTitle();
    return opened;
}

widgets::ModelView* MainWindow::currentView() const {
    return m_recipient->currentView();
}

void MainWindow::swapPanes() {
    auto names = [](const widgets::ModelPane* pane) {
        QStringList out;
        for (const widgets::ModelView* view : pane->views()) {
            out << model::modelDisplayName(*view->snapshot().model);
        }
        return out.join(QStringLiteral(", "));
    };
    const QString recipients = names(m_recipient);
    const QString donors = names(m_donor);
    // Through a third, temporary pane: a pane cannot move its views into itself.
    widgets::ModelPane parking(Side::Recipient);
    m_recipient->moveViewsTo(parking);
    m_donor->moveViewsTo(*m_recipient);
    parking.moveViewsTo(*m_donor);
    updateTitle();
    if (recipients.isEmpty() && donors.isEmpty()) {
        return;
    }
    const QString none = tr("nothing");
    QString message = tr("Swapped sides: the recipient pane now holds %1, the donor pane %2")
                          .arg(donors.isEmpty() ? none : donors, recipients.isEmpty() ? none : recipients);
    if (!m_document->isEmpty()) {
        message += tr(". The graft plan still grafts into %1").arg(QFileInfo(m_document->base()).fileName());
    }
    statusBar()->showMessage(message, 10000);
}

void MainWindow::buildStatusBar() {
    m_jobLabel = new QLabel(this);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_progress->setMaximumWidth(220);
    m_progress->setTextVisible(false);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_cancel->setToolTip(tr("Stop measuring (Esc)"));
    m_cancel->setShortcut(Qt::Key_Escape);
    connect(m_cancel, &QPushButton::clicked, m_engine, &EngineThread::cancel);
    statusBar()->addPermanentWidget(m_jobLabel);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancel);
    for (QWidget* w : {static_cast<QWidget*>(m_jobLabel), static_cast<QWidget*>(m_progress),
                       static_cast<QWidget*>(m_cancel)}) {
        w->hide();
    }
}

// Results are routed by generation; a view closed meanwhile is a null QPointer.
void MainWindow::connectEngine() {
    connect(m_engine, &EngineThread::started, this, [this](quint64 g) {
        if (const auto view = m_jobs.value(g)) {
            m_jobLabel->setText(tr("Measuring %1…").arg(model::displayText(view->snapshot().model->name())));
        }
        m_progress->setValue(0);
        for (QWidget* w : {static_cast<QWidget*>(m_jobLabel), static_cast<QWidget*>(m_progress),
                           static_cast<QWidget*>(m_cancel)}) {
            w->show();
        }
    });
    connect(m_engine, &EngineThread::portraitReady, this,
            [this](quint64 g, int tensor, std::shared_ptr<const TensorPortrait> portrait) {
                if (const auto view = m_portraits.take(g)) {
                    view->setPortrait(tensor, std::move(portrait));
                }
            });
    connect(m_engine, &EngineThread::progress, this, [this](quint64, quint64 done, quint64 total) {
        m_progress->setValue(total == 0 ? 1000
                                        : static_cast<int>(1000.0 * static_cast<double>(done) / total));
    });
    connect(m_engine, &EngineThread::tensorMeasured, this,
            [this](quint64 g, int tensor, const ZResult& result) {
                if (const auto view = m_jobs.value(g)) {
                    view->applyTensorResult(tensor, result);
                }
            });
    connect(m_engine, &EngineThread::finished, this,
            [this](quint64 g, std::shared_ptr<const ModelMeasurement> measurement) {
                QString message;
                if (const auto view = m_jobs.value(g)) {
                    view->setMeasurement(measurement);
                    message = tr("Measured %1: θ mean %2°%3")
                                  .arg(model::displayText(measurement->name))
                                  .arg(measurement->model.thetaMean, 0, 'f', 2)
                                  .arg(measurement->fromCache ? tr(" (from the cache)") : QString());
                }
                jobEnded(g, message);
                updateComparison();
                updatePreview();
            });
    connect(m_engine, &EngineThread::failed, this, [this](quint64 g, const QString& error) {
        jobEnded(g, QString());
        showError(tr("Measurement failed"), error);
    });
    connect(m_engine, &EngineThread::cancelled, this,
            [this](quint64 g) { jobEnded(g, tr("Measurement cancelled")); });
    connect(m_engine, &EngineThread::assemblyProgress, this,
            [this](quint64 g, quint64 done, quint64 total, const QString& stage) {
                if (g == m_assembly) {
                    assemblyProgress(done, total, stage);
                }
            });
    connect(m_engine, &EngineThread::assemblyCancelled, this, [this](quint64) {
        statusBar()->showMessage(tr("Assembly cancelled: no file was written"), 10000);
        assemblyFinished(false, tr("cancelled"));
    });
    connect(m_engine, &EngineThread::assemblyFailed, this, [this](quint64, const QString& message) {
        assemblyFinished(false, message);
        showError(tr("The chimera could not be assembled"), message);
    });
    connect(m_engine, &EngineThread::assembled, this,
            [this](quint64, const QString& output, const QString& validation, bool valid) {
                assemblyFinished(true, output);
                auto* box = new QMessageBox(
                    valid ? QMessageBox::Information : QMessageBox::Warning, tr("Chimera assembled"),
                    tr("Wrote %1.\n\nValidation: %2").arg(output, valid ? tr("passed") : tr("failed")),
                    QMessageBox::NoButton, this);
                box->setObjectName(QStringLiteral("assemblyResult"));
                box->setAttribute(Qt::WA_DeleteOnClose);
                box->setDetailedText(validation.isEmpty() ? tr("No findings.") : validation);
                QPushButton* asRecipient = box->addButton(tr("Open as recipient"), QMessageBox::AcceptRole);
                asRecipient->setObjectName(QStringLiteral("openChimeraRecipient"));
                QPushButton* asDonor = box->addButton(tr("Open as donor"), QMessageBox::AcceptRole);
                asDonor->setObjectName(QStringLiteral("openChimeraDonor"));
                box->addButton(QMessageBox::Close);
                connect(asRecipient, &QPushButton::clicked, this,
                        [this, output] { openFiles({output}, Side::Recipient); });
                connect(asDonor, &QPushButton::clicked, this,
                        [this, output] { openFiles({output}, Side::Donor); });
                box->open();
                statusBar()->showMessage(tr("Assembled %1").arg(QFileInfo(output).fileName()), 10000);
            });
}

void MainWindow::updateComparison() {
    widgets::ModelView* recipient = m_recipient->currentView();
    widgets::ModelView* donor = m_donor->currentView();
    for (widgets::ModelView* view : m_donor->views()) {
        view->clearComparison(tr("Δθ shows on the recipient (left), against the current donor"));
    }
    for (widgets::ModelView* view : m_recipient->views()) {
        if (view != recipient) {
            view->clearComparison(tr("Δθ shows on the current recipient"));
        }
    }
    if (recipient == nullptr) {
        return;
    }
    if (donor == nullptr) {
        recipient->clearComparison(tr("Open a donor of the same architecture to compare θ tensor by tensor"));
        return;
    }
    const model::ThetaComparison comparison = model::compareTheta(
        recipient->snapshot(), recipient->measurement(), donor->snapshot(), donor->measurement());
    if (!comparison.comparable) {
        recipient->clearComparison(comparison.reason);
        return;
    }
    recipient->setComparison(model::modelDisplayName(*donor->snapshot().model), comparison.deltas);
}

void MainWindow::updatePaneSizes() {
    constexpr int kEmptyWidth = 300;
    const bool recipient = m_recipient->tabs()->count() > 0;
    const bool donor = m_donor->tabs()->count() > 0;
    m_recipient->setMaximumWidth(!recipient && donor ? kEmptyWidth : QWIDGETSIZE_MAX);
    m_donor->setMaximumWidth(recipient && !donor ? kEmptyWidth : QWIDGETSIZE_MAX);
    const bool both = recipient && donor;
    if (both && !m_bothPanesUsed) {
        const double share = QSettings().value(kPaneShareKey, 0.5).toDouble();
        const int left = static_cast<int>(std::lround(share * m_panes->width()));
        m_panes->setSizes({left, m_panes->width() - left});
    }
    if (m_bothPanesUsed && !both) {
        rememberPaneShare();
    }
    m_bothPanesUsed = both;
}

// The recipient's share of the width, kept while both panes hold models.
void MainWindow::rememberPaneShare() {
    const QList<int> sizes = m_panes->sizes();
    if (sizes[0] + sizes[1] > 0) {
        QSettings().setValue(kPaneShareKey, double(sizes[0]) / (sizes[0] + sizes[1]));
    }
}

void MainWindow::jobEnded(quint64 generation, const QString& message) {
    m_jobs.remove(generation);
    if (m_jobs.isEmpty()) {
        for (QWidget* w : {static_cast<QWidget*>(m_jobLabel), static_cast<QWidget*>(m_progress),
                           static_cast<QWidget*>(m_cancel)}) {
            w->hide();
        }
    }
    if (!message.isEmpty()) {
        statusBar()->showMessage(message, 8000);
    }
}

void MainWindow::openDialog(Side side) {
    QSettings settings;
    const QString folder = settings.value(QStringLiteral("lastFolder")).toString();
    const QStringList paths = QFileDialog::getOpenFileNames(this, tr("Open GGUF models"), folder,
                                                            tr("GGUF models (*.gguf);;All files (*)"));
    if (!paths.isEmpty()) {
        settings.setValue(QStringLiteral("lastFolder"), QFileInfo(paths.front()).absolutePath());
        openFiles(paths, side);
    }
}

bool MainWindow::exportMeasurement(const QString& path, QString* error) {
    const widgets::ModelView* view = currentView();
    if (view == nullptr || view->measurement() == nullptr) {
        *error = tr("The current model is not measured yet.");
        return false;
    }
    return widgets::writeMeasurementReport(
        {view->snapshot().model, view->snapshot().anatomy, *view->measurement(), {}}, path, error);
}

void MainWindow::exportMeasurementDialog() {
    const widgets::ModelView* view = currentView();
    const QString name = view != nullptr ? model::modelDisplayName(*view->snapshot().model) : QString();
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export measurement"), name + QStringLiteral("-zmeasure.json"),
                                     widgets::measurementReportFilters());
    QString error;
    if (!path.isEmpty() && !exportMeasurement(path, &error)) {
        showError(tr("Cannot export the measurement"), error);
    }
}

void MainWindow::showUserGuide() {
    if (auto* open = findChild<QDialog*>(QStringLiteral("userGuide"))) {
        open->raise();
        open->activateWindow();
        return;
    }
    auto* dialog = new QDialog(this);
    dialog->setObjectName(QStringLiteral("userGuide"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(tr("Organ Workbench — user guide"));
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

widgets::ModelPane* MainWindow::focusedPane() const {
    return m_donor->isAncestorOf(QApplication::focusWidget()) ? m_donor : m_recipient;
}

void MainWindow::closeCurrent() {
    widgets::ModelPane* target = focusedPane();
    if (target->tabs()->count() > 0) {
        target->closeView(target->tabs()->currentIndex());
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
    rebuildRecentMenus();
}

void MainWindow::rebuildRecentMenus() {
    const QStringList recent = recentFiles();
    for (const auto& [menu, side] :
         {std::pair(m_recentMenu, Side::Recipient), std::pair(m_recentDonorMenu, Side::Donor)}) {
        menu->clear();
        for (const QString& path : recent) {
            menu->addAction(QFileInfo(path).fileName(), this,
                            [this, path, side = side] { openFiles({path}, side); })
                ->setToolTip(path);
        }
        menu->setEnabled(!recent.isEmpty());
    }
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
    auto title = [](const widgets::ModelPane* pane) {
        const QTabWidget* tabs = pane->tabs();
        return tabs->count() > 0 ? tabs->tabText(tabs->currentIndex()) : QString();
    };
    const QString recipient = title(m_recipient);
    const QString donor = title(m_donor);
    QString text = tr("Organ Workbench");
    if (!recipient.isEmpty()) {
        text = (donor.isEmpty() ? recipient : tr("%1 ← %2").arg(recipient, donor)) + tr(" — Organ Workbench");
    }
    setWindowTitle(text);
}

widgets::ModelView* MainWindow::findView(const QString& path) const {
    for (widgets::ModelView* view : m_recipient->views() + m_donor->views()) {
        if (QString::fromStdString(view->snapshot().model->path()) == path) {
            return view;
        }
    }
    return nullptr;
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (!widgets::droppedFiles(event->mimeData()).isEmpty()) {
        event->acceptProposedAction();
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
    event->acceptProposedAction();
    openFiles(widgets::droppedFiles(event->mimeData()));
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (!m_document->isEmpty() && m_document->isModified()) {
        const auto answer = QMessageBox::question(
            this, tr("Unsaved graft plan"), tr("The graft plan has unsaved changes. Save it?"),
            QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
        if (answer == QMessageBox::Cancel) {
            event->ignore();
            return;
        }
        if (answer == QMessageBox::Save) {
            savePlanDialog();
            if (m_document->isModified()) {
                event->ignore();
                return;
            }
        }
    }
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    if (m_bothPanesUsed) {
        rememberPaneShare();
    }
    QMainWindow::closeEvent(event);
}

} // namespace organ::app
