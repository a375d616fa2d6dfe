#include "graft_plan_panel.h"
#include "display_names.h"
#include "wrapped_label.h"

#include "graft_document.h"
#include "graft_plan_model.h"
#include "support/text_format.h"
#include "vertical_scroll.h"

#include <QAction>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QUndoStack>
#include <QVBoxLayout>

namespace organ::widgets {
namespace {

QToolButton* button(QWidget* parent, const QString& text, const QString& tip) {
    auto* b = new QToolButton(parent);
    b->setText(text);
    b->setToolTip(tip);
    b->setAutoRaise(true);
    return b;
}

} // namespace

GraftPlanPanel::GraftPlanPanel(model::GraftDocument* document, QWidget* parent)
    : QWidget(parent), m_document(document) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* bar = new QHBoxLayout;
    // Undo and Redo keep their labels (and so their size, and the buttons' places); what
    // they would undo or redo is in their tooltips.
    QUndoStack* stack = document->undoStack();
    auto* undo = button(this, tr("Undo"), QString());
    auto* redo = button(this, tr("Redo"), QString());
    connect(undo, &QToolButton::clicked, stack, &QUndoStack::undo);
    connect(redo, &QToolButton::clicked, stack, &QUndoStack::redo);
    auto updateUndo = [undo, redo, stack] {
        undo->setEnabled(stack->canUndo());
        redo->setEnabled(stack->canRedo());
        undo->setToolTip(stack->canUndo() ? tr("Undo %1 (Ctrl+Z)").arg(stack->undoText())
                                          : tr("Nothing to undo"));
        redo->setToolTip(stack->canRedo() ? tr("Redo %1 (Ctrl+Shift+Z)").arg(stack->redoText())
                                          : tr("Nothing to redo"));
    };
    connect(stack, &QUndoStack::indexChanged, this, updateUndo);
    connect(stack, &QUndoStack::cleanChanged, this, updateUndo);
    updateUndo();
    m_up = button(this, tr("Up"), tr("Move the operation earlier"));
    m_down = button(this, tr("Down"), tr("Move the operation later"));
    m_remove = button(this, tr("Remove"), tr("Remove the operation (Delete)"));
    m_clear = button(this, tr("Clear"), tr("Remove every operation"));
    auto* open =
        button(this, tr("Open plan…"), tr("Open a graft plan (JSON, as organ assemble --plan runs)"));
    m_save = button(this, tr("Save plan…"), tr("Save the plan as JSON for organ assemble --plan"));
    m_check =
        button(this, tr("Check chimera"),
               tr("Run the planned chimera without writing it: perplexity, divergence from the recipient and "
                  "donors, a sample of its text. The arrow beside it chooses the text it is scored on"));
    m_checkMenu = new QMenu(m_check);
    m_check->setMenu(m_checkMenu);
    m_check->setPopupMode(QToolButton::MenuButtonPopup);
    m_assemble = button(this, tr("Assemble chimera…"), tr("Write the chimera on the engine thread"));
    for (QToolButton* b : {undo, redo, m_up, m_down, m_remove, m_clear, open, m_save, m_check, m_assemble}) {
        bar->addWidget(b);
        b->setObjectName(QStringLiteral("plan-") + b->text().remove(u'…').remove(u' ').toLower());
    }
    bar->addStretch(1);
    m_summary = wrappedLabel(this, QStringLiteral("planSummary"), Qt::RichText);
    layout->addLayout(bar);
    layout->addWidget(m_summary);

