#include "vertical_scroll.h"

#include <QScrollArea>
#include <QScrollBar>
#include <QStyle>

namespace organ::widgets {
namespace {

// As wide as its content at the least (it never scrolls sideways), as short as 60 pixels.
class VerticalScroll : public QScrollArea {
public:
    using QScrollArea::QScrollArea;
    QSize minimumSizeHint() const override {
        const QWidget* content = widget();
        const int bar = style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, this);
        // As a layout sizes a widget: its own minimum where it has one, else its hint.
        int contentWidth = 0;
        if (content != nullptr) {
            contentWidth =
                content->minimumWidth() > 0 ? content->minimumWidth() : content->minimumSizeHint().width();
        }
        return {contentWidth + bar + 2 * frameWidth(), 60};
    }
};

} // namespace

QScrollArea* verticalScroll(QWidget* content, QWidget* parent, const QString& objectName) {
    auto* scroll = new VerticalScroll(parent);
    scroll->setObjectName(objectName);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    // Ignored: its content's height is not asked of the layout (nor of a height-for-width one).
    scroll->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Ignored);
    scroll->setWidget(content);
    return scroll;
}

} // namespace organ::widgets
