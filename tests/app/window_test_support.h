#pragma once

// Helpers the window tests share: the test environment (settings, cache), screenshots for a
// person to look at, answering modal dialogs the way a user would, and finding tree nodes.
#include "anatomy_tree_model.h"
#include "model_view.h"

#include <QAbstractButton>
#include <QApplication>
#include <QContextMenuEvent>
#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPixmap>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <functional>
#include <memory>
#include <qcustomplot.h>

namespace organ::testing {

// Settings in a test-only organisation, the measurement cache in `dir`, QStandardPaths in
// its test mode (autosaved plans land in ~/.qttest, never in the user's data).
inline void initWindowTests(const QTemporaryDir& dir) {
    QStandardPaths::setTestModeEnabled(true);
    qputenv("ORGAN_CACHE_DIR", dir.filePath(QStringLiteral("cache")).toLocal8Bit());
    QCoreApplication::setOrganizationName(QStringLiteral("OrganWorkbenchTests"));
    QSettings().clear();
}

// The visible message box, if any.
inline QMessageBox* visibleMessageBox() {
    for (QWidget* w : QApplication::topLevelWidgets()) {
        if (auto* box = qobject_cast<QMessageBox*>(w); box != nullptr && box->isVisible()) {
            return box;
        }
    }
    return nullptr;
}

// Lays out what was just shown and draws every visible chart in it now, so that pixel
// lookups and screenshots see the final picture without waiting for queued replots.
// Twice: a chart may ask for more height once it has laid out its legend at its width.
inline void settle(QWidget* widget) {
    for (int pass = 0; pass < 4; ++pass) {
        QCoreApplication::sendPostedEvents(); // layout, palette and style changes already posted
        for (QCustomPlot* plot : widget->findChildren<QCustomPlot*>()) {
            if (plot->isVisible()) {
                plot->replot(QCustomPlot::rpImmediateRefresh);
            }
        }
    }
}

// What the user sees once the event loop has run: laid out, and every chart replotted only as
// it replots itself (on show, on resize, when queued) — a chart that needs an explicit replot to
// look right shows here as the user would see it. No waiting: the events are there already.
inline void settleAsShown() {
    for (int pass = 0; pass < 6; ++pass) {
        QCoreApplication::processEvents(QEventLoop::AllEvents);
        QCoreApplication::sendPostedEvents();
    }
}

// Into the build folder; the HiDPI run's screenshots are prefixed "hidpi-".
inline void saveScreenshot(QWidget* window, const QString& name) {
    const QString folder = QStringLiteral(ORGAN_SCREENSHOT_DIR);
    QDir().mkpath(folder);
    const QPixmap shot = window->grab();
    QCOMPARE(shot.devicePixelRatio(), window->devicePixelRatioF());
    const QString prefix = window->devicePixelRatioF() > 1 ? QStringLiteral("hidpi-") : QString();
    QVERIFY(shot.save(folder + u'/' + prefix + name));
}

// Answers modal dialogs and popup menus as they open, in order: each step gets the widget
// that is active (the modal dialog, else the popup) and returns true once it has handled it.
// Steps run from the event loop that the dialog's exec() spins, as a user's clicks would. A
// step must not block (a timer does not fire again inside its own callback): what opens the
// next dialog is posted (see chooseMenuAction).
class ModalSteps {
public:
    using Step = std::function<bool(QWidget*)>;
    ModalSteps() {
        m_timer.setInterval(20);
        QObject::connect(&m_timer, &QTimer::timeout, [this] { poll(); });
    }
    ModalSteps& then(Step step) {
        m_steps.push_back(std::move(step));
        m_timer.start();
        return *this;
    }
    bool done() const { return m_next == m_steps.size(); }

private:
    void poll() {
        if (done()) {
            m_timer.stop();
            return;
        }
        QWidget* active = QApplication::activeModalWidget();
        if (active == nullptr) {
            active = QApplication::activePopupWidget();
        }
        if (active != nullptr && active != m_lastHandled && m_steps[m_next](active)) {
            m_lastHandled = active;
            ++m_next;
        }
    }
    QTimer m_timer;
    std::vector<Step> m_steps;
    std::size_t m_next = 0;
    QWidget* m_lastHandled = nullptr;
};

// A ModalSteps step: picks the popup menu's action whose text starts with `text` and
// presses Return on it, posted so that what the action opens is answered by the next step.
inline bool chooseMenuAction(QWidget* active, const QString& text) {
    auto* menu = qobject_cast<QMenu*>(active);
    if (menu == nullptr) {
        return false;
    }
    for (QAction* action : menu->actions()) {
        if (action->text().startsWith(text)) {
            menu->setActiveAction(action);
        }
    }
    QMetaObject::invokeMethod(
        menu, [menu] { QTest::keyClick(menu, Qt::Key_Return); }, Qt::QueuedConnection);
    return true;
}

// Right-click on the chart → "Save as PNG, SVG or PDF…" → the file dialog → the size dialog:
// the path a user takes, each step answered from the dialog's own event loop.
inline void saveChartThroughMenu(QCustomPlot* plot, const QString& path, QSize size) {
    ModalSteps steps;
    steps
        .then([](QWidget* active) {
            return chooseMenuAction(active, QStringLiteral("Save as PNG, SVG or PDF"));
        })
        .then([path](QWidget* active) {
            auto* dialog = qobject_cast<QFileDialog*>(active);
            if (dialog == nullptr) {
                return false;
            }
            // As a user does: go to the folder, type the name.
            dialog->setDirectory(QFileInfo(path).absolutePath());
            dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"))
                ->setText(QFileInfo(path).fileName());
            QMetaObject::invokeMethod(dialog, "accept");
            return true;
        })
        .then([size](QWidget* active) {
            if (active->objectName() != QStringLiteral("chartSizeDialog")) {
                return false;
            }
            active->findChild<QSpinBox*>(QStringLiteral("chartWidth"))->setValue(size.width());
            active->findChild<QSpinBox*>(QStringLiteral("chartHeight"))->setValue(size.height());
            qobject_cast<QDialog*>(active)->accept();
            return true;
        });
    const QPoint at = plot->rect().center();
    QContextMenuEvent event(QContextMenuEvent::Mouse, at, plot->mapToGlobal(at));
    QApplication::sendEvent(plot, &event);
    QTRY_VERIFY_WITH_TIMEOUT(steps.done(), 10000);
}

// Answers the next modal question box with `button` (from the event loop it opens).
inline void answerNextQuestion(QMessageBox::StandardButton button, QString* text = nullptr) {
    QTimer::singleShot(0, [button, text] {
        if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
            if (text != nullptr) {
                *text = box->text();
            }
            box->button(button)->click();
        }
    });
}

// A layer node under a system node of a view's tree (source model indices).
inline QModelIndex layerNode(widgets::ModelView* view, const QString& system, const QString& layer) {
    model::AnatomyTreeModel* tree = view->anatomyModel();
    for (int s = 0; s < tree->rowCount(); ++s) {
        const QModelIndex systemIndex = tree->index(s, 0);
        if (systemIndex.data().toString() != system) {
            continue;
        }
        for (int l = 0; l < tree->rowCount(systemIndex); ++l) {
            if (tree->index(l, 0, systemIndex).data().toString() == layer) {
                return tree->index(l, 0, systemIndex);
            }
        }
    }
    return {};
}

inline QModelIndex systemNode(widgets::ModelView* view, const QString& system) {
    model::AnatomyTreeModel* tree = view->anatomyModel();
    for (int s = 0; s < tree->rowCount(); ++s) {
        if (tree->index(s, 0).data().toString() == system) {
            return tree->index(s, 0);
        }
    }
    return {};
}

inline int tensorOf(const widgets::ModelView* view, const char* name) {
    const auto& model = *view->snapshot().model;
    return int(model.findTensor(name) - model.tensors().data());
}

} // namespace organ::testing