    auto* split = new QSplitter(Qt::Horizontal, this);
    m_model = new model::GraftPlanModel(document, this);
    m_operations = new QTableView(split);
    m_operations->setModel(m_model);
    m_operations->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_operations->setSelectionMode(QAbstractItemView::SingleSelection);
    m_operations->verticalHeader()->hide();
    m_operations->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_operations->horizontalHeader()->setSectionResizeMode(model::GraftPlanModel::Operation,
                                                           QHeaderView::Stretch);
    m_operations->setWordWrap(false);
    // Beside the operations: the chimera's check (scrolling when long) over the findings, the
    // line between them to drag. The operations keep the dock's height whatever the check says.
    auto* side = m_side = new QSplitter(Qt::Vertical, split);
    side->setObjectName(QStringLiteral("planSide"));
    side->setChildrenCollapsible(false);
    m_vitals = wrappedLabel(side, QStringLiteral("chimeraVitals"), Qt::RichText, true);
    m_vitals->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    m_vitalsArea = verticalScroll(m_vitals, side, QStringLiteral("chimeraVitalsArea"));
    m_vitalsArea->hide();
    m_findings = new QListWidget(side);
    m_findings->setObjectName(QStringLiteral("planFindings"));
    m_findings->setWordWrap(true);
    m_findings->setMinimumHeight(m_findings->fontMetrics().lineSpacing() * 2 + 2 * m_findings->frameWidth());
    side->addWidget(m_vitalsArea);
    side->addWidget(m_findings);
    side->setStretchFactor(0, 3);
    side->setStretchFactor(1, 1);
    split->addWidget(m_operations);
    split->addWidget(side);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);

    auto* del = new QAction(this);
    del->setShortcut(QKeySequence::Delete);
    del->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    m_operations->addAction(del);
    connect(del, &QAction::triggered, m_remove, &QToolButton::click);
    connect(m_up, &QToolButton::clicked, this, [this] {
        const int row = currentRow();
        m_document->moveOperation(row, row - 1);
        m_operations->selectRow(row - 1);
    });
    connect(m_down, &QToolButton::clicked, this, [this] {
        const int row = currentRow();
        m_document->moveOperation(row, row + 1);
        m_operations->selectRow(row + 1);
    });
    connect(m_remove, &QToolButton::clicked, this, [this] { m_document->removeOperation(currentRow()); });
    connect(m_clear, &QToolButton::clicked, m_document, &model::GraftDocument::clear);
    connect(open, &QToolButton::clicked, this, &GraftPlanPanel::openPlanRequested);
    connect(m_save, &QToolButton::clicked, this, &GraftPlanPanel::savePlanRequested);
    connect(m_assemble, &QToolButton::clicked, this, &GraftPlanPanel::assembleRequested);
    connect(m_check, &QToolButton::clicked, this, &GraftPlanPanel::checkRequested);
    connect(m_operations, &QTableView::doubleClicked, this,
            [this](const QModelIndex& index) { emit operationActivated(index.row()); });
    connect(m_findings, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
        if (item != nullptr) {
            emit tensorsRequested(item->data(Qt::UserRole).toStringList());
        }
    });
    connect(m_document, &model::GraftDocument::changed, this, &GraftPlanPanel::refresh);
    // The undo index moves after an edit has changed the plan: a check of the old plan goes then.
    connect(m_document->undoStack(), &QUndoStack::indexChanged, this, &GraftPlanPanel::refresh);
    connect(m_operations->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            &GraftPlanPanel::refresh);
    refresh();
}

int GraftPlanPanel::currentRow() const {
    const QModelIndex current = m_operations->currentIndex();
    return current.isValid() ? current.row() : -1;
}

