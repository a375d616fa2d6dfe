// The window's surgery: the graft plan dock, the preview on the recipient's heatmap, plans on
// disk, the chimera's assembly on the engine thread and the guard rails around them.
#include "surgery_controller.h"

#include "open_models.h"

#include "assembly_controller.h"
#include "dock_height.h"
#include "graft_document.h"
#include "graft_plan_panel.h"
#include "job_tracker.h"
#include "merge_controller.h"
#include "model_view.h"
#include "plan_autosave.h"
#include "purify/purify_model.h"
#include "quantize_dialog.h"
#include "write_folder.h"

#include <QAction>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLocale>
#include <QMainWindow>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QStatusBar>
#include <QTabWidget>
#include <QUndoStack>
#include <algorithm>

namespace organ::app {

SurgeryController::SurgeryController(widgets::ModelPane* recipient, widgets::ModelPane* donor,
                                     WindowHost host)
    : QObject(host.window), m_window(host.window), m_recipient(recipient), m_donor(donor),
      m_host(std::move(host)) {
    m_document = new model::GraftDocument(m_host.models, this);
    m_planPanel = new widgets::GraftPlanPanel(m_document, m_window);
    m_planDock = new QDockWidget(tr("Graft plan"), m_window);
    m_planDock->setObjectName(QStringLiteral("graftPlanDock"));
    m_planDock->setWidget(m_planPanel);
    m_planDock->toggleViewAction()->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_G));
    m_window->addDockWidget(Qt::BottomDockWidgetArea, m_planDock);
    keepDockHeight(m_window, m_planDock);
    connect(m_planPanel, &widgets::GraftPlanPanel::openPlanRequested, this,
            &SurgeryController::openPlanDialog);
    connect(m_planPanel, &widgets::GraftPlanPanel::savePlanRequested, this,
            &SurgeryController::savePlanDialog);
    m_assembly = new AssemblyController(m_document, m_host, this);
    m_merge = new MergeController(m_document, m_recipient, m_donor, m_host, this);
    connect(m_merge, &MergeController::thetaArrived, this, &SurgeryController::updatePreview);
    connect(m_planPanel, &widgets::GraftPlanPanel::operationActivated, this, [this](int row) {
        const auto& operations = m_document->plan().operations;
        if (row >= 0 && std::size_t(row) < operations.size() &&
            operations[std::size_t(row)].kind == GraftOperation::Kind::Merge) {
            m_merge->changePlannedMerge();
        }
    });
    connect(m_planPanel, &widgets::GraftPlanPanel::assembleRequested, m_assembly,
            &AssemblyController::assembleDialog);
    connect(m_planPanel, &widgets::GraftPlanPanel::tensorsRequested, this, [this](const QStringList& names) {
        widgets::ModelView* view = findView(m_document->base());
        if (view == nullptr || names.isEmpty()) {
            return;
        }
        const GgufModel& model = *view->snapshot().model;
        if (const TensorInfo* t = model.findTensor(names.front().toStdString())) {
            view->showPage(widgets::ModelView::Page::Anatomy);
            view->selectTensor(int(t - model.tensors().data()));
        }
    });
    connect(m_document, &model::GraftDocument::changed, this, &SurgeryController::updatePreview);
    m_autosave = new PlanAutosave(m_document, this);
    // Each step says what it did; an undo or redo replaces what the edit said.
    connect(m_document->undoStack(), &QUndoStack::indexChanged, this, [this](int index) {
        const QUndoStack* stack = m_document->undoStack();
        QString message = m_document->takeEditMessage();
        if (message.isEmpty() && index < m_undoIndex && index < stack->count()) {
            message = tr("Undone: %1").arg(stack->text(index));
        } else if (message.isEmpty() && index > m_undoIndex) {
            message = tr("Redone: %1").arg(stack->text(index - 1));
        }
        m_undoIndex = index;
        m_window->statusBar()->showMessage(message, 8000);
    });
}

