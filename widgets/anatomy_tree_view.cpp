#include "anatomy_tree_view.h"

#include "anatomy_tree_model.h"

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
    QTreeView::dropEvent(event);
}

} // namespace organ::widgets
