#pragma once

class QWidget;

namespace organ::app {

// Links the compiled-in resources (resources/workbench.qrc) of this static library: called by
// the window's constructor, so that every program that shows the window has them.
void initResources();

// Help → User guide (F1): resources/user-guide.md in a browser dialog, one at a time.
void showUserGuideDialog(QWidget* parent);
// Help → About: version and Qt version.
void showAboutDialog(QWidget* parent);

} // namespace organ::app