namespace {

// What a purified tensor's preview θ is cached under: its source, the type it is stored in, the
// method and parameters.
QString purifyKey(const QString& sourcePath, const std::string& sourceName, TensorType target,
                  const PurifyParams& params) {
    return sourcePath + QLatin1Char('\n') + QString::fromStdString(sourceName) + QLatin1Char('\n') +
           QString::fromStdString(std::string(tensorTypeName(target))) + QLatin1Char('\n') +
           QString::fromStdString(purifyMethodName(params.method)) + QLatin1Char(' ') +
           QString::fromStdString(purifyParamsText(params));
}

} // namespace

std::optional<std::optional<double>> SurgeryController::purifiedTheta(const QString& key) const {
    const auto it = m_purifiedTheta.find(key);
    return it == m_purifiedTheta.end() ? std::nullopt : std::optional<std::optional<double>>(*it);
}

void SurgeryController::purify(widgets::ModelView* recipient, const std::vector<int>& tensors,
                               const PurifyParams& params) {
    std::vector<std::string> names;
    for (const int t : tensors) {
        names.push_back(recipient->snapshot().model->tensors().at(std::size_t(t)).name);
    }
    m_document->purify(QString::fromStdString(recipient->snapshot().model->path()), std::move(names), params);
    if (!m_document->lastDropMessage().isEmpty()) {
        m_window->statusBar()->showMessage(m_document->lastDropMessage(), 8000);
    }
}

void SurgeryController::purifyDialog(const std::vector<int>& tensors) {
    auto* view = qobject_cast<widgets::ModelView*>(sender());
    if (view == nullptr || tensors.empty()) {
        return;
    }
    QDialog dialog(m_window);
    dialog.setObjectName(QStringLiteral("purifyDialog"));
    dialog.setWindowTitle(tr("Purify %n tensor(s)", nullptr, int(tensors.size())));
    auto* form = new QFormLayout(&dialog);
    auto* intro = new QLabel(tr("Adds a <i>purify</i> operation to the graft plan (purify-v1). The preview "
                                "shows the θ each tensor is expected to have; nothing is written "
                                "until the chimera is assembled."),
                             &dialog);
    intro->setWordWrap(true);
    form->addRow(intro);
    auto* method = new QComboBox(&dialog);
    method->setObjectName(QStringLiteral("purifyMethod"));
    method->addItem(tr("fft — keep the strongest frequencies of each row"), QStringLiteral("fft"));
    method->addItem(tr("haar — keep the significant wavelet details"), QStringLiteral("haar"));
    form->addRow(tr("Method"), method);
    const PurifyParams defaults;
    auto spin = [&](const char* name, double value, double min, double max, double step) {
        auto* box = new QDoubleSpinBox(&dialog);
        box->setObjectName(QString::fromUtf8(name));
        box->setDecimals(3);
        box->setRange(min, max);
        box->setSingleStep(step);
        box->setValue(value);
        return box;
    };
    auto* keep = spin("purifyKeep", defaults.keep, 0.001, 1.0, 0.01); // keep is in (0, 1]
    auto* threshold = spin("purifyThreshold", defaults.threshold, 0.0, 10.0, 0.1);
    auto* attenuation = spin("purifyAttenuation", defaults.attenuation, 0.0, 1.0, 0.05);
    form->addRow(tr("Keep (share of the power)"), keep);
    form->addRow(tr("Threshold (× σ)"), threshold);
    form->addRow(tr("Attenuation"), attenuation);
    auto update = [&] {
        const bool fft = method->currentIndex() == 0;
        keep->setEnabled(fft);
        threshold->setEnabled(!fft);
        attenuation->setEnabled(!fft);
    };
    connect(method, &QComboBox::currentIndexChanged, &dialog, update);
    update();
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Add to plan"));
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    form->addRow(buttons);
    if (dialog.exec() != QDialog::Accepted) {
        return;
    }
    PurifyParams params;
    params.method = method->currentIndex() == 0 ? PurifyParams::Method::Fft : PurifyParams::Method::Haar;
    params.keep = keep->value();
    params.threshold = threshold->value();
    params.attenuation = attenuation->value();
    purify(view, tensors, params);
}

