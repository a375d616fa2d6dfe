#include "main_window.h"

#include "anatomy/anatomy_tree.h"
#include "diff_controller.h"
#include "display_names.h"
#include "fleet_controller.h"
#include "graft_document.h"
#include "help_dialogs.h"
#include "job_status.h"
#include "job_tracker.h"
#include "measure_controller.h"
#include "model_view.h"
#include "open_models.h"
#include "organs/organ_directory.h"
#include "organs_controller.h"
#include "quant_lab_controller.h"
#include "recent_files.h"
#include "report_export.h"
#include "spectral_controller.h"
#include "surgeon_controller.h"
#include "surgery_controller.h"
#include "theta_comparison.h"
#include "vitals_controller.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <cmath>

namespace organ::app {
namespace {

const QString kPaneShareKey = QStringLiteral("window/recipientShare");

} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowIcon(applicationIcon());
    setAcceptDrops(true);
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
    }
    m_jobs = new JobTracker(this);
    m_models = new model::OpenModels(this);
    const WindowHost host{this,
                          m_jobs,
                          m_models,
                          [this](const QStringList& paths, Side side) { return openFiles(paths, side); },
                          [this](const QString& title, const QString& message) { showError(title, message); },
                          [this] { return focusedPane()->currentView(); }};
    m_measure = new MeasureController(m_jobs, m_models, this);
    m_spectral = new SpectralController(m_jobs, this);
    m_diff = new DiffController(m_jobs, m_models, m_measure, m_spectral, this);
    connect(m_measure, &MeasureController::measured, this, [this](const QString&, const QString& message) {
        statusBar()->showMessage(message, 8000);
        updateComparison();
        m_surgery->updatePreview();
    });
    connect(m_measure, &MeasureController::failed, this,
            [this](const QString& message) { showError(tr("Measurement failed"), message); });
    m_surgery = new SurgeryController(m_recipient, m_donor, host);
    for (widgets::ModelPane* pane : {m_recipient, m_donor}) {
        connect(pane, &widgets::ModelPane::viewsChanged, m_surgery, &SurgeryController::updateRoles);
        pane->setCloseGuard([this](widgets::ModelView* view) { return m_surgery->confirmClose(view); });
    }
    m_vitals = new VitalsController(m_recipient, m_donor, m_surgery, host);
    m_quantLab = new QuantLabController(m_recipient, m_donor, m_surgery, host);
    m_organs = new OrgansController(host);
    m_fleet = new FleetController(host);
    m_surgeon = new SurgeonController(m_surgery, m_recipient, m_donor, host);
    buildMenus();
    connectJobStatus();
    statusBar()->showMessage(tr("Ready"));
    QSettings settings;
    if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) {
        resize(1200, 800);
    }
    if (!restoreState(settings.value(QStringLiteral("window/state")).toByteArray())) {
        // The models get the height; the plan's dock starts at a few rows of operations.
        resizeDocks({m_surgery->planDock()}, {200}, Qt::Vertical);
    }
    updatePaneSizes();
    updateTitle();
}

// The panes' signals would otherwise reach this window while QWidget deletes its children.
MainWindow::~MainWindow() {
    m_recipient->disconnect(this);
    m_donor->disconnect(this);
    m_models->blockSignals(true); // nor a model closing with the views QWidget deletes
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open recipient…"), this, [this] { openDialog(Side::Recipient); });
    open->setShortcut(QKeySequence::Open);
    QAction* openDonor = file->addAction(tr("Open &donor…"), this, [this] { openDialog(Side::Donor); });
    openDonor->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    QMenu* openRecent = file->addMenu(tr("Open &Recent"));
    openRecent->setObjectName(QStringLiteral("openRecent"));
    m_recent = new RecentFiles(
        openRecent, file->addMenu(tr("Open Recent as Do&nor")),
        [this](const QString& path, Side side) { openFiles({path}, side); }, this);
    file->addSeparator();
    m_organs->populateMenu(file);
    m_fleet->populateMenu(file);
    file->addSeparator();
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
    QMenu* graft = menuBar()->addMenu(tr("&Graft"));
    m_surgery->populateMenus(edit, graft);
    m_surgeon->populateMenu(graft);
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
                                              {tr("&Metadata"), Page::Metadata},
                                              {tr("&Vital signs"), Page::Vitals},
                                              {tr("&Quantization"), Page::Quantization},
                                              {tr("&Tokenizer"), Page::Tokenizer}};
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

int MainWindow::openFiles(const QStringList& paths, Side side, Recent recent) {
    int opened = 0;
    for (const QString& path : paths) {
        try {
            const model::OpenModels::Entry entry = m_models->take(QFileInfo(path).absoluteFilePath());
            widgets::ModelPane* target = pane(side);
            auto* view = new widgets::ModelView(entry.snapshot, entry.results, target);
            // Tabs carry the file's name: two specimens share their general.name.
            target->addView(view, QFileInfo(path).completeBaseName(), path);
            m_measure->attach(view);
            m_spectral->attach(view);
            m_diff->attach(view);
            m_vitals->attach(view);
            m_quantLab->attach(view);
            connect(view, &widgets::ModelView::dropRefused, this, [this](const QString& reason) {
                statusBar()->showMessage(tr("Not added to the plan: %1").arg(model::afterColon(reason)),
                                         10000);
            });
            if (recent == Recent::Remember) {
                m_recent->remember(QFileInfo(path).absoluteFilePath());
            }
            statusBar()->showMessage(tr("Opened %1").arg(QFileInfo(path).fileName()), 5000);
            ++opened;
        } catch (const std::exception& error) {
            showError(tr("Cannot open model"), model::displayText(error.what()));
        }
    }
    updateTitle();
    return opened;
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
    if (!m_surgery->document()->isEmpty()) {
        message += tr(". The graft plan still grafts into %1")
                       .arg(QFileInfo(m_surgery->document()->base()).fileName());
    }
    statusBar()->showMessage(message, 10000);
}

void MainWindow::connectJobStatus() {
    m_jobStatus = new widgets::JobStatus(this);
    statusBar()->addPermanentWidget(m_jobStatus);
    connect(m_jobStatus, &widgets::JobStatus::cancelRequested, m_jobs,
            [this](quint64 id) { m_jobs->cancel(id); });
    connect(m_jobs, &JobTracker::started, m_jobStatus,
            [this](quint64 id, const QString& kind, const QString& title) {
                if (kind != QLatin1String("portrait")) {
                    m_jobStatus->add(id, title);
                }
            });
    connect(m_jobs, &JobTracker::progressed, m_jobStatus, &widgets::JobStatus::setProgress);
    connect(m_jobs, &JobTracker::ended, m_jobStatus, [this](quint64 id) { m_jobStatus->remove(id); });
}

void MainWindow::updateComparison() {
    widgets::ModelView* recipient = m_recipient->currentView();
    widgets::ModelView* donor = m_donor->currentView();
    m_diff->setPair(recipient, donor);
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

void MainWindow::openDialog(Side side) {
    QSettings settings;
    const QString folder = settings.value(QStringLiteral("lastFolder")).toString();
    // An organ directory opens with File → Open organ directory…, by drop or on the command line.
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
    showUserGuideDialog(this);
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
    showAboutDialog(this);
}

QStringList MainWindow::recentFiles() const {
    return m_recent->files();
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
    if (!m_surgery->confirmQuit()) {
        event->ignore();
        return;
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