void GraftPlanPanel::refresh() {
    const int rows = m_model->rowCount();
    const int row = currentRow();
    m_up->setEnabled(row > 0);
    m_down->setEnabled(row >= 0 && row + 1 < rows);
    m_remove->setEnabled(row >= 0);
    m_clear->setEnabled(rows > 0);
    m_save->setEnabled(rows > 0);
    const auto& report = m_document->report();
    m_assemble->setEnabled(rows > 0 && m_document->unavailable().isEmpty() && !report.hasErrors());
    m_check->setEnabled(m_assemble->isEnabled() || m_checking); // while checking: its Cancel
    if (m_shownVitalsFor != m_document->chimeraRevision()) {
        m_vitalsArea->hide(); // the plan changed since: its vital signs are not this plan's
    }

    m_findings->clear();
    for (const Finding& f : report.findings) {
        const QString where = f.operation >= 0 ? tr("#%1 ").arg(f.operation + 1) : QString();
        auto* item =
            new QListWidgetItem(QString::fromStdString(findingLine(f, where.toStdString())), m_findings);
        QStringList names;
        for (const auto& name : f.tensors) {
            names << QString::fromStdString(name); // to find the tensor, not to show
        }
        item->setData(Qt::UserRole, names);
        if (f.severity == Finding::Severity::Error) {
            item->setForeground(QColor(0xc6, 0x28, 0x28));
        } else if (f.severity == Finding::Severity::Warning) {
            item->setForeground(QColor(0xb2, 0x6b, 0x00));
        }
        item->setToolTip(names.isEmpty() ? QString() : names.join(u'\n'));
    }

    if (rows > 0 && report.findings.empty() && m_document->unavailable().isEmpty()) {
        m_findings->addItem(tr("No errors or warnings: the plan fits."));
    }
    QString text;
    if (rows == 0) {
        text = tr("No graft planned. Drag tensors, layers or systems from a donor's tree or heatmap onto the "
                  "recipient (with Shift held to merge them instead); right-click the recipient's layers to "
                  "duplicate, remove or repeat them.");
    } else {
        const QString file = m_document->fileName().isEmpty() ? tr("unsaved plan")
                                                              : QFileInfo(m_document->fileName()).fileName();
        text = tr("<b>%1</b>%2 into <b>%3</b>")
                   .arg(file.toHtmlEscaped(), m_document->isModified() ? tr(" (modified)") : QString(),
                        QFileInfo(m_document->base()).fileName().toHtmlEscaped());
        if (!m_document->unavailable().isEmpty()) {
            text += QStringLiteral(" — ") + m_document->unavailable().toHtmlEscaped();
        } else {
            using model::countOf;
            text += QStringLiteral(" — ") +
                    countOf(qint64(report.layout.tensorsFromDonors), tr("tensor"), tr("tensors")) +
                    tr(" from donors (%1) · ")
                        .arg(QString::fromStdString(humanBytes(report.layout.bytesFromDonors))) +
                    (report.layout.tensorsMerged > 0
                         ? countOf(qint64(report.layout.tensorsMerged), tr("tensor"), tr("tensors")) +
                               tr(" merged · ")
                         : QString()) +
                    countOf(report.layout.blocks, tr("layer"), tr("layers")) + QStringLiteral(" · ") +
                    countOf(qint64(report.count(Finding::Severity::Error)), tr("error"), tr("errors")) +
                    QStringLiteral(", ") +
                    countOf(qint64(report.count(Finding::Severity::Warning)), tr("warning"), tr("warnings"));
        }
    }
    m_summary->setText(text);
}

void GraftPlanPanel::showVitals() {
    if (!m_vitalsArea->isHidden()) {
        return; // as the user left the line between it and the findings
    }
    m_vitalsArea->show();
    const int height = m_side->height();
    m_side->setSizes({height * 3 / 4, height - height * 3 / 4});
}

void GraftPlanPanel::setChecking(const QString& text) {
    m_checking = !text.isEmpty();
    m_check->setText(m_checking ? tr("Cancel check") : tr("Check chimera"));
    m_check->setEnabled(m_checking || m_assemble->isEnabled());
    if (m_checking) {
        m_vitals->setText(text);
        showVitals();
    }
}

void GraftPlanPanel::setChimeraVitals(const QString& html, quint64 revision) {
    m_checking = false;
    m_check->setText(tr("Check chimera"));
    m_shownVitalsFor = revision;
    m_vitals->setText(html);
    showVitals();
    refresh();
}

} // namespace organ::widgets