void SurgeryController::quantizeRecipient() {
    // From a view's context menu, that view; from the Graft menu, the recipient shown.
    auto* view = qobject_cast<widgets::ModelView*>(sender());
    quantizeDialog(view != nullptr ? view : m_recipient->currentView());
}

void SurgeryController::quantizeDialog(widgets::ModelView* recipient) {
    if (recipient == nullptr) {
        m_window->statusBar()->showMessage(tr("Open a model as the recipient to quantize it"), 8000);
        return;
    }
    const QString path = QString::fromStdString(recipient->snapshot().model->path());
    if (const QString refusal = m_document->refusal(path); !refusal.isEmpty()) {
        m_host.showError(tr("Cannot quantize %1").arg(QFileInfo(path).fileName()), refusal);
        return;
    }
    const GraftOperation* planned = m_document->plan().quantizeOperation();
    widgets::QuantizeDialog dialog(path, planned ? planned->quantize : QuantizeRecipe{}, m_window);
    if (dialog.exec() != QDialog::Accepted) {
        return;
    }
    m_document->quantize(path, dialog.recipe());
    if (dialog.choice() == widgets::QuantizeDialog::Choice::QuantizeNow) {
        m_assembly->assembleDialog();
    }
}

void SurgeryController::populateMenus(QMenu* edit, QMenu* graft) {
    QAction* undo = m_document->undoStack()->createUndoAction(edit, tr("&Undo"));
    undo->setShortcut(QKeySequence::Undo);
    QAction* redo = m_document->undoStack()->createRedoAction(edit, tr("&Redo"));
    redo->setShortcuts({QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z), QKeySequence(Qt::CTRL | Qt::Key_Y)});
    edit->addAction(undo);
    edit->addAction(redo);
    graft->addAction(tr("&Open plan…"), this, &SurgeryController::openPlanDialog)
        ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P));
    QAction* save = graft->addAction(tr("&Save plan"), this, &SurgeryController::savePlanNow);
    save->setShortcut(QKeySequence::Save);
    save->setObjectName(QStringLiteral("savePlanAction"));
    graft->addAction(tr("Save plan &as…"), this, &SurgeryController::savePlanDialog)
        ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    graft->addAction(tr("&Assemble chimera…"), m_assembly, &AssemblyController::assembleDialog)
        ->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
    graft->addAction(tr("&Quantize recipient…"), this, &SurgeryController::quantizeRecipient)
        ->setObjectName(QStringLiteral("quantizeRecipientAction"));
    graft->addAction(tr("&Clear plan"), m_document, &model::GraftDocument::clear);
    graft->addSeparator();
    graft->addAction(m_planDock->toggleViewAction());
}

widgets::ModelView* SurgeryController::findView(const QString& path) const {
    for (widgets::ModelView* view : m_recipient->views() + m_donor->views()) {
        if (QString::fromStdString(view->snapshot().model->path()) == path) {
            return view;
        }
    }
    return nullptr;
}

bool SurgeryController::confirmUnsaved(const QString& question) {
    if (m_document->isEmpty() || !m_document->isModified()) {
        return true;
    }
    const auto answer = QMessageBox::question(m_window, tr("Unsaved graft plan"), question,
                                              QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel,
                                              QMessageBox::Save);
    if (answer == QMessageBox::Save) {
        savePlanNow();
        return !m_document->isModified();
    }
    return answer == QMessageBox::Discard;
}

bool SurgeryController::confirmQuit() {
    return confirmUnsaved(tr("The graft plan has unsaved changes. Save it?"));
}

bool SurgeryController::confirmReplace() {
    return confirmUnsaved(tr("The graft plan has unsaved changes. Save it before another plan replaces it?"));
}

