#include "anatomy_tree_view.h"

#include "anatomy_tree_model.h"
#include "tensor_drag.h"

#include <QDragMoveEvent>
#include <QToolTip>

namespace organ::widgets {

AnatomyTreeView::AnatomyTreeView(model::AnatomyTreeModel* source, QWidget* parent)
    : QTreeView(parent), m_source(source) {}

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
        QToolTip::showText(viewport()->mapToGlobal(event->position().toPoint()), message, viewport());
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
