#pragma once

#include <QStyledItemDelegate>

namespace organ::widgets {

// Paints θ cells on the heatmap's colour scale (model::ThetaRole); other cells as usual.
class ThetaDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter* painter, const QStyleOptionViewItem& option,
               const QModelIndex& index) const override;
};

} // namespace organ::widgets
