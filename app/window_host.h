#pragma once

#include "model_pane.h"
#include "window_classes.h"

#include <QMainWindow>
#include <QString>
#include <QStringList>
#include <functional>

namespace organ::app {

// What a controller asks of the window it serves: one struct for all of them.
struct WindowHost {
    using Side = widgets::ModelPane::Side;
    QMainWindow* window = nullptr;
    JobTracker* jobs = nullptr;
    model::OpenModels* models = nullptr; // every open model, its snapshot and measurement once
    std::function<int(const QStringList& paths, Side side)> openFiles; // returns how many opened
    std::function<void(const QString& title, const QString& message)> showError;
    std::function<widgets::ModelView*()> focusedView; // the focused pane's current model
    // A message in the window's status bar for `milliseconds`.
    void say(const QString& message, int milliseconds = 10000) const;
};

} // namespace organ::app
