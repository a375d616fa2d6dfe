#pragma once

#include <Qt>

class QLabel;
class QString;
class QWidget;

namespace organ::widgets {

// A label for what the window writes in sentences: wrapped at the width it is given (it never
// widens its pane), in `format`, and selectable with the mouse when `selectable`.
QLabel* wrappedLabel(QWidget* parent, const QString& objectName, Qt::TextFormat format = Qt::AutoText,
                     bool selectable = false);

} // namespace organ::widgets