void SurgeryController::updateRoles() {
    for (widgets::ModelPane* pane : {m_recipient, m_donor}) {
        for (widgets::ModelView* view : pane->views()) {
            view->setSurgery(m_document, pane == m_recipient);
            connect(view, &widgets::ModelView::purifyRequested, this, &SurgeryController::purifyDialog,
                    Qt::UniqueConnection);
            connect(view, &widgets::ModelView::quantizeRequested, this, &SurgeryController::quantizeRecipient,
                    Qt::UniqueConnection);
            connect(view, &widgets::ModelView::mergeRequested, m_merge, &MergeController::mergeFromSender,
                    Qt::UniqueConnection);
        }
    }
    updatePreview();
}

// The θ the plan's purified tensors are expected to have: each purified as the chimera will
// purify it (nothing written) on the engine's worker, the preview updated as each arrives. A
// cancelled preview leaves its tensors to be asked for again.
void SurgeryController::startPurifyPreview(std::vector<PurifyPreviewTensor> tensors,
                                           const PurifyParams& params) {
    QStringList keys;
    for (const PurifyPreviewTensor& t : tensors) {
        keys << t.key;
    }
    JobTracker::Job job;
    job.kind = "purify-preview";
    job.title = tr("Previewing the purification of %n tensor(s)", nullptr, int(tensors.size()));
    job.ended = [this, keys](const JobSnapshot&) {
        for (const QString& key : keys) {
            m_purifyPending.remove(key);
        }
    };
    m_host.jobs->start(
        std::move(job),
        [this, tensors = std::move(tensors), params](const ProgressFn& progress, const StopToken& stop,
                                                     const JobTracker::Post& post) {
            for (std::size_t k = 0; k < tensors.size() && !stop.stopRequested(); ++k) {
                const PurifyPreviewTensor& t = tensors[k];
                std::optional<double> theta; // none shown for a tensor that cannot be purified
                try {
                    if (const TensorInfo* info = t.model->findTensor(t.name)) {
                        theta = purifyTensor(*t.model, *info, t.target, params).report.thetaAfter;
                    }
                } catch (const std::exception&) {
                }
                post([this, key = t.key, theta] {
                    m_purifiedTheta.insert(key, theta);
                    m_purifyPending.remove(key);
                    updatePreview();
                });
                progress(Progress{k + 1, tensors.size(), "purifying"});
            }
            return stop.stopRequested() ? JobResult::cancelled() : JobResult::ok();
        },
        this);
}

