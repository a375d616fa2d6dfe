#include "wrapped_label.h"

#include <QLabel>

namespace organ::widgets {

QLabel* wrappedLabel(QWidget* parent, const QString& objectName, Qt::TextFormat format, bool selectable) {
    auto* label = new QLabel(parent);
    label->setObjectName(objectName);
    label->setTextFormat(format);
    label->setWordWrap(true);
    if (selectable) {
        label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    }
    return label;
}

} // namespace organ::widgets
