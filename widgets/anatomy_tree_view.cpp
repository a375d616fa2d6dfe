#include "anatomy_tree_view.h"

#include "anatomy_tree_model.h"
#include "tensor_drag.h"

#include <QDragMoveEvent>
#include <QToolTip>

namespace organ::widgets {

AnatomyTreeView::AnatomyTreeView(model::AnatomyTreeModel* source, QWidget* parent)
    : QTreeView(parent), m_source(source) {}

void AnatomyTreeView::dragMoveEvent(QDragMoveEvent* event) {
    QTreeView::dragMoveEvent(event); // asks the model's canDropMimeData
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
    QTreeView::dropEvent(event); // asks canDropMimeData once more, then drops if it fits
    if (!event->isAccepted() && !m_source->dropMessage().isEmpty() &&
        model::decodeTensorDrag(event->mimeData())) {
        emit dropRefused(m_source->dropMessage());
    }
}

} // namespace organ::widgets
