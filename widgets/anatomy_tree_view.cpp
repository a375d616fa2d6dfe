#include "anatomy_tree_view.h"

#include "anatomy_tree_model.h"
#include "display_names.h"
#include "drag_badge.h"
#include "tensor_drag.h"

#include <QDrag>
#include <QDragMoveEvent>
#include <QMimeData>
#include <QToolTip>

namespace organ::widgets {

AnatomyTreeView::AnatomyTreeView(model::AnatomyTreeModel* source, QWidget* parent)
    : QTreeView(parent), m_source(source) {}

void AnatomyTreeView::startDrag(Qt::DropActions supportedActions) {
    QModelIndexList rows;
    for (const QModelIndex& index : selectedIndexes()) {
        if (index.column() == 0 && (model()->flags(index) & Qt::ItemIsDragEnabled)) {
            rows << index;
        }
    }
    QMimeData* data = rows.isEmpty() ? nullptr : model()->mimeData(rows);
    if (data == nullptr) {
        return;
    }
    const auto decoded = model::decodeTensorDrag(data);
    const QString count =
        decoded ? model::countOf(qint64(decoded->tensors.size()), tr("tensor"), tr("tensors")) : QString();
    // "layer 2 · 3 tensors"; a tensor's own name alone; several rows as a count.
    QString text = count;
    if (const QString name = rows.size() == 1 ? rows.front().data(Qt::DisplayRole).toString() : QString();
        !name.isEmpty()) {
        text = decoded && decoded->tensors.size() == 1 ? name : name + QStringLiteral(" · ") + count;
    }
    auto* drag = new QDrag(this);
    drag->setMimeData(data);
    drag->setPixmap(dragBadge(text, palette()));
    drag->setHotSpot(QPoint(-16, -8));            // beside the pointer, below and to its right
    drag->exec(supportedActions, Qt::CopyAction); // tensors are copied into a plan, never moved
}

void AnatomyTreeView::dragMoveEvent(QDragMoveEvent* event) {
    m_source->setMergeDrop(model::mergesOnDrop(event->modifiers()));
    QTreeView::dragMoveEvent(event); // asks the model's canDropMimeData
    // A refusal is accepted with no action: the cursor says "no", and a release here still
    // reaches dropEvent, which says why in the status bar.
    if (!event->isAccepted() && model::decodeTensorDrag(event->mimeData())) {
        event->setDropAction(Qt::IgnoreAction);
        event->accept();
    }
    const QString& message = m_source->dropMessage();
    if (!message.isEmpty()) {
        QToolTip::showText(viewport()->mapToGlobal(event->position().toPoint()),
                           model::dragTooltip(message, event->dropAction() == Qt::CopyAction,
                                              model::mergesOnDrop(event->modifiers()),
                                              m_source->mergeWouldFit()),
                           viewport());
    }
}

void AnatomyTreeView::dragLeaveEvent(QDragLeaveEvent* event) {
    QToolTip::hideText();
    QTreeView::dragLeaveEvent(event);
}

void AnatomyTreeView::dropEvent(QDropEvent* event) {
    QToolTip::hideText();
    m_source->setMergeDrop(model::mergesOnDrop(event->modifiers()));
    QTreeView::dropEvent(event); // asks canDropMimeData once more, then drops if it fits
    if (!event->isAccepted() && !m_source->dropMessage().isEmpty() &&
        model::decodeTensorDrag(event->mimeData())) {
        emit dropRefused(m_source->dropMessage());
    }
}

} // namespace organ::widgets