void SurgeryController::updatePreview() {
    const QString base = m_document->base();
    for (widgets::ModelView* view : m_recipient->views()) {
        if (m_document->isEmpty() || QString::fromStdString(view->snapshot().model->path()) != base ||
            !m_document->unavailable().isEmpty()) {
            view->setPlanPreview({}, QString());
            continue;
        }
        const GraftPlan& plan = m_document->plan();
        // Measurements by file; a model not open or not measured yet has none.
        auto measurementOf = [this](const QString& path) -> const ModelMeasurement* {
            const auto open = m_host.models->find(path);
            return open ? open->results->measurement() : nullptr;
        };
        std::vector<widgets::ThetaHeatmap::PreviewCell> cells;
        std::vector<int> perDonor(plan.donors.size(), 0);
        for (const auto& r : m_document->replacements()) {
            widgets::ThetaHeatmap::PreviewCell cell;
            cell.tensor = r.recipientTensor;
            cell.donor = r.donorIndex;
            cell.donorName = QString::fromStdString(plan.donors[std::size_t(r.donorIndex)].first);
            if (const auto donor = m_document->model(r.donorPath)) {
                cell.source = model::displayText(donor->model->tensors()[std::size_t(r.donorTensor)].name);
            }
            if (const ModelMeasurement* m = measurementOf(r.donorPath)) {
                cell.theta = m->tensors[std::size_t(r.donorTensor)].theta;
            }
            ++perDonor[std::size_t(r.donorIndex)];
            cells.push_back(cell);
        }
        // Purified tensors: the θ purification is expected to give them, computed on the engine
        // thread once per tensor and parameters.
        int purified = 0;
        std::vector<PurifyPreviewTensor> preview;
        const auto& layoutPurify = m_document->report().layout.purify;
        for (const auto& p : m_document->purifications()) {
            if (!layoutPurify) {
                break;
            }
            const QString key = purifyKey(p.source.path, p.source.tensor->name, p.target, *layoutPurify);
            auto cell =
                std::find_if(cells.begin(), cells.end(), [&](const widgets::ThetaHeatmap::PreviewCell& c) {
                    return c.tensor == p.recipientTensor;
                });
            if (cell == cells.end()) {
                widgets::ThetaHeatmap::PreviewCell fresh;
                fresh.tensor = p.recipientTensor;
                fresh.source = model::displayText(p.source.tensor->name);
                cells.push_back(fresh);
                cell = cells.end() - 1;
            }
            cell->purified = true;
            cell->donorName = tr("purify (%1, %2)")
                                  .arg(QString::fromStdString(purifyMethodName(layoutPurify->method)),
                                       QString::fromStdString(purifyParamsText(*layoutPurify)));
            cell->theta.reset();
            if (const auto theta = purifiedTheta(key)) {
                cell->theta = *theta;
            } else if (!m_purifyPending.contains(key)) {
                m_purifyPending.insert(key);
                preview.push_back({p.source.snapshot->model, p.source.tensor->name, p.target, key});
            }
            ++purified;
        }
        if (!preview.empty()) {
            startPurifyPreview(std::move(preview), *layoutPurify);
        }
        // Merged tensors: the θ the merge gives them (purified and stored as planned), computed on
        // the engine thread; the tooltip gives the recipient's θ beside it and the Δ.
        const QString mergeText = m_document->mergeText();
        int merged = 0;
        double deltaSum = 0;
        int deltas = 0;
        for (const auto& m : m_document->mergedTensors()) {
            auto cell =
                std::find_if(cells.begin(), cells.end(), [&](const widgets::ThetaHeatmap::PreviewCell& c) {
                    return c.tensor == m.recipientTensor;
                });
            if (cell == cells.end()) {
                cells.push_back({});
                cell = cells.end() - 1;
                cell->tensor = m.recipientTensor;
                cell->source = model::displayText(m.name);
            }
            cell->merged = true;
            cell->purified = false;
            cell->donorName = mergeText;
            cell->theta.reset();
            if (const auto theta = m_merge->mergedTheta(m.name)) {
                cell->theta = *theta;
                const ModelMeasurement* own = view->measurement();
                if (*theta && own != nullptr && own->tensors[std::size_t(m.recipientTensor)].theta) {
                    deltaSum += **theta - *own->tensors[std::size_t(m.recipientTensor)].theta;
                    ++deltas;
                }
            }
            ++merged;
        }
        const std::optional<double> after = m_document->chimeraThetaMean(
            measurementOf,
            [&](const ChimeraTensor& t,
                const model::GraftDocument::Source& from) -> std::optional<std::optional<double>> {
                if (t.merge) {
                    return m_merge->mergedTheta(t.name);
                }
                if (!layoutPurify || from.tensor == nullptr) {
                    return std::nullopt;
                }
                return purifiedTheta(purifyKey(from.path, from.tensor->name, t.targetType, *layoutPurify));
            });
        // Dashed outlines are replaced cells': said only where there are some.
        const bool replaces = std::any_of(perDonor.begin(), perDonor.end(), [](int n) { return n > 0; });
        QString legend = replaces ? tr("<b>Plan preview</b> (dashed outlines, the donor's θ):")
                                  : tr("<b>Plan preview</b>:");
        for (std::size_t k = 0; k < plan.donors.size(); ++k) {
            if (perDonor[k] == 0 && !mergeText.isEmpty()) {
                continue; // a donor the plan only merges from: the merge's entry names it
            }
            legend += QStringLiteral(" &nbsp;<span style=\"color:%1\">■</span> %2 (%3)")
                          .arg(model::donorColor(int(k)).name(),
                               QString::fromStdString(plan.donors[k].first).toHtmlEscaped())
                          .arg(perDonor[k]);
        }
        if (purified > 0) {
            legend += tr(" &nbsp;<span style=\"color:%1\">■</span> purified (%2, dotted: the θ expected%3)")
                          .arg(model::purifyColor().name())
                          .arg(purified)
                          .arg(m_purifyPending.isEmpty() ? QString() : tr(", computing…"));
        }
        if (merged > 0) {
            legend += tr(" &nbsp;<span style=\"color:%1\">■</span> merged: %2 (%3, solid: the θ merged%4)")
                          .arg(model::mergeColor().name(), mergeText.toHtmlEscaped())
                          .arg(merged)
                          .arg(m_merge->pending() ? tr(", computing…")
                               : deltas > 0       ? tr(", Δθ mean %1°").arg(deltaSum / deltas, 0, 'f', 2)
                                                  : QString());
        }
        if (view->measurement() != nullptr && after) {
            legend += tr(" &nbsp;·&nbsp; θ mean %1° → %2°")
                          .arg(view->measurement()->model.thetaMean, 0, 'f', 2)
                          .arg(*after, 0, 'f', 2);
        } else {
            legend += tr(" &nbsp;·&nbsp; θ mean after: once every model is measured");
        }
        view->setPlanPreview(cells, legend);
    }
}

