#include "dock_height.h"

#include <QDockWidget>
#include <QEvent>
#include <QMainWindow>
#include <QResizeEvent>
#include <QTimer>

namespace organ::app {
namespace {

class DockHeightKeeper : public QObject {
public:
    DockHeightKeeper(QMainWindow* window, QDockWidget* dock) : QObject(dock), m_window(window), m_dock(dock) {
        dock->installEventFilter(this);
        window->installEventFilter(this);
    }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() != QEvent::Resize) {
            return false;
        }
        if (watched == m_dock) {
            // The same window size as at the dock's last resize: the dock alone was resized.
            if (m_wanted == 0 || m_window->size() == m_windowSize) {
                m_wanted = m_dock->height();
            }
            m_windowSize = m_window->size();
        } else if (const auto* resized = static_cast<QResizeEvent*>(event);
                   watched == m_window && resized->size().height() > resized->oldSize().height()) {
            // Grown (made shorter, the window squeezes its docks as it will): once its layout has
            // given the new height to the models.
            QTimer::singleShot(0, this, &DockHeightKeeper::restore);
        }
        return false;
    }

private:
    void restore() {
        if (m_dock->isHidden() || m_dock->isFloating() || m_wanted == 0 || m_dock->height() >= m_wanted) {
            return;
        }
        const int wanted = m_wanted;
        m_window->resizeDocks({m_dock}, {wanted}, Qt::Vertical);
        m_windowSize = m_window->size();
        m_wanted = wanted; // what fitted is not what the user chose
    }

    QMainWindow* m_window;
    QDockWidget* m_dock;
    QSize m_windowSize;
    int m_wanted = 0;
};

} // namespace

void keepDockHeight(QMainWindow* window, QDockWidget* dock) {
    new DockHeightKeeper(window, dock);
}

} // namespace organ::app
