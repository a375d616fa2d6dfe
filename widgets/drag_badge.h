#pragma once

#include <QPixmap>
#include <QString>

class QPalette;

namespace organ::widgets {

// The pointer's picture while tensors are dragged (from the heatmap or the tree): what they are,
// in a small label beside the pointer, so that the target under it stays in sight.
QPixmap dragBadge(const QString& text, const QPalette& palette);

} // namespace organ::widgets