bool SurgeryController::confirmClose(widgets::ModelView* view) {
    const QString path = QString::fromStdString(view->snapshot().model->path());
    // Another tab of the same file keeps the plan's model open.
    const QList<widgets::ModelView*> views = m_recipient->views() + m_donor->views();
    const auto tabs = std::count_if(views.begin(), views.end(), [&](const widgets::ModelView* v) {
        return QString::fromStdString(v->snapshot().model->path()) == path;
    });
    if (!m_document->uses(path) || tabs > 1) {
        return true;
    }
    const auto answer =
        QMessageBox::question(m_window, tr("Close a model the plan uses"),
                              tr("The graft plan uses %1. Close it and remove it from the plan "
                                 "(its operations, and its part of a merge of several models)? "
                                 "(Edit → Undo brings them back once the model is open again.)")
                                  .arg(QFileInfo(path).fileName()),
                              QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer != QMessageBox::Yes) {
        return false;
    }
    m_document->removeOperationsUsing(path);
    return true;
}

bool SurgeryController::openPlan(const QString& path, QString* error) {
    return loadPlan(path, error, [this, path] { m_document->load(path); });
}

bool SurgeryController::recoverPlan(const QString& path, QString* error) {
    return loadPlan(path, error, [this, path] { m_document->recover(path); });
}

// Opens the models the plan names that are not open yet, then lets `load` take the plan.
bool SurgeryController::loadPlan(const QString& path, QString* error, const std::function<void()>& load) {
    try {
        const GraftPlan plan = loadGraftPlan(path.toStdString());
        if (findView(QString::fromStdString(plan.base)) == nullptr &&
            m_host.openFiles({QString::fromStdString(plan.base)}, Side::Recipient) == 0) {
            *error = tr("%1: cannot open its recipient %2")
                         .arg(QFileInfo(path).fileName(), QString::fromStdString(plan.base));
            return false;
        }
        for (const auto& [id, donor] : plan.donors) {
            if (findView(QString::fromStdString(donor)) == nullptr &&
                m_host.openFiles({QString::fromStdString(donor)}, Side::Donor) == 0) {
                *error = tr("%1: cannot open its donor %2")
                             .arg(QFileInfo(path).fileName(), QString::fromStdString(donor));
                return false;
            }
        }
        load();
        // The plan's recipient becomes the current one, so that its preview shows.
        if (widgets::ModelView* base = findView(m_document->base());
            base != nullptr && m_recipient->isAncestorOf(base)) {
            m_recipient->tabs()->setCurrentWidget(base);
        }
        m_planDock->show();
        return true;
    } catch (const std::exception& e) {
        *error = model::displayText(e.what());
        return false;
    }
}

