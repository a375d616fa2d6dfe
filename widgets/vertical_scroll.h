#pragma once

class QScrollArea;
class QString;
class QWidget;

namespace organ::widgets {

// A scroll area that shows `content` at its own width and scrolls it up and down. It asks for
// no height of its own (a layout gives it what is left), so that what may be long — a table of
// comparisons, a column of charts — never makes a page, and so the window, taller.
QScrollArea* verticalScroll(QWidget* content, QWidget* parent, const QString& objectName);

} // namespace organ::widgets
