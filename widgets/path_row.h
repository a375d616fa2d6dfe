#pragma once

#include <QString>
#include <functional>

class QHBoxLayout;
class QLineEdit;
class QPushButton;

namespace organ::widgets {

// A path's line edit with a button beside it that asks for one: `ask` gets the current text and
// returns the path chosen, or an empty string to keep the text. The row is for a form.
QHBoxLayout* pathRow(QLineEdit* path, QPushButton* button, std::function<QString(const QString&)> ask);

} // namespace organ::widgets
