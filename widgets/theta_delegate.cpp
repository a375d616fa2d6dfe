#include "theta_delegate.h"

#include "model_roles.h"
#include "theta_scale.h"

#include <QPainter>

namespace organ::widgets {

void ThetaDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option,
                          const QModelIndex& index) const {
    const QVariant theta = index.data(model::ThetaRole);
    if (!theta.isValid()) {
        QStyledItemDelegate::paint(painter, option, index);
        return;
    }
    QStyleOptionViewItem cell = option;
    initStyleOption(&cell, index);
    const QColor background = thetaColor(theta.toDouble());
    painter->fillRect(option.rect.adjusted(1, 1, -1, -1), background);
    cell.backgroundBrush = Qt::NoBrush;
    cell.palette.setColor(QPalette::Text, textColorOn(background));
    cell.palette.setColor(QPalette::HighlightedText, textColorOn(background));
    cell.state &= ~QStyle::State_Selected;
    QStyledItemDelegate::paint(painter, cell, QModelIndex());
    painter->save();
    painter->setPen(textColorOn(background));
    painter->drawText(option.rect.adjusted(2, 0, -4, 0), Qt::AlignRight | Qt::AlignVCenter, cell.text);
    painter->restore();
}

} // namespace organ::widgets
