#pragma once

#include <QStringList>
#include <QWidget>
#include <functional>

class QLabel;
class QStackedWidget;
class QTabWidget;

class QMimeData;

namespace organ::widgets {

// The local files among dropped URLs (what the window and the panes open on a drop).
QStringList droppedFiles(const QMimeData* data);

class ModelView;

// One side of the workbench: the recipient (left) or the donors (right). Holds its models
// as tabs, shows what to do while empty, and opens files dropped on it.
class ModelPane : public QWidget {
    Q_OBJECT
public:
    enum class Side { Recipient, Donor };

    ModelPane(Side side, QWidget* parent = nullptr);

    Side side() const { return m_side; }
    QLabel* header() const { return m_header; }
    QTabWidget* tabs() const { return m_tabs; }
    ModelView* currentView() const;
    QList<ModelView*> views() const; // in tab order
    void addView(ModelView* view, const QString& title, const QString& toolTip);
    // Moves every view of this pane to `other` (and keeps their titles).
    void moveViewsTo(ModelPane& other);
    // Closes a tab unless the close guard (when set) says no.
    void closeView(int index);
    void setCloseGuard(std::function<bool(ModelView*)> guard) { m_closeGuard = std::move(guard); }

signals:
    void filesDropped(const QStringList& paths);
    void viewsChanged();

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void updatePage();

    Side m_side;
    QLabel* m_header = nullptr;
    QStackedWidget* m_stack = nullptr;
    QLabel* m_empty = nullptr;
    QTabWidget* m_tabs = nullptr;
    std::function<bool(ModelView*)> m_closeGuard;
};

} // namespace organ::widgets
