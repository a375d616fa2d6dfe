#include "window_host.h"

#include <QMainWindow>
#include <QStatusBar>

namespace organ::app {

void WindowHost::say(const QString& message, int milliseconds) const {
    window->statusBar()->showMessage(message, milliseconds);
}

} // namespace organ::app
