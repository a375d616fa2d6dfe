// The heatmap's mouse: selecting cells (click, Ctrl+click), dragging them with a badge that says
// what they carry, taking drops with a mark of where they land, tooltips. The plotting is in
// theta_heatmap.cpp.
#include "theta_heatmap.h"

#include "chart_style.h"
#include "display_names.h"
#include "drag_badge.h"

#include <QApplication>
#include <QDrag>
#include <QDragMoveEvent>
#include <QDropEvent>
#include <QMimeData>
#include <QToolTip>
#include <cmath>
#include <qcustomplot.h>

namespace organ::widgets {

std::pair<int, int> ThetaHeatmap::cellAtPixel(const QPoint& pixel) const {
    return {static_cast<int>(std::lround(m_plot->xAxis->pixelToCoord(pixel.x()))),
            static_cast<int>(std::lround(m_plot->yAxis->pixelToCoord(pixel.y())))};
}

std::optional<model::TensorDrag> ThetaHeatmap::dragOf(std::vector<int> tensors,
                                                      model::TensorDrag::Pick pick) const {
    std::erase(tensors, -1);
    if (tensors.empty()) {
        return std::nullopt;
    }
    std::sort(tensors.begin(), tensors.end());
    model::TensorDrag drag;
    drag.pick = pick;
    drag.model = QString::fromStdString(m_snapshot->model->path());
    drag.tensors = std::move(tensors);
    return drag;
}

// A cell of the selection drags the whole selection; any other cell itself.
std::optional<model::TensorDrag> ThetaHeatmap::dragForCell(int column, int row) const {
    const int tensor = tensorAt(column, row);
    if (tensor >= 0 && m_selected.contains(tensor)) {
        return dragOf({m_selected.begin(), m_selected.end()}, model::TensorDrag::Pick::Tensors);
    }
    return dragOf({tensor}, model::TensorDrag::Pick::Tensors);
}

void ThetaHeatmap::toggleSelected(int tensor) {
    if (tensor < 0 || m_theta == nullptr) {
        return;
    }
    if (!m_selected.erase(tensor)) {
        m_selected.insert(tensor);
    }
    drawSelection();
}

void ThetaHeatmap::drawSelection() {
    for (QCPItemRect* mark : m_selectionMarks) {
        m_plot->removeItem(mark);
    }
    m_selectionMarks.clear();
    for (int t : m_selected) {
        const auto [column, row] = cellOf(t);
        auto* mark = new QCPItemRect(m_plot);
        mark->setPen(QPen(palette().color(QPalette::Highlight), 3));
        mark->setBrush(Qt::NoBrush);
        mark->topLeft->setCoords(column - 0.5, row - 0.5);
        mark->bottomRight->setCoords(column + 0.5, row + 0.5);
        setScreenOnly(mark);
        m_selectionMarks.push_back(mark);
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString ThetaHeatmap::dragText(const model::TensorDrag& drag) const {
    return drag.tensors.size() == 1
               ? model::displayText(m_snapshot->model->tensors()[std::size_t(drag.tensors.front())].name)
               : model::countOf(qint64(drag.tensors.size()), tr("tensor"), tr("tensors"));
}

std::optional<model::TensorDrag> ThetaHeatmap::dragForRow(int row) const {
    std::vector<int> tensors;
    for (int c = 0; c < m_columns; ++c) {
        tensors.push_back(tensorAt(c, row));
    }
    return dragOf(std::move(tensors), model::TensorDrag::Pick::Role);
}

std::optional<model::TensorDrag> ThetaHeatmap::dragForColumn(int column) const {
    std::vector<int> tensors;
    for (int r = 0; r < rowCount(); ++r) {
        tensors.push_back(tensorAt(column, r));
    }
    return dragOf(std::move(tensors), model::TensorDrag::Pick::Column);
}

// Left of the cells: the role's row; below them: the layer's column; on a cell: its tensor.
std::optional<model::TensorDrag> ThetaHeatmap::dragAtPixel(const QPoint& pixel) const {
    if (m_theta == nullptr) {
        return std::nullopt;
    }
    const QRect cells = m_plot->axisRect()->rect();
    const auto [column, row] = cellAtPixel(pixel);
    if (pixel.x() < cells.left() && pixel.y() >= cells.top() && pixel.y() <= cells.bottom()) {
        return dragForRow(row);
    }
    if (pixel.y() > cells.bottom() && pixel.x() >= cells.left() && pixel.x() <= cells.right()) {
        return dragForColumn(column);
    }
    return cells.contains(pixel) ? dragForCell(column, row) : std::nullopt;
}

DropTarget ThetaHeatmap::dropTargetAtPixel(const QPoint& pixel) const {
    DropTarget target;
    if (m_theta == nullptr) {
        return target;
    }
    const QRect cells = m_plot->axisRect()->rect();
    const auto [column, row] = cellAtPixel(pixel);
    const std::optional<std::uint32_t> layer = layerOfColumn(column);
    const bool inColumns = pixel.x() >= cells.left() && pixel.x() <= cells.right() && layer.has_value();
    const int tensor = cells.contains(pixel) ? tensorAt(column, row) : -1;
    if (tensor >= 0) {
        target.kind = DropTarget::Kind::Tensor;
        target.tensor = tensor;
        target.layer = m_snapshot->anatomy.tensors[static_cast<std::size_t>(tensor)].layer;
    } else if (inColumns && (cells.contains(pixel) || pixel.y() > cells.bottom())) {
        target.kind = DropTarget::Kind::Layer;
        target.layer = layer;
    }
    return target;
}

void ThetaHeatmap::setDropHandler(model::TensorDropHandler* handler) {
    m_dropHandler = handler;
    m_plot->setAcceptDrops(handler != nullptr);
}

bool ThetaHeatmap::canDropAt(const QMimeData* data, const QPoint& pixel, QString* message, bool merge) {
    const auto drag = model::decodeTensorDrag(data);
    if (m_dropHandler == nullptr || !drag) {
        return false;
    }
    const QString recipient = QString::fromStdString(m_snapshot->model->path());
    const DropTarget target = dropTargetAtPixel(pixel);
    return merge ? m_dropHandler->canMergeTensors(*drag, recipient, target, message)
                 : m_dropHandler->canDropTensors(*drag, recipient, target, message);
}

// The handler checks the drop again as it plans it: a refused drop adds nothing.
bool ThetaHeatmap::dropAt(const QMimeData* data, const QPoint& pixel, bool merge) {
    const auto drag = model::decodeTensorDrag(data);
    if (m_dropHandler == nullptr || !drag) {
        return false;
    }
    const QString recipient = QString::fromStdString(m_snapshot->model->path());
    const DropTarget target = dropTargetAtPixel(pixel);
    return merge ? m_dropHandler->mergeTensors(*drag, recipient, target)
                 : m_dropHandler->dropTensors(*drag, recipient, target);
}

// Green around what a drop would replace, red where it would be refused.
void ThetaHeatmap::showDropMark(const QPoint& pixel, bool fits) {
    const DropTarget target = dropTargetAtPixel(pixel);
    m_dropMark->setPen(QPen(fits ? QColor(0x2e, 0xa0, 0x43) : QColor(0xd0, 0x1c, 0x1c), 3));
    double left = -0.5;
    double right = m_columns - 0.5;
    double top = -0.5;
    double bottom = rowCount() - 0.5;
    if (target.kind == DropTarget::Kind::Tensor) {
        const auto [column, row] = cellOf(target.tensor);
        left = column - 0.5;
        right = column + 0.5;
        top = row - 0.5;
        bottom = row + 0.5;
    } else if (target.kind == DropTarget::Kind::Layer) {
        left = columnOfLayer(*target.layer) - 0.5;
        right = columnOfLayer(*target.layer) + 0.5;
    }
    m_dropMark->topLeft->setCoords(left, top);
    m_dropMark->bottomRight->setCoords(right, bottom);
    m_dropMark->setVisible(true);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

bool ThetaHeatmap::eventFilter(QObject* watched, QEvent* event) {
    if (watched != m_plot) {
        return QWidget::eventFilter(watched, event);
    }
    switch (event->type()) {
    case QEvent::MouseButtonPress: {
        auto* mouse = static_cast<QMouseEvent*>(event);
        m_pressAt = mouse->button() == Qt::LeftButton ? mouse->position().toPoint() : QPoint(-1, -1);
        break;
    }
    case QEvent::MouseMove: {
        auto* mouse = static_cast<QMouseEvent*>(event);
        if (m_dragSource && (mouse->buttons() & Qt::LeftButton) && m_pressAt.x() >= 0 &&
            (mouse->position().toPoint() - m_pressAt).manhattanLength() >=
                QApplication::startDragDistance()) {
            const auto drag = dragAtPixel(m_pressAt);
            m_pressAt = {-1, -1};
            m_narrowOnRelease = -1; // a drag, not a click: the selection stays whole
            if (drag) {
                auto* qdrag = new QDrag(m_plot);
                qdrag->setMimeData(model::encodeTensorDrag(*drag));
                qdrag->setPixmap(dragBadge(dragText(*drag), palette()));
                qdrag->setHotSpot(QPoint(-16, -8)); // beside the pointer: the cell under it stays seen
                qdrag->exec(Qt::CopyAction);
                return true;
            }
        }
        break;
    }
    case QEvent::DragEnter:
    case QEvent::DragMove: {
        auto* drag = static_cast<QDragMoveEvent*>(event);
        QString message;
        const bool merge = model::mergesOnDrop(drag->modifiers());
        const bool fits = canDropAt(drag->mimeData(), drag->position().toPoint(), &message, merge);
        if (model::decodeTensorDrag(drag->mimeData())) {
            showDropMark(drag->position().toPoint(), fits);
            QString merged;
            const bool mergeFits =
                fits && !merge && canDropAt(drag->mimeData(), drag->position().toPoint(), &merged, true);
            QToolTip::showText(m_plot->mapToGlobal(drag->position().toPoint()),
                               model::dragTooltip(message, fits, merge, mergeFits), m_plot);
        }
        if (fits) {
            drag->setDropAction(Qt::CopyAction);
            drag->accept();
        } else {
            // Accepted with no action: the cursor says "no", the reason keeps showing, and a
            // release here still reaches this widget, which refuses it and says why (an ignored
            // move would end the drag with no word to the user).
            drag->setDropAction(Qt::IgnoreAction);
            drag->accept();
        }
        return true;
    }
    case QEvent::DragLeave:
        m_dropMark->setVisible(false);
        setScreenOnly(m_dropMark);
        QToolTip::hideText();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return true;
    case QEvent::Drop: {
        auto* drop = static_cast<QDropEvent*>(event);
        m_dropMark->setVisible(false);
        setScreenOnly(m_dropMark);
        QToolTip::hideText();
        const bool merge = model::mergesOnDrop(drop->modifiers());
        if (dropAt(drop->mimeData(), drop->position().toPoint(), merge)) {
            drop->setDropAction(Qt::CopyAction);
            drop->accept();
        } else {
            drop->ignore();
            QString reason;
            canDropAt(drop->mimeData(), drop->position().toPoint(), &reason, merge);
            if (!reason.isEmpty()) {
                emit dropRefused(reason);
            }
        }
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return true;
    }
    default:
        break;
    }
    return QWidget::eventFilter(watched, event);
}

} // namespace organ::widgets
