#pragma once

class QIcon;
class QString;
class QWidget;

namespace organ::app {

// A text compiled in from resources/ (":/guide/user-guide.md", ":/texts/about.html"); empty
// when there is none.
QString resourceText(const QString& path);
// The application's icon (resources/icons), for every window and the task bar.
QIcon applicationIcon();
// The About box's text (resources/texts/about.html) with the version and Qt's filled in.
QString aboutText();

// Help → User guide (F1): resources/user-guide.md in a browser dialog, one at a time.
void showUserGuideDialog(QWidget* parent);
// Help → About: version and Qt version.
void showAboutDialog(QWidget* parent);

} // namespace organ::app