void SurgeryController::offerRecovery() {
    for (const PlanAutosave::Orphan& orphan : PlanAutosave::orphans()) {
        QString summary;
        try {
            const GraftPlan plan = loadGraftPlan(orphan.path.toStdString());
            summary =
                tr("%1 into %2")
                    .arg(model::countOf(qint64(plan.operations.size()), tr("operation"), tr("operations")),
                         QFileInfo(QString::fromStdString(plan.base)).fileName());
        } catch (const std::exception& e) {
            summary = model::displayText(e.what());
        }
        QMessageBox box(
            QMessageBox::Question, tr("Recover a graft plan"),
            tr("Organ Workbench ended without saving a graft plan (%1), autosaved %2. Recover it?")
                .arg(summary, QLocale().toString(orphan.written, QLocale::ShortFormat)),
            QMessageBox::NoButton, m_window);
        box.setObjectName(QStringLiteral("recoverPlan"));
        QPushButton* recover = box.addButton(tr("Recover"), QMessageBox::AcceptRole);
        QPushButton* discard = box.addButton(tr("Discard"), QMessageBox::DestructiveRole);
        box.addButton(tr("Later"), QMessageBox::RejectRole);
        box.setDefaultButton(recover);
        box.exec();
        if (box.clickedButton() == discard) {
            PlanAutosave::discard(orphan);
        } else if (box.clickedButton() == recover) {
            QString error;
            if (recoverPlan(orphan.path, &error)) {
                PlanAutosave::discard(orphan); // this session's autosave holds it now
                m_window->statusBar()->showMessage(
                    tr("Recovered the graft plan (%1); it is not saved yet").arg(summary), 10000);
            } else {
                m_host.showError(tr("Cannot recover the plan"), error);
            }
        }
    }
}

bool SurgeryController::savePlan(const QString& path, QString* error) {
    try {
        m_document->save(path);
        return true;
    } catch (const std::exception& e) {
        *error = model::displayText(e.what());
        return false;
    }
}

void SurgeryController::openPlanDialog() {
    if (!confirmReplace()) {
        return;
    }
    // Where this plan is, else where the last file was written.
    const QString folder = m_document->fileName().isEmpty()
                               ? widgets::proposedWriteFolder(QDir::homePath())
                               : QFileInfo(m_document->fileName()).absolutePath();
    const QString path = QFileDialog::getOpenFileName(m_window, tr("Open graft plan"), folder,
                                                      tr("Graft plans (*.json);;All files (*)"));
    QString error;
    if (!path.isEmpty() && !openPlan(path, &error)) {
        m_host.showError(tr("Cannot open the plan"), error);
    }
}

void SurgeryController::savePlanNow() {
    if (m_document->fileName().isEmpty()) {
        savePlanDialog();
        return;
    }
    QString error;
    if (!savePlan(m_document->fileName(), &error)) {
        m_host.showError(tr("Cannot save the plan"), error);
        return;
    }
    m_window->statusBar()->showMessage(
        tr("Saved the plan to %1").arg(QDir::toNativeSeparators(m_document->fileName())), 10000);
}

void SurgeryController::savePlanDialog() {
    if (m_document->isEmpty()) {
        return;
    }
    const QFileInfo base(m_document->base());
    const QString suggested = m_document->fileName().isEmpty()
                                  ? widgets::proposedWriteFolder(base.absolutePath()) + u'/' +
                                        base.completeBaseName() + QStringLiteral("-plan.json")
                                  : m_document->fileName();
    const QString path =
        QFileDialog::getSaveFileName(m_window, tr("Save graft plan"), suggested, tr("Graft plans (*.json)"));
    QString error;
    if (path.isEmpty()) {
        return;
    }
    if (!savePlan(path, &error)) {
        m_host.showError(tr("Cannot save the plan"), error);
        return;
    }
    widgets::rememberWriteFolder(path);
    m_window->statusBar()->showMessage(tr("Saved the plan as %1").arg(QDir::toNativeSeparators(path)), 10000);
}

} // namespace organ::app
