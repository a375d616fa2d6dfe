#include "drag_badge.h"

#include <QApplication>
#include <QFontMetrics>
#include <QPainter>
#include <QPalette>

namespace organ::widgets {

QPixmap dragBadge(const QString& text, const QPalette& palette) {
    QFont font;
    font.setBold(true);
    const QFontMetrics metrics(font);
    const QSize size(metrics.horizontalAdvance(text) + 16, metrics.height() + 8);
    const qreal ratio = qApp->devicePixelRatio();
    QPixmap pixmap(size * ratio);
    pixmap.setDevicePixelRatio(ratio);
    pixmap.fill(Qt::transparent);
    QPainter painter(&pixmap);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setPen(QPen(palette.color(QPalette::Highlight), 1.5));
    painter.setBrush(palette.color(QPalette::Base));
    painter.drawRoundedRect(QRectF(QPointF(0.75, 0.75), QSizeF(size) - QSizeF(1.5, 1.5)), 5, 5);
    painter.setFont(font);
    painter.setPen(palette.color(QPalette::Text));
    painter.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter, text);
    return pixmap;
}

} // namespace organ::widgets
