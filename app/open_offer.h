#pragma once

#include "model_pane.h"

#include <QMessageBox>
#include <functional>

namespace organ::app {

// A model just written, offered to open: a message box (object name `name`, deleted on close)
// with "Open as recipient" and "Open as donor" (object names `buttons` + "Recipient" / "Donor")
// that call `open` with the side, and Close. The caller adds what else it says, then open()s it.
QMessageBox* offerToOpen(QWidget* parent, QMessageBox::Icon icon, const QString& title, const QString& text,
                         const QString& name, const QString& buttons,
                         std::function<void(widgets::ModelPane::Side)> open);

} // namespace organ::app
